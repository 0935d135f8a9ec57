"""The corpus contract as pydantic models, one module per concept:

- :mod:`~citewell.models.values`: the grammars of ids, tenants, names, tokens, locales and
  questions (as functions, and as ``Annotated`` field types), times in UTC and text digests;
- :mod:`~citewell.models.identity`: who is asking;
- :mod:`~citewell.models.documents`: the document record, upload intents and their fields;
- :mod:`~citewell.models.parsed`: what a parser extracted (sections, blocks);
- :mod:`~citewell.models.chunks`: chunks and section ids;
- :mod:`~citewell.models.search`: hits and search results;
- :mod:`~citewell.models.evidence`: evidence handed to a generator, and where its parts sit;
- :mod:`~citewell.models.answers`: drafts, answers, citations and answer records;
- :mod:`~citewell.models.conversations`: conversations, turns and feedback;
- :mod:`~citewell.models.removals`: removals of stored text awaiting compaction.

Nothing is re-exported here: a name is imported from the module that defines it, so there is
one way to import each, and an import says which concept a module depends on.
"""

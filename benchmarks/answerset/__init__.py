"""A labelled answer set for measuring ``ask``: a fictional two-tenant knowledge base and
questions about it.

- ``build.build(root)`` writes the corpus (Markdown, plain text, CSV, HTML, DOCX, XLSX and
  PDF; 20 documents for two fictional organisations, Kestrel Vale Water and Orrisfield
  Software) and returns its manifest. Stage 1 files are ingested first; stage 2 holds the
  revised version of ``staff/plans-and-limits.md`` (tenant ``orrisfield``), which replaces
  the first version under the same document id.
- ``questions.jsonl`` holds the questions, one JSON object a line: ``id``, ``split``
  (``tune`` or ``held_out``), ``category``, ``question``, ``tenant``, ``roles``,
  ``expected_documents``, ``must_contain``, ``must_not_contain``, ``refuse``.
  ``must_contain`` strings appear verbatim (case-insensitive, whitespace-normalised) in an
  expected document; ``must_not_contain`` holds what a correct answer must not say (the old
  value of the revision, the other tenant's figure, a secret the caller may not read, the
  tempting near value of a near miss). Refusals (``forbidden``, ``out_of_corpus``,
  ``near_miss``) have ``refuse: true`` and empty ``must_contain``; ``forbidden`` questions
  name the document the caller cannot read in ``expected_documents``, the others name none.
- ``conditions`` questions ask for a figure the corpus gives per condition (per depot, contract
  type, office or country) and carry ``clarify``: false, the answer gives each condition's
  figure (``must_contain`` holds them all) or, when the question names one, that one's; true,
  there are more conditions than an answer lists and the right reply asks which one is meant
  (``must_contain`` holds condition names). Follow-ups name the condition afterwards.

HELD OUT: questions with ``"split": "held_out"`` are for reporting only. Never look at
their answers while tuning, never fit or choose anything on them; tune on ``"tune"``.

Use it as ``from benchmarks.answerset import build as answerset`` then
``answerset.build(root)`` and ``answerset.questions("tune")``.
"""

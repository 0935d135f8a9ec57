"""The SearchIndex adapters (:class:`citewell.ports.SearchIndex`), side by side: the embedded
index (:mod:`citewell.index.sqlite`: records and the vector lane in SQLite, with its lexical
lane in tantivy, :mod:`~citewell.index.lexical`, and its vector rows, clusters and codes,
:mod:`~citewell.index.vectors`, :mod:`~citewell.index.clusters`, :mod:`~citewell.index.codes`)
and Amazon OpenSearch (:mod:`citewell.index.opensearch`). Nothing here imports another
deployment's engine: each adapter's module loads only its own."""

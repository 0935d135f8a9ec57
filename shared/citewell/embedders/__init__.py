"""Embedders: adapters of the :class:`~citewell.ports.Embedder` port."""

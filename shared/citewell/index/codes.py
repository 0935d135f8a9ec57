"""The clustered rows of the vector lane as compact codes: float16, half the bytes of float32.

At 1M chunks of 384 dimensions the float32 matrix alone was 1.5 GB of a search process's
1.9 GB peak. Held as float16 codes in a faiss inverted file (``IndexIVFScalarQuantizer``,
inner product, not by residual) it is 768 MB, scored by faiss's SIMD scanner without decoding
to float32 first. The inverted file is filled from citewell's own centroids and each row's
own cluster (``chunk_clusters``), so its lists are exactly the clusters the table holds, and
a row's id in it is its position in the block.

The caller's rows are a bitmap of positions handed to the search (``IDSelectorBitmap``):
faiss's list scanner tests each code's id against it before computing its distance
(``run_scan_codes1``, in faiss's expanded scanners), so a row the caller may not see is never
scored or ranked. Nothing here is ever written to disk: the codes of a deleted row stay in
memory only, until the next full read.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class ClusterCodes:
    """Rows' float16 codes, list ``c`` holding cluster ``c``'s rows in position order."""

    def __init__(self, centroids: np.ndarray, sizes: np.ndarray) -> None:
        import faiss  # only a home past the clustering threshold needs it

        self._faiss: Any = faiss
        width = centroids.shape[1]
        self._quantizer = faiss.IndexFlatIP(width)  # kept referenced: the index does not own it
        self._quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
        self.index = faiss.IndexIVFScalarQuantizer(self._quantizer, width, centroids.shape[0],
                                                   faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT, False)
        self.index.is_trained = True  # float16 needs no trained range; the centroids are ours
        lists = self.index.invlists
        assert lists is not None  # an IVF index is made with its lists
        self._lists = faiss.downcast_InvertedLists(lists)
        for cluster, size in enumerate(sizes.tolist()):
            self._lists.resize(cluster, size)  # each list allocated once, at its final size
        self.index.ntotal = int(sizes.sum())

    @property
    def clusters(self) -> int:
        return int(self.index.nlist)

    def put(self, cluster: int, offset: int, positions: np.ndarray, vectors: np.ndarray) -> None:
        """Encode ``vectors`` (rows of ``cluster`` at block ``positions``) into its list from ``offset``."""
        codes = self.index.sq.compute_codes(np.ascontiguousarray(vectors, dtype=np.float32))
        ids = np.ascontiguousarray(positions, dtype=np.int64)
        self._lists.update_entries(cluster, offset, len(ids), self._faiss.swig_ptr(ids), self._faiss.swig_ptr(codes))

    def search(self, vector: np.ndarray, k: int, probe: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions and cosines of the best ``k`` rows set in ``allowed`` (``np.packbits(mask,
        bitorder="little")``) among the ``probe`` clusters nearest ``vector``."""
        faiss = self._faiss
        selector = faiss.IDSelectorBitmap(allowed.size, faiss.swig_ptr(allowed))  # size in bytes
        params = faiss.SearchParametersIVF(nprobe=probe, sel=selector)
        scores, positions = self.index.search(np.ascontiguousarray(vector, dtype=np.float32).reshape(1, -1), k, params=params)
        found = positions[0] >= 0  # fewer than k allowed rows in those clusters: the rest is -1
        return positions[0][found], scores[0][found]

    def rows(self, positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """The float16 rows at ``positions`` (ascending; cluster c holds ``starts[c]:starts[c + 1]``),
        copied out of the lists: for a caller who sees so few rows that scoring them alone beats
        scanning every list (1,000 of 1M rows: 2.5 ms a search to scan every list)."""
        width = self.index.d
        found = np.empty((positions.size, width), dtype=np.float16)
        clusters = np.searchsorted(starts, positions, side="right") - 1
        runs = np.flatnonzero(np.diff(clusters, prepend=-1, append=-1))
        for first, end in zip(runs[:-1].tolist(), runs[1:].tolist()):
            cluster = int(clusters[first])
            found[first:end] = self._held(cluster).view(np.float16)[positions[first:end] - starts[cluster]]
        return found

    def _held(self, cluster: int) -> np.ndarray:
        """Cluster ``cluster``'s codes in place (no copy), one row of ``code_size`` bytes each."""
        size = self._lists.list_size(cluster)
        return self._faiss.rev_swig_ptr(self._lists.get_codes(cluster), size * self.index.code_size).reshape(size, -1)

    def codes_of(self, cluster: int) -> np.ndarray:
        """Cluster ``cluster``'s codes, one row of ``code_size`` bytes each (a copy)."""
        return self._held(cluster).copy()

    def ids_of(self, cluster: int) -> np.ndarray:
        """Cluster ``cluster``'s row positions (a copy)."""
        size = self._lists.list_size(cluster)
        return self._faiss.rev_swig_ptr(self._lists.get_ids(cluster), size).copy()

"""The numpy building blocks of `metrics`: discounts, gains, top-k sums, key checks, and `PreparedQrels`, the
judged grades prepared for looking up many (query, doc) keys at once. No Django. Split from `metrics`
to keep each module readable; `metrics` is the interface and documents the conventions.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .flavours import CUTOFFS, FLAVOURS, RELEVANCE_LEVEL, Flavour

_INT64_MAX = np.iinfo(np.int64).max
# PreparedQrels uses a direct table (one int32 per key) when the judged keys span at most
# max(DIRECT_TABLE_MIN, DIRECT_TABLE_FACTOR x the number of judged entries) keys.
DIRECT_TABLE_MIN = 1 << 22
DIRECT_TABLE_FACTOR = 16


# --------------------------------------------------------------------------- helpers


def discount_vector(kind: str, length: int) -> np.ndarray:
    """Discount factor of ranks 1..length."""
    rank = np.arange(1, length + 1, dtype=np.float64)
    if kind == "log2":
        return 1.0 / np.log2(rank + 1.0)
    # Järvelin-Kekäläinen with log base 2: no discount before rank b=2, 1/log2(rank) from there
    # (rank 2 gives 1/log2(2) = 1 anyway).
    return 1.0 / np.log2(np.maximum(rank, 2.0))


def gain_vector(kind: str, grades: np.ndarray) -> np.ndarray:
    if kind == "exp":
        return np.exp2(grades) - 1.0  # exact 0 for grade 0
    return grades


def cutoff_matrix(width: int, weights: np.ndarray | None = None) -> np.ndarray:
    """(width, len(CUTOFFS)) matrix W with W[i, c] = weight[i] if i < CUTOFFS[c] else 0,
    so that ``top_k_product(values, W)`` gives the (weighted) sums over each top k."""
    w = np.ones(width) if weights is None else weights[:width]
    idx = np.arange(width)[:, None]
    # Fortran order: einsum's inner loop then runs along contiguous memory (4x faster).
    return np.asfortranarray(np.where(idx < np.asarray(CUTOFFS)[None, :], w[:, None], 0.0))


def top_k_product(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """values[:, :width] @ w without BLAS: for such thin products a multithreaded BLAS
    spends more time waking its threads than computing (10x slower measured)."""
    return np.einsum("ij,jk->ik", values[:, : w.shape[0]], w)


def as_int_array(name: str, a, ndim: int) -> np.ndarray:
    arr = np.asarray(a)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must hold integer keys, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > _INT64_MAX:
        raise ValueError(f"{name} has keys beyond the int64 range")
    if arr.ndim != ndim:
        if ndim == 2 and arr.ndim == 1 and arr.size == 0:
            arr = arr.reshape(0, 0)
        else:
            raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def resolve_flavour(flavour) -> Flavour:
    if isinstance(flavour, Flavour):
        return flavour
    if isinstance(flavour, str):
        try:
            return FLAVOURS[flavour]
        except KeyError:
            raise ValueError(f"unknown flavour {flavour!r}; expected one of {tuple(FLAVOURS)}") from None
    raise TypeError(f"expected a Flavour or a flavour name, got {type(flavour).__name__}")


class PreparedQrels:
    """Qrels prepared for lookups: sorted combined keys, per-query relevant counts and
    (lazily, per gain/discount) ideal DCG at each cutoff."""

    def __init__(self, qrel_query, qrel_doc, qrel_grade) -> None:
        q = as_int_array("qrel_query", qrel_query, 1)
        d = as_int_array("qrel_doc", qrel_doc, 1)
        g = np.asarray(qrel_grade, dtype=np.float64)
        if g.ndim != 1 or not (len(q) == len(d) == len(g)):
            raise ValueError("qrel_query, qrel_doc and qrel_grade must be 1-d arrays of equal length")
        if np.isnan(g).any() or np.isinf(g).any():
            raise ValueError("qrel_grade must be finite")
        if (d < 0).any():
            raise ValueError("qrel_doc keys must be >= 0 (negative keys are ranking padding)")

        # Query keys -> dense index 0..nq-1 (also keeps the combined key small).
        self.queries = np.unique(q)
        nq = len(self.queries)
        qi = np.searchsorted(self.queries, q)

        # Document keys -> codes. Normally the key itself; if qidx*(maxdoc+1)+doc could
        # overflow int64, the dense index among the judged documents instead.
        doc_keys = d
        self.doc_table: np.ndarray | None = None
        maxdoc = int(d.max()) if len(d) else 0
        if nq * (maxdoc + 1) > _INT64_MAX:
            self.doc_table = np.unique(d)
            d = np.searchsorted(self.doc_table, d)
            maxdoc = len(self.doc_table) - 1
        self.maxdoc = maxdoc
        self.mult = maxdoc + 1

        keys = qi * self.mult + d
        order = np.argsort(keys)
        keys = keys[order]
        if len(keys) > 1 and (keys[1:] == keys[:-1]).any():
            dup = int(np.flatnonzero(keys[1:] == keys[:-1])[0])
            o = order[dup]
            raise ValueError(f"duplicate qrel for query {q[o]}, doc {doc_keys[o]}")
        g = g[order]
        qi = qi[order]
        # Negative grade = "in pool but unjudged" (trec_eval). Such entries stay in the lookup table, so
        # that UDCG finds them (distractors), but lookup() reports them unjudged with grade 0: for every
        # other metric they are exactly as absent (no gain, not relevant, not in the ideal ranking).
        self.keys = keys
        self.grades = g
        self.has_negative = bool((g < 0).any())

        self._direct_table(qi, self.keys % self.mult)

        self.nq = nq
        self.num_rel = np.bincount(qi[g >= RELEVANCE_LEVEL], minlength=nq).astype(np.float64)

        # Positive-grade docs sorted by (query, grade descending), with their rank in the query.
        pos = g > 0
        pq, pg = qi[pos], g[pos]
        o = np.lexsort((-pg, pq))
        pq, pg = pq[o], pg[o]
        starts = np.searchsorted(pq, np.arange(nq))
        rank0 = np.arange(len(pq)) - starts[pq] if len(pq) else np.zeros(0, np.int64)
        top = rank0 < max(CUTOFFS)
        self._ideal_q = pq[top]
        self._ideal_g = pg[top]
        self._ideal_rank0 = rank0[top]
        self._idcg: dict[tuple[str, str], np.ndarray] = {}
        self._positions = np.zeros(0, dtype=np.int64)

    def _direct_table(self, qi: np.ndarray, d: np.ndarray) -> None:
        """When the judged documents' keys span a modest range (document pks of one pool usually do),
        a table indexed by key gives each document's judged entry: lookups are then gathers instead
        of a sort and a binary search (about 2x faster). The table has a sentinel slot at each end
        (keys out of range, padding); unjudged keys point to entry n (query -2: never a match), and
        documents judged for several queries to entry n + 1, looked up by binary search."""
        self.direct: np.ndarray | None = None
        n = len(d)
        if self.doc_table is not None or n == 0:
            return
        low, high = int(d.min()), int(d.max())
        if high - low + 1 > max(DIRECT_TABLE_MIN, DIRECT_TABLE_FACTOR * n):
            return
        kind = np.int32 if n + 2 < 2**31 else np.int64
        direct = np.full(high - low + 3, n, dtype=kind)
        direct[d - low + 1] = np.arange(n, dtype=kind)
        shared = np.bincount(d - low + 1, minlength=len(direct)) > 1
        direct[shared] = n + 1
        self.direct, self.direct_base, self.direct_shared = direct, low - 1, bool(shared.any())
        self.entry_query = np.concatenate([qi, [-2, -2]]).astype(kind)  # rows without qrels have -1
        self.entry_grade = np.concatenate([self.grades, [0.0, 0.0]])

    def _lookup_direct(self, rowq: np.ndarray, docs: np.ndarray):
        slot = docs - self.direct_base
        np.clip(slot, 0, len(self.direct) - 1, out=slot)  # padding (-1) and strangers: sentinels
        entry = self.direct[slot]
        del slot
        found = self.entry_query[entry] == rowq[:, None].astype(self.entry_query.dtype)
        grades = self.entry_grade[entry]
        grades *= found
        if self.direct_shared:  # documents judged for several queries: binary search for those cells
            r, c = np.nonzero((entry == len(self.entry_query) - 1) & (rowq >= 0)[:, None])
            keys = rowq[r] * self.mult + docs[r, c]
            at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
            hit = self.keys[at] == keys
            found[r, c] = hit
            grades[r, c] = np.where(hit, self.grades[at], 0.0)
        return grades, found

    def idcg(self, gain: str, discount: str) -> np.ndarray:
        """(nq, len(CUTOFFS)) ideal DCG."""
        key = (gain, discount)
        if key not in self._idcg:
            disc = discount_vector(discount, max(CUTOFFS))
            contrib = gain_vector(gain, self._ideal_g) * disc[self._ideal_rank0]
            out = np.zeros((self.nq, len(CUTOFFS)))
            for c, k in enumerate(CUTOFFS):
                sel = self._ideal_rank0 < k
                out[:, c] = np.bincount(self._ideal_q[sel], weights=contrib[sel], minlength=self.nq)
            self._idcg[key] = out
        return self._idcg[key]

    def row_query_index(self, rank_query: np.ndarray) -> np.ndarray:
        """Dense query index of each ranking row, -1 if the query has no qrels."""
        if self.nq == 0:
            return np.full(len(rank_query), -1, dtype=np.int64)
        idx = np.searchsorted(self.queries, rank_query)
        idx_c = np.minimum(idx, self.nq - 1)
        return np.where(self.queries[idx_c] == rank_query, idx_c, -1)

    def _arange(self, length: int) -> np.ndarray:
        if len(self._positions) < length:
            self._positions = np.arange(length, dtype=np.int64)
        return self._positions[:length]

    def per_row(self, table: np.ndarray, rowq: np.ndarray) -> np.ndarray:
        """table[rowq] for per-query tables, 0 for rows whose query has no qrels."""
        if self.nq == 0:
            return np.zeros((len(rowq),) + table.shape[1:])
        out = table[np.maximum(rowq, 0)]
        out[rowq < 0] = 0.0
        return out

    def lookup(self, rowq: np.ndarray, docs: np.ndarray, valid: np.ndarray):
        """Grades (0 where unjudged), judged mask and negative mask (None when no grade is negative) for
        a (chunk, depth) block of doc keys. A document whose grade is negative is unjudged (grade 0,
        judged False) and marked in the negative mask.

        Rows should be grouped by query, so that the chunk's queries own a small, cache-sized
        slice of the sorted qrels keys."""
        grades, found = self._find(rowq, docs, valid)
        if not self.has_negative:
            return grades, found, None
        negative = grades < 0
        found &= ~negative
        grades[grades <= 0] = 0.0  # the negative ones, and -0.0 from a miss next to a negative grade
        return grades, found, negative

    def _find(self, rowq: np.ndarray, docs: np.ndarray, valid: np.ndarray):
        """Grades (0 where not found) and found mask of a block of doc keys, negative grades included."""
        shape = docs.shape
        if len(self.keys) == 0 or not (rowq >= 0).any():
            return np.zeros(shape), np.zeros(shape, dtype=bool)
        if self.direct is not None:
            return self._lookup_direct(rowq, docs)
        if self.doc_table is not None:
            code = np.searchsorted(self.doc_table, docs)
            np.minimum(code, len(self.doc_table) - 1, out=code)
            ok = valid & (self.doc_table[code] == docs)
        else:
            code = docs
            ok = valid & (docs <= self.maxdoc)
        ok &= (rowq >= 0)[:, None]
        present = rowq[rowq >= 0]
        q_lo, q_hi = int(present.min()), int(present.max())
        lo = int(np.searchsorted(self.keys, q_lo * self.mult))
        hi = int(np.searchsorted(self.keys, (q_hi + 1) * self.mult))
        if hi == lo:
            return np.zeros(shape), np.zeros(shape, dtype=bool)
        # Keys relative to the chunk's first query: in [0, span), span = sentinel for cells that
        # cannot be judged. The products cannot overflow for ok cells (checked in __init__);
        # the others are replaced.
        base = q_lo * self.mult
        span = (q_hi - q_lo + 1) * self.mult
        hay = self.keys[lo:hi] - base
        hay_grades = self.grades[lo:hi]
        keys = np.where(ok, (rowq[:, None] - q_lo) * self.mult + code, span).ravel()
        # Binary search is bound by branch mispredictions on random needles; sorted needles
        # follow almost the same path from one search to the next, which more than pays for
        # the sort. Sorting key << shift | position (SIMD sort of plain int64) is ~3x faster
        # than an argsort; fall back to argsort when the packed value would not fit.
        cells = keys.size
        shift = max(1, (cells - 1).bit_length())
        if ((span + 1) << shift) <= _INT64_MAX:
            packed = keys << shift
            packed |= self._arange(cells)
            packed.sort()
            order = packed & ((1 << shift) - 1)
            skeys = packed >> shift
            del packed
        else:
            order = np.argsort(keys)
            skeys = keys[order]
        pos = np.searchsorted(hay, skeys)
        np.minimum(pos, len(hay) - 1, out=pos)
        sfound = hay[pos] == skeys
        found = np.empty(keys.shape, dtype=bool)
        found[order] = sfound
        grades = np.empty(keys.shape)
        grades[order] = hay_grades[pos] * sfound  # grades are finite: 0 where not found
        return grades.reshape(shape), found.reshape(shape)


# Target number of (row, position) cells handled at once; bounds the memory of
# the (chunk, depth) temporaries (a few MiB each).
CHUNK_CELLS = 1 << 20


def in_chunks(n: int, depth: int, score_chunk, workers: int = 1, chunk_cells: int = CHUNK_CELLS) -> None:
    """Call `score_chunk(start, end)` over rows 0..n in chunks of about `chunk_cells` cells; with
    `workers` > 1, on threads: chunks write disjoint rows of the outputs, and numpy releases the GIL in
    the heavy operations (sort, searchsorted, einsum, cumsum), so threads share the work."""
    step = max(1, chunk_cells // max(depth, 1))
    chunks = [(s, min(n, s + step)) for s in range(0, n, step)]
    if workers > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done in [pool.submit(score_chunk, s, e) for s, e in chunks]:
                done.result()
    else:
        for s, e in chunks:
            score_chunk(s, e)

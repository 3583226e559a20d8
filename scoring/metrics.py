"""Ranking metrics (NDCG in several flavours, P, recall, MRR, AP, judged@k, UDCG).

Pure numpy, no Django: everything here works on plain integer keys and float
grades, and is vectorised over rankings (the only Python loops are over row
chunks, cutoffs and flavours).

Conventions (the numbers must be exactly right, so they are spelled out):

* A grade is a float in [0, 4] (possibly fractional, e.g. a mean of raters).
  A qrel with a *negative* grade is treated as "in the pool but unjudged",
  exactly as trec_eval does (RELVALUE_UNJUDGED): it is not relevant, has no
  gain, is not in the ideal ranking, does not count in the number of relevant
  documents, counts as unjudged for judged@k and is dropped under
  ``unjudged="drop"``.
* Relevant (for P, recall, MRR, AP) means grade >= 1 (trec_eval's default
  relevance level ``-l1``).
* NDCG@k = DCG@k / IDCG@k.  The ideal ranking is built from *all* judged
  documents of the query with grade > 0 (retrieved or not), sorted by gain
  descending, cut at k, with the same discount.  A query without any
  positive-grade document has NDCG 0.
* unjudged="zero": unjudged documents keep their place with gain 0.
  unjudged="drop": unjudged documents are removed before cutting at k (the
  condensed list of ``trec_eval -J``); P, recall, MRR and AP are then computed
  on the condensed list too, as ``trec_eval -J`` does.  judged@k always looks
  at the original ranking.
* P@k = relevant in the top k / k (even if fewer than k documents were
  retrieved: the missing ones count as non-relevant, like trec_eval's P).
  recall@k = relevant in the top k / relevant judged documents of the query
  (0 if there are none).  MRR is trec_eval's recip_rank and AP is trec_eval's
  map (precision at each relevant retrieved rank, summed, divided by the
  number of relevant judged documents).  MRR and AP use the *whole* ranking
  (all of its columns, even beyond 100), like trec_eval without ``-M``.
* judged@k = judged documents among the first min(k, len) documents of the
  ranking / min(k, len); an empty ranking gives 0.
* udcg@k (asked for with ``udcg=True``; it depends on no flavour) is the
  computation the authors of UDCG released, adapted to grades; see "UDCG" below.

UDCG
----
Trappolini et al., "Redefining Retrieval Evaluation in the Era of LLMs"
(arXiv 2510.21440, EACL 2026) propose UDCG, "Utility and Distraction-aware
Cumulative Gain": relevant passages add utility, *distracting* ones (irrelevant
but answered from) take it away, with "an LLM-oriented positional discount".
Only the paper's abstract could be read here, not its text: the definition
below is the one the authors' released code computes (github.com/GiovanniTRA/
UDCG, commit daeee3b, ``src/compute_udcg_scores.py``), and its positional
discount is that code's: uniform, every position weighs 1/n. For one query with
passages p_1..p_n::

    UDCG = sigmoid( (1/n) * sum_i w_i * u_i ),   sigmoid(x) = 1 / (1 + e^-x)
    u_i  = 1 - P_LLM(no-response | q, p_i)       (how likely the LLM answers from p_i)
    w_i  = +1 if p_i is relevant, else -gamma    (gamma = 1/3; their stored data used 0.333)

with 0 for an empty list, and a passage without a utility counted in n but not
in the sum. :func:`udcg_of_passages` is exactly that computation, and
reproduces the numbers stored in their ``data/dataset_with_udcg.json``.

Our pools have grades, not an LLM's abstention probabilities, so udcg@k maps
each ranked document's combined grade g to (w, u):

* g >= 1 (relevant, as for P and recall): w = +1, u = 1;
* 0 <= g < 1 (not relevant): u = 0, it contributes 0 -- an irrelevant
  passage the LLM would not answer from;
* g < 0 (a distractor: the grade -1, or a negative combined grade): w = -1/3,
  u = 1 -- an irrelevant passage the LLM would answer from;
* unjudged: contributes 0 but counts in n.

udcg@k = sigmoid(sum over the first n_k = min(k, len) documents / n_k), 0 for
an empty ranking. It lies in [sigmoid(-1/3), sigmoid(1)] = [0.417, 0.731] for a
non-empty ranking: 0.5 means nothing useful and nothing harmful in the top k.
Unlike NDCG it needs no ideal ranking and it does not look at documents the
run did not retrieve: it scores the context handed to a reader, not recall.

Inputs are integer keys: ``rank_query`` (n,) is the query key of each ranking
row, ``rankings`` (n, depth) holds document keys padded with -1 on the right,
and ``qrel_query``/``qrel_doc``/``qrel_grade`` are parallel 1-d arrays with one
entry per judged (query, doc) pair.  Document keys must be >= 0.  A document
key repeated inside one ranking, or a (query, doc) pair repeated in the qrels,
is an error (trec_eval refuses both), as is a non-padding key after padding.
The order of each ranking is taken as given: breaking score ties is the
caller's business.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .flavours import (  # noqa: F401 - re-exported: metrics.FLAVOURS etc. are the public names
    CUTOFFS,
    DEFAULT_FLAVOUR,
    DISCOUNTS,
    FLAVOURS,
    GAINS,
    JUDGED,
    METRICS,
    UDCG,
    UNJUDGED,
    Flavour,
)

__all__ = [
    "CUTOFFS",
    "FLAVOURS",
    "DEFAULT_FLAVOUR",
    "METRICS",
    "JUDGED",
    "UDCG",
    "UDCG_GAMMA",
    "RELEVANCE_LEVEL",
    "Flavour",
    "score",
    "score_all",
    "udcg_of_passages",
]

RELEVANCE_LEVEL: float = 1.0
# Weight of a distracting passage: the default of the authors' released code (-1/3; their stored
# outputs were computed with -0.333).
UDCG_GAMMA: float = 1 / 3

# Target number of (row, position) cells handled at once; bounds the memory of
# the (chunk, depth) temporaries (a few MiB each).
_CHUNK_CELLS = 1 << 20
_INT64_MAX = np.iinfo(np.int64).max
# _Qrels uses a direct table (one int32 per key) when the judged keys span at most
# max(DIRECT_TABLE_MIN, DIRECT_TABLE_FACTOR x the number of judged entries) keys.
DIRECT_TABLE_MIN = 1 << 22
DIRECT_TABLE_FACTOR = 16


# --------------------------------------------------------------------------- helpers


def _discounts(kind: str, length: int) -> np.ndarray:
    """Discount factor of ranks 1..length."""
    rank = np.arange(1, length + 1, dtype=np.float64)
    if kind == "log2":
        return 1.0 / np.log2(rank + 1.0)
    # Järvelin-Kekäläinen with log base 2: no discount before rank b=2, 1/log2(rank) from there
    # (rank 2 gives 1/log2(2) = 1 anyway).
    return 1.0 / np.log2(np.maximum(rank, 2.0))


def _gain(kind: str, grades: np.ndarray) -> np.ndarray:
    if kind == "exp":
        return np.exp2(grades) - 1.0  # exact 0 for grade 0
    return grades


def _cutoff_matrix(width: int, weights: np.ndarray | None = None) -> np.ndarray:
    """(width, len(CUTOFFS)) matrix W with W[i, c] = weight[i] if i < CUTOFFS[c] else 0,
    so that ``_topk(values, W)`` gives the (weighted) sums over each top k."""
    w = np.ones(width) if weights is None else weights[:width]
    idx = np.arange(width)[:, None]
    # Fortran order: einsum's inner loop then runs along contiguous memory (4x faster).
    return np.asfortranarray(np.where(idx < np.asarray(CUTOFFS)[None, :], w[:, None], 0.0))


def _topk(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """values[:, :width] @ w without BLAS: for such thin products a multithreaded BLAS
    spends more time waking its threads than computing (10x slower measured)."""
    return np.einsum("ij,jk->ik", values[:, : w.shape[0]], w)


def _as_int_array(name: str, a, ndim: int) -> np.ndarray:
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


def _resolve(flavour) -> Flavour:
    if isinstance(flavour, Flavour):
        return flavour
    if isinstance(flavour, str):
        try:
            return FLAVOURS[flavour]
        except KeyError:
            raise ValueError(f"unknown flavour {flavour!r}; expected one of {tuple(FLAVOURS)}") from None
    raise TypeError(f"expected a Flavour or a flavour name, got {type(flavour).__name__}")


class _Qrels:
    """Qrels prepared for lookups: sorted combined keys, per-query relevant counts and
    (lazily, per gain/discount) ideal DCG at each cutoff."""

    def __init__(self, qrel_query, qrel_doc, qrel_grade) -> None:
        q = _as_int_array("qrel_query", qrel_query, 1)
        d = _as_int_array("qrel_doc", qrel_doc, 1)
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
            disc = _discounts(discount, max(CUTOFFS))
            contrib = _gain(gain, self._ideal_g) * disc[self._ideal_rank0]
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


# --------------------------------------------------------------------------- API


def score(
    rank_query: np.ndarray,
    rankings: np.ndarray,
    qrel_query: np.ndarray,
    qrel_doc: np.ndarray,
    qrel_grade: np.ndarray,
    flavour: Flavour | str = FLAVOURS[DEFAULT_FLAVOUR],
    *,
    udcg: bool = False,
) -> dict[str, np.ndarray]:
    """Score every ranking row with one flavour.

    rank_query: (n,) int64 query key of each ranking row; rankings: (n, depth) int64 doc
    keys, padded with -1 on the right; qrel_*: parallel 1-d arrays, one entry per judged
    (query, doc) with its combined grade (float64).
    Returns {metric name: (n,) float64} for every name in METRICS + JUDGED (+ UDCG with udcg=True).
    """
    f = _resolve(flavour)
    return score_all(rank_query, rankings, qrel_query, qrel_doc, qrel_grade, [f], udcg=udcg)[f.name]


def score_all(
    rank_query: np.ndarray,
    rankings: np.ndarray,
    qrel_query: np.ndarray,
    qrel_doc: np.ndarray,
    qrel_grade: np.ndarray,
    flavours: Iterable[Flavour | str] = FLAVOURS.values(),
    workers: int = 1,
    check: bool = True,
    *,
    udcg: bool = False,
) -> dict[str, dict[str, np.ndarray]]:
    """Same as :func:`score` for several flavours, sharing the grade lookup; `workers` threads
    score chunks of rows side by side. check=False skips the checks of each ranking (no key
    after padding, no key twice), for callers whose rankings are known to pass them (stored
    rankings: the database enforces both); a ranking breaking them then gives wrong numbers.
    udcg=True adds udcg@k (the names in UDCG) to every flavour's metrics, computed once in the
    same pass (it depends on no flavour).

    Returns {flavour name: {metric name: (n,) float64}}; every array is a separate object.
    """
    flist: list[Flavour] = []
    for fl in flavours:
        f = _resolve(fl)
        if any(o.name == f.name and o != f for o in flist):
            raise ValueError(f"two different flavours are named {f.name!r}")
        if f not in flist:
            flist.append(f)

    rq = _as_int_array("rank_query", rank_query, 1)
    rk = _as_int_array("rankings", rankings, 2)
    n, depth = rk.shape
    if len(rq) != n:
        raise ValueError(f"rank_query has {len(rq)} rows but rankings has {n}")
    qrels = _Qrels(qrel_query, qrel_doc, qrel_grade)
    rowq_all = qrels.row_query_index(rq)

    ncut = len(CUTOFFS)
    width = min(max(CUTOFFS), depth)  # columns that matter for the cutoff metrics
    count_w = _cutoff_matrix(width)
    disc_w = {d: _cutoff_matrix(width, _discounts(d, width)) for d in {f.discount for f in flist}}
    idcg = {(f.gain, f.discount): qrels.idcg(f.gain, f.discount) for f in flist}
    modes = sorted({f.unjudged for f in flist})
    cut = np.asarray(CUTOFFS, dtype=np.float64)

    # Outputs, filled chunk by chunk. Shared per unjudged mode: P/recall/MRR/AP; per flavour: NDCG.
    judged_out = np.zeros((n, ncut))
    udcg_out = np.zeros((n, ncut)) if udcg else None
    mode_out = {
        m: {"p": np.zeros((n, ncut)), "recall": np.zeros((n, ncut)), "mrr": np.zeros(n), "ap": np.zeros(n)}
        for m in modes
    }
    ndcg_out = {f.name: np.zeros((n, ncut)) for f in flist}

    inv_rank = 1.0 / np.arange(1, depth + 1, dtype=np.float64)
    # For the condensed list: sort keys col + depth*unjudged per row (small ints, SIMD sort).
    kdt = np.int16 if 2 * depth < np.iinfo(np.int16).max else np.int64
    col = np.arange(depth, dtype=kdt)
    # Process rows grouped by query (see _Qrels.lookup); keep the given order if it already is.
    order = None if n < 2 or (rowq_all[1:] >= rowq_all[:-1]).all() else np.argsort(rowq_all, kind="stable")

    def score_chunk(s: int, e: int) -> None:
        rows = slice(s, e) if order is None else order[s:e]
        docs = rk[rows]
        rowq = rowq_all[rows]
        valid = docs >= 0
        if depth > 1 and check:
            bad = (valid[:, 1:] & ~valid[:, :-1]).any(axis=1)
            if bad.any():
                r = np.arange(n)[rows][np.argmax(bad)]
                raise ValueError(f"ranking row {r}: document key after -1 padding")
            srt = np.sort(docs, axis=1)
            bad = ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any(axis=1)
            if bad.any():
                r = np.arange(n)[rows][np.argmax(bad)]
                raise ValueError(f"ranking row {r}: duplicate document key")
            del srt, bad
        grades, judged, negative = qrels.lookup(rowq, docs, valid)
        length = valid.sum(axis=1)
        del valid, docs

        # judged@k, always on the original ranking.
        jcount = _topk(judged, count_w)
        denom = np.minimum(cut[None, :], length[:, None].astype(np.float64))
        judged_out[rows] = np.divide(jcount, denom, out=np.zeros_like(jcount), where=denom > 0)
        if udcg_out is not None:
            # UDCG on the original ranking: +1 per relevant document, -gamma per distractor (a negative
            # grade), 0 otherwise; the mean over the first min(k, len) documents, through a sigmoid.
            utility = (grades[:, :width] >= RELEVANCE_LEVEL).astype(np.float64)
            if negative is not None:
                utility -= UDCG_GAMMA * negative[:, :width]
            mean = np.divide(_topk(utility, count_w), denom, out=np.zeros((e - s, ncut)), where=denom > 0)
            udcg_out[rows] = np.where(denom > 0, 1.0 / (1.0 + np.exp(-mean)), 0.0)
            del utility, mean
        del negative

        nrel = qrels.per_row(qrels.num_rel, rowq)
        has_rel = nrel > 0
        for m in modes:
            if m == "zero":
                g = grades
            else:
                # Condensed list: judged docs first, in their order. Sorting col + depth*unjudged
                # per row gives the source column of each condensed position.
                src = col + kdt(depth) * ~judged
                src.sort(axis=1)
                src %= kdt(depth)
                g = np.take_along_axis(grades, src, axis=1)
                del src
            rel = g >= RELEVANCE_LEVEL
            o = mode_out[m]
            relcount = _topk(rel, count_w)
            o["p"][rows] = relcount / cut[None, :]
            o["recall"][rows] = np.divide(
                relcount, nrel[:, None], out=np.zeros_like(relcount), where=has_rel[:, None]
            )
            first = rel.argmax(axis=1) if depth else np.zeros(e - s, dtype=np.int64)
            o["mrr"][rows] = np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)
            # AP numerator: sum over relevant ranks i of (relevant docs in the top i) / i.
            cum = np.cumsum(rel, axis=1, dtype=np.int32)
            cum *= rel
            prec_sum = np.einsum("ij,j->i", cum, inv_rank)
            del cum, rel
            o["ap"][rows] = np.divide(prec_sum, nrel, out=np.zeros_like(prec_sum), where=has_rel)

            for f in flist:
                if f.unjudged != m:
                    continue
                dcg = _topk(_gain(f.gain, g[:, :width]), disc_w[f.discount])
                ideal = qrels.per_row(idcg[(f.gain, f.discount)], rowq)
                ndcg_out[f.name][rows] = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)
            del g

    step = max(1, _CHUNK_CELLS // max(depth, 1))
    chunks = [(s, min(n, s + step)) for s in range(0, n, step)]
    if workers > 1 and len(chunks) > 1:
        # Chunks write disjoint rows of the outputs, and numpy releases the GIL in the heavy
        # operations (sort, searchsorted, einsum, cumsum): threads share the work.
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done in [pool.submit(score_chunk, s, e) for s, e in chunks]:
                done.result()
    else:
        for s, e in chunks:
            score_chunk(s, e)

    result: dict[str, dict[str, np.ndarray]] = {}
    for f in flist:
        o = mode_out[f.unjudged]
        d: dict[str, np.ndarray] = {}
        for c, k in enumerate(CUTOFFS):
            d[f"ndcg@{k}"] = np.ascontiguousarray(ndcg_out[f.name][:, c])
        for c, k in enumerate(CUTOFFS):
            d[f"p@{k}"] = o["p"][:, c].copy()
        for c, k in enumerate(CUTOFFS):
            d[f"recall@{k}"] = o["recall"][:, c].copy()
        d["mrr"] = o["mrr"].copy()
        d["ap"] = o["ap"].copy()
        for c, k in enumerate(CUTOFFS):
            d[f"judged@{k}"] = judged_out[:, c].copy()
        if udcg_out is not None:
            for c, k in enumerate(CUTOFFS):
                d[f"udcg@{k}"] = udcg_out[:, c].copy()
        result[f.name] = d
    return result


def udcg_of_passages(relevant, utility, gamma: float = UDCG_GAMMA) -> float:
    """UDCG of one list of passages exactly as the authors' released code computes it (see "UDCG" in
    the module docstring): sigmoid of the mean of +u (relevant) and -gamma * u (irrelevant) over the n
    passages; a passage whose utility is None is left out of the sum but counted in n; 0 for no
    passage. relevant: booleans; utility: u = 1 - P_LLM(no-response | q, p) per passage, or None.

    Plain Python, summed in order like the released code, so their stored values come out exactly.
    udcg@k of a ranking is this function on the ranking's first min(k, len) documents with
    (relevant, u) = (True, 1) for grade >= 1, (False, 0) for grades in [0, 1), (False, 1) for
    distractors (negative grades) and None for unjudged documents."""
    relevant, utility = list(relevant), list(utility)
    if len(relevant) != len(utility):
        raise ValueError(f"{len(relevant)} relevance labels for {len(utility)} utilities")
    if not relevant:
        return 0.0
    total = 0.0
    for is_relevant, u in zip(relevant, utility, strict=True):
        if u is not None:
            total += u * (1.0 if is_relevant else -gamma)
    return 1.0 / (1.0 + math.exp(-total / len(relevant)))

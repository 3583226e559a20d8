"""Score many rankings with a set of measures named in ir_measures syntax (scoring.measures.names). Pure
numpy, no Django; vectorised over rankings like scoring.metrics (Python loops only over row chunks and
measures).

Inputs are those of :func:`scoring.metrics.score_all`: ``rank_query`` (n,) query keys, ``rankings`` (n,
depth) document keys padded with -1 on the right, and parallel qrels arrays (query key, doc key, grade).
The order of each ranking is taken as given: a run read from a file is sorted as trec_eval sorts it
(score descending, then document id descending) before it gets here.

Conventions, those of trec_eval / ir_measures:

* a document without a qrel is unjudged and not relevant; a *negative* grade (a distractor, or trec_eval's
  "pooled but unjudged" -1) is unjudged for every measure except Judged@k (a rater graded it, as
  ir_measures' Judged counts every document in the qrels) and UDCG (a distractor, scoring.udcg);
* relevant at level r (``rel=r``, default 1) means judged with grade >= r; R is the number of judged
  documents of the query with grade >= r, retrieved or not;
* a cut-off k looks at the first k documents; P@k divides by k even when fewer were retrieved.

Definitions (i is the 1-based rank, rel_i the relevance indicator at level r, g_i the grade, 0 if unjudged):

* ``P(rel=r)@k`` = sum_{i<=k} rel_i / k; ``R(rel=r)@k`` = sum_{i<=k} rel_i / R (0 when R = 0);
  ``Success(rel=r)@k`` = 1 if some rel_i = 1 with i <= k;
* ``RR(rel=r)[@k]`` = 1 / the rank of the first relevant document (within k), else 0;
* ``AP(rel=r)[@k]`` = sum_{i<=k, rel_i} P@i / R (trec_eval's map / map_cut_k: divided by R, not min(R, k));
* ``Rprec(rel=r)`` = P@R as relevant documents in the top R / R;
* ``nDCG[@k]`` (trec_eval's ndcg_cut, ir_measures' nDCG): DCG = sum_{i<=k} gain(g_i) / log2(i + 1),
  divided by the DCG of the ideal ranking of all the query's judged documents with a positive gain (cut at
  k too); 0 when that is 0. gain(g) = g, or 2**g - 1 with ``dcg='exp-log2'``, or ``gains={grade: gain}``:
  the map (a grade it leaves out keeps gain g, as in ir_measures), interpolated linearly between whole
  grades for a fractional (combined) grade;
* ``ERR[@k]`` (Chapelle et al. 2009, as gdeval computes it): sum_{i<=k} R_i / i * prod_{j<i} (1 - R_j),
  R_i = (2**g_i - 1) / 2**4 (4 is the top of the scale);
* ``Bpref(rel=r)`` (trec_eval's bpref): over the judged relevant documents retrieved,
  1 - min(n_i, R) / min(N, R) where n_i is the number of judged non-relevant documents ranked above (1 when
  n_i = 0), summed and divided by R; N is the number of judged non-relevant documents of the query;
* ``infAP(rel=r)`` (trec_eval's infAP, Yilmaz & Aslam 2006): at each judged relevant document at 0-based
  position j > 0, 1/(j+1) + j/(j+1) * ((r_j + n_j + u_j) / j) * ((r_j + eps) / (r_j + n_j + 2 eps)) with
  r_j, n_j, u_j the judged relevant, judged non-relevant and pooled-unjudged (negative grade) documents
  above it and eps = 1e-5; 1 at position 0; summed and divided by R;
* ``Judged[@k]`` = documents with a qrel among the first min(k, len) / min(k, len) (0 for an empty ranking);
* ``RBP(p=p, rel=r)[@k]``, rank-biased precision (Moffat & Zobel 2008, "Rank-biased precision for
  measurement of retrieval effectiveness", TOIS 27(1)): a user reads rank 1, and goes on from each rank to
  the next with probability p, so rank i is read with probability p**(i-1) and
  RBP = (1 - p) * sum_{i=1}^{d} u_i * p**(i-1), where d = min(k, len) is the depth evaluated and u_i = rel_i
  (with ``rel``) or g_i / 4 (graded, without ``rel``). The *residual* is the weight RBP did not see:
  the unjudged documents within the depth, (1 - p) * sum_{i<=d, unjudged} p**(i-1), plus everything past
  the depth, (1 - p) * sum_{i>d} p**(i-1) = p**d. RBP + residual is the largest RBP the ranking could
  reach if every unseen document were fully relevant; it is stored as a column of its own;
* ``UDCG@k``: scoring.udcg.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..judged_table import CHUNK_CELLS, as_int_array, in_chunks
from ..judged_table import PreparedQrels as Qrels
from ..udcg import from_sums as udcg_from_sums
from ..udcg import weights as udcg_weights
from .names import FAMILIES, Measure

__all__ = ["INFAP_EPSILON", "MAX_GRADE", "columns", "compute", "extended", "judged_column", "residual_name"]

MAX_GRADE = 4.0  # the top of the grade scale: ERR's 2**4 and graded RBP's g / 4
INFAP_EPSILON = 0.00001  # trec_eval's INFAP_EPSILON
_CHUNK_CELLS = CHUNK_CELLS  # judged_table.in_chunks' default, here so a test can make chunks small
# Families whose value needs the whole ranking when they have no cut-off.
_RESIDUAL = " residual"


def residual_name(measure: Measure) -> str:
    return measure.name + _RESIDUAL


def extended(measures: Sequence[Measure]) -> list[Measure]:
    """The measures, then Judged@k for each cut-off k of a measure that the set does not hold already:
    every value cut at k is stored and shown with the coverage of its top k (the "judged" of exports)."""
    have = {m.name for m in measures}
    extra: list[Measure] = []
    for m in measures:
        if m.cutoff is not None and f"Judged@{m.cutoff}" not in have:
            have.add(f"Judged@{m.cutoff}")
            extra.append(Measure("Judged", (), m.cutoff))
    return [*measures, *extra]


def columns(measures: Sequence[Measure]) -> list[str]:
    """The value columns compute() returns: each measure's canonical name in order, then the Judged@k
    that `extended` adds, then the residual of each RBP measure."""
    every = extended(measures)
    return [m.name for m in every] + [residual_name(m) for m in every if m.family == "RBP"]


def judged_column(measure: Measure) -> str | None:
    """The column holding the coverage of the measure's top k (None for a measure without cut-off)."""
    return None if measure.cutoff is None else f"Judged@{measure.cutoff}"


def _gain_function(measure: Measure):
    gains = measure.get("gains")
    if gains is not None:
        # A grade the map leaves out keeps its own value (pytrec_eval's gains.get(grade, grade)): the
        # canonical name drops the entries g:g, so that reading it back gives the same gains.
        table = {g: float(g) for g in range(int(MAX_GRADE) + 1)} | {k: float(v) for k, v in gains.items()}
        keys = np.asarray(sorted(table), dtype=np.float64)
        values = np.asarray([table[k] for k in sorted(table)], dtype=np.float64)
        return lambda g: np.interp(g, keys, values)
    if measure.get("dcg") == "exp-log2":
        return lambda g: np.exp2(g) - 1.0
    return lambda g: g


class _QueryTables:
    """Per-query figures from the qrels (dense query index), computed once per distinct need."""

    def __init__(self, qrels: Qrels) -> None:
        self.q = qrels
        self.entry_query = qrels.keys // qrels.mult if len(qrels.keys) else np.zeros(0, np.int64)
        self.grades = qrels.grades  # negative: unjudged
        self._cache: dict = {}

    def count(self, low: float, high: float = np.inf) -> np.ndarray:
        """Judged documents per query with low <= grade < high (negative grades are never counted)."""
        key = ("count", low, high)
        if key not in self._cache:
            g = self.grades
            sel = (g >= max(low, 0.0)) & (g < high)
            self._cache[key] = np.bincount(self.entry_query[sel], minlength=self.q.nq).astype(np.float64)
        return self._cache[key]

    def ideal(self, measure: Measure, cutoff: int | None) -> np.ndarray:
        """Ideal DCG per query of the measure's gain, at the cut-off (None: all of them)."""
        gains = measure.get("gains")
        gkey = (tuple(sorted(gains.items())) if gains else None, measure.get("dcg"))
        key = ("ideal", gkey, cutoff)
        if key not in self._cache:
            base = ("ideal-docs", gkey)
            if base not in self._cache:
                judged = self.grades >= 0
                q = self.entry_query[judged]
                gain = _gain_function(measure)(self.grades[judged])
                pos = gain > 0
                q, gain = q[pos], gain[pos]
                order = np.lexsort((-gain, q))
                q, gain = q[order], gain[order]
                starts = np.searchsorted(q, np.arange(self.q.nq))
                rank0 = np.arange(len(q)) - starts[q] if len(q) else np.zeros(0, np.int64)
                contrib = gain / np.log2(rank0 + 2.0)
                self._cache[base] = (q, rank0, contrib)
            q, rank0, contrib = self._cache[base]
            sel = slice(None) if cutoff is None else rank0 < cutoff
            self._cache[key] = np.bincount(q[sel], weights=contrib[sel], minlength=self.q.nq)
        return self._cache[key]


def compute(
    rank_query: np.ndarray,
    rankings: np.ndarray,
    qrel_query: np.ndarray,
    qrel_doc: np.ndarray,
    qrel_grade: np.ndarray,
    measures: Sequence[Measure],
    *,
    check: bool = True,
    workers: int = 1,
) -> np.ndarray:
    """(n, len(columns(measures))) float64: every measure (then each RBP residual) of every ranking row.
    check=False skips the checks of each ranking (no key after padding, no key twice), as in
    scoring.metrics.score_all; `workers` threads score chunks of rows side by side (numpy releases the
    GIL in the heavy operations; chunks write disjoint rows)."""
    measures = extended(measures)
    rq = as_int_array("rank_query", rank_query, 1)
    rk = as_int_array("rankings", rankings, 2)
    n, depth = rk.shape
    if len(rq) != n:
        raise ValueError(f"rank_query has {len(rq)} rows but rankings has {n}")
    qrels = Qrels(qrel_query, qrel_doc, qrel_grade)
    tables = _QueryTables(qrels)
    rowq_all = qrels.row_query_index(rq)
    rbp = [m for m in measures if m.family == "RBP"]
    out = np.zeros((n, len(measures) + len(rbp)))
    if n == 0:
        return out
    rank = np.arange(1, depth + 1, dtype=np.float64)
    discount = 1.0 / np.log2(rank + 1.0)
    order = None if n < 2 or (rowq_all[1:] >= rowq_all[:-1]).all() else np.argsort(rowq_all, kind="stable")
    # The per-query tables every chunk reads, filled before any thread starts.
    for m in measures:
        if "rel" in FAMILIES[m.family].params and m.rel is not None:
            tables.count(m.rel)
            tables.count(0.0, m.rel)
        if m.family == "nDCG":
            tables.ideal(m, m.cutoff)

    def score_chunk(s: int, e: int) -> None:
        rows = slice(s, e) if order is None else order[s:e]
        docs = rk[rows]
        valid = docs >= 0
        if check and depth > 1:
            _check(docs, valid, np.arange(n)[rows])
        rowq = rowq_all[rows]
        grades, judged, negative = qrels.lookup(rowq, docs, valid)
        _chunk(out, rows, measures, rbp, tables, rowq, grades, judged, negative, valid, rank, discount)

    in_chunks(n, depth, score_chunk, workers, _CHUNK_CELLS)
    return out


def _rowdot(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """values @ weights without BLAS, whose summation order depends on how many rows a call has: a row
    then scores the same to the last bit in any batch, so that a full re-score rewrites no row that an
    incremental one wrote."""
    return np.einsum("ij,j->i", values, weights)


def _check(docs: np.ndarray, valid: np.ndarray, row_ids: np.ndarray) -> None:
    bad = (valid[:, 1:] & ~valid[:, :-1]).any(axis=1)
    if bad.any():
        raise ValueError(f"ranking row {row_ids[np.argmax(bad)]}: document key after -1 padding")
    srt = np.sort(docs, axis=1)
    bad = ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any(axis=1)
    if bad.any():
        raise ValueError(f"ranking row {row_ids[np.argmax(bad)]}: duplicate document key")


def _at(cum: np.ndarray, k: int | None) -> np.ndarray:
    """cum[:, k-1] (the running total over the first k columns), the whole row's total for None, 0 for
    k = 0 or no column."""
    depth = cum.shape[1]
    if depth == 0 or k == 0:
        return np.zeros(cum.shape[0])
    return cum[:, depth - 1 if k is None else min(k, depth) - 1].astype(np.float64)


def _gather(cum: np.ndarray, k: np.ndarray) -> np.ndarray:
    """cum[row, k_row - 1] with k per row (clipped to the depth), 0 where k_row = 0."""
    depth = cum.shape[1]
    if depth == 0:
        return np.zeros(cum.shape[0])
    kk = np.minimum(k.astype(np.int64), depth)
    got = np.take_along_axis(cum, np.maximum(kk - 1, 0)[:, None], axis=1)[:, 0].astype(np.float64)
    return np.where(kk > 0, got, 0.0)


def _chunk(out, rows, measures, rbp, tables, rowq, grades, judged, negative, valid, rank, discount) -> None:
    """Fill the chunk's rows of `out` (see compute)."""
    qrels = tables.q
    length = valid.sum(axis=1)
    per_rel: dict = {}

    ap_sums: dict = {}

    def ap_running_sum(r):
        """Per relevance level, computed once when AP asks: the running sum of precision at relevant ranks."""
        if r not in ap_sums:
            mask, cum = per_rel[r][0], per_rel[r][1]
            ap_sums[r] = np.cumsum(np.where(mask, cum / rank[: mask.shape[1]], 0.0), axis=1)
        return ap_sums[r]

    def relevant(r):
        """Per relevance level, computed once: mask, running count, first relevant rank, R per row."""
        if r not in per_rel:
            mask = judged & (grades >= r)
            cum = np.cumsum(mask, axis=1, dtype=np.int32)
            first = (
                np.where(mask.any(axis=1), mask.argmax(axis=1) + 1, 0)
                if mask.shape[1]
                else np.zeros(len(mask), np.int64)
            )
            nrel = qrels.per_row(tables.count(r), rowq)
            per_rel[r] = (mask, cum, first, nrel)
        return per_rel[r]

    def divide(a, b):
        return np.divide(a, b, out=np.zeros_like(a, dtype=np.float64), where=b > 0)

    width = grades.shape[1]
    for j, m in enumerate(measures):
        k = m.cutoff
        f = m.family
        if f in ("P", "R", "Success", "RR", "AP", "Rprec", "Bpref", "infAP"):
            mask, cum, first, nrel = relevant(m.rel)
        if f == "P":
            out[rows, j] = _at(cum, k) / k
        elif f == "R":
            out[rows, j] = divide(_at(cum, k), nrel)
        elif f == "Success":
            out[rows, j] = _at(cum, k) > 0
        elif f == "RR":
            hit = (first > 0) if k is None else (first > 0) & (first <= k)
            out[rows, j] = np.where(hit, 1.0 / np.maximum(first, 1), 0.0)
        elif f == "AP":
            out[rows, j] = divide(_at(ap_running_sum(m.rel), k), nrel)
        elif f == "Rprec":
            out[rows, j] = divide(_gather(cum, nrel), nrel)
        elif f == "nDCG":
            w = width if k is None else min(k, width)
            gain = _gain_function(m)(grades[:, :w]) * judged[:, :w]
            dcg = _rowdot(gain, discount[:w])
            ideal = qrels.per_row(tables.ideal(m, k), rowq)
            out[rows, j] = divide(dcg, ideal)
        elif f == "ERR":
            w = width if k is None else min(k, width)
            g = np.clip(grades[:, :w], 0.0, MAX_GRADE)
            stop = (np.exp2(g) - 1.0) / 2.0**MAX_GRADE
            reach = np.cumprod(1.0 - stop, axis=1)
            before = np.concatenate([np.ones((len(g), 1)), reach[:, :-1]], axis=1) if w else reach
            out[rows, j] = _rowdot(stop * before, 1.0 / rank[:w])
        elif f == "Bpref":
            nonrel = judged & ~mask
            above = np.cumsum(nonrel, axis=1, dtype=np.int32) - nonrel  # judged non-relevant ranked above
            n_nonrel = qrels.per_row(tables.count(0.0, m.rel), rowq)
            cap = np.minimum(n_nonrel, nrel)[:, None]
            term = np.where(above > 0, 1.0 - divide(np.minimum(above, nrel[:, None]), cap), 1.0)
            out[rows, j] = divide((term * mask).sum(axis=1), nrel)
        elif f == "infAP":
            nonrel = judged & ~mask
            pooled = negative if negative is not None else np.zeros_like(mask)
            r_above = cum - mask
            n_above = np.cumsum(nonrel, axis=1, dtype=np.int32) - nonrel
            u_above = np.cumsum(pooled, axis=1, dtype=np.int32) - pooled
            fj = rank - 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((r_above + n_above + u_above) / fj) * (
                    (r_above + INFAP_EPSILON) / (r_above + n_above + 2 * INFAP_EPSILON)
                )
            if width:
                term[:, 0] = 1.0
            out[rows, j] = divide(np.where(mask, term, 0.0).sum(axis=1), nrel)
        elif f == "Judged":
            w = width if k is None else min(k, width)
            seen = judged[:, :w] if negative is None else judged[:, :w] | negative[:, :w]
            out[rows, j] = divide(
                seen.sum(axis=1).astype(np.float64), np.minimum(length, w).astype(np.float64)
            )
        elif f == "UDCG":
            w = min(k, width)
            utility = udcg_weights(grades[:, :w], None if negative is None else negative[:, :w], 1.0)
            count = np.minimum(length, w).astype(np.float64)
            out[rows, j] = udcg_from_sums(utility.sum(axis=1), count)
        elif f == "RBP":
            p = m.get("p")
            w = width if k is None else min(k, width)
            weight = (1.0 - p) * p ** (rank[:w] - 1.0)
            if m.rel is None:
                u = np.clip(grades[:, :w], 0.0, MAX_GRADE) / MAX_GRADE
            else:
                u = (judged[:, :w] & (grades[:, :w] >= m.rel)).astype(np.float64)
            out[rows, j] = _rowdot(u, weight)
            seen = np.minimum(length, w)
            unjudged = _rowdot((valid[:, :w] & ~judged[:, :w]).astype(np.float64), weight)
            out[rows, len(measures) + rbp.index(m)] = unjudged + p ** seen.astype(np.float64)
        else:  # pragma: no cover - names.FAMILIES and this list go together
            raise ValueError(f"no computation for {m.name}")

"""Ranking metrics (NDCG in several flavours, P, recall, MRR, AP, judged@k, UDCG).

Pure numpy, no Django: everything here works on plain integer keys and float
grades, and is vectorised over rankings (the only Python loops are over row
chunks, cutoffs and flavours).

Conventions (the numbers must be exactly right, so they are spelled out):

* A grade is a float in [0, 4] (possibly fractional, e.g. a mean of raters).
  A qrel with a *negative* grade is treated as "in the pool but unjudged",
  exactly as trec_eval does (RELVALUE_UNJUDGED): it is not relevant, has no
  gain, is not in the ideal ranking, does not count in the number of relevant
  documents, and is dropped under ``unjudged="drop"``.  (judged@k, a coverage
  figure, does count it as judged; UDCG counts it as a distractor.)
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
  ranking / min(k, len); an empty ranking gives 0.  A document with a negative
  grade (a distractor) counts as judged here: a rater graded it (it is still
  unjudged for every other metric, and dropped under ``unjudged="drop"``).
* udcg@k (asked for with ``udcg=True``; it depends on no flavour) is defined,
  with its grade mapping and discount, in :mod:`scoring.udcg`; it is computed
  here, in the same pass as the rest.

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

from collections.abc import Iterable

import numpy as np

from .flavours import (  # noqa: F401 - re-exported: metrics.FLAVOURS etc. are the public names
    CUTOFFS,
    DEFAULT_FLAVOUR,
    DISCOUNTS,
    FLAVOURS,
    GAINS,
    JUDGED,
    METRICS,
    RELEVANCE_LEVEL,
    UDCG,
    UNJUDGED,
    Flavour,
)
from .judged_table import (  # noqa: F401
    CHUNK_CELLS,
    PreparedQrels,
    as_int_array,
    cutoff_matrix,
    discount_vector,
    gain_vector,
    in_chunks,
    resolve_flavour,
    top_k_product,
)
from .udcg import UDCG_GAMMA, udcg_of_passages  # noqa: F401  (re-exported for callers of metrics)
from .udcg import from_sums as udcg_from_sums
from .udcg import weights as udcg_weights

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


_CHUNK_CELLS = CHUNK_CELLS  # judged_table.in_chunks' default, here so a test can make chunks small


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
    f = resolve_flavour(flavour)
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
        f = resolve_flavour(fl)
        if any(o.name == f.name and o != f for o in flist):
            raise ValueError(f"two different flavours are named {f.name!r}")
        if f not in flist:
            flist.append(f)

    rq = as_int_array("rank_query", rank_query, 1)
    rk = as_int_array("rankings", rankings, 2)
    n, depth = rk.shape
    if len(rq) != n:
        raise ValueError(f"rank_query has {len(rq)} rows but rankings has {n}")
    qrels = PreparedQrels(qrel_query, qrel_doc, qrel_grade)
    rowq_all = qrels.row_query_index(rq)

    ncut = len(CUTOFFS)
    width = min(max(CUTOFFS), depth)  # columns that matter for the cutoff metrics
    count_w = cutoff_matrix(width)
    disc_w = {d: cutoff_matrix(width, discount_vector(d, width)) for d in {f.discount for f in flist}}
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
    # Process rows grouped by query (see PreparedQrels.lookup); keep the given order if it already is.
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

        # judged@k, always on the original ranking; a distractor was graded, so it counts as judged.
        jcount = top_k_product(judged if negative is None else judged | negative, count_w)
        denom = np.minimum(cut[None, :], length[:, None].astype(np.float64))
        judged_out[rows] = np.divide(jcount, denom, out=np.zeros_like(jcount), where=denom > 0)
        if udcg_out is not None:
            # UDCG on the original ranking (scoring.udcg): per-document weights summed over the first
            # min(k, len) documents by the same cutoff matrix, then the sigmoid of the mean.
            utility = udcg_weights(
                grades[:, :width], None if negative is None else negative[:, :width], RELEVANCE_LEVEL
            )
            udcg_out[rows] = udcg_from_sums(top_k_product(utility, count_w), denom)
            del utility
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
            relcount = top_k_product(rel, count_w)
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
                dcg = top_k_product(gain_vector(f.gain, g[:, :width]), disc_w[f.discount])
                ideal = qrels.per_row(idcg[(f.gain, f.discount)], rowq)
                ndcg_out[f.name][rows] = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)
            del g

    in_chunks(n, depth, score_chunk, workers, _CHUNK_CELLS)

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

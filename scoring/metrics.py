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
    RELEVANCE_LEVEL,
    UDCG,
    UNJUDGED,
    Flavour,
)
from .judged_table import _as_int_array, _cutoff_matrix, _discounts, _gain, _Qrels, _resolve, _topk  # noqa: F401

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

# Weight of a distracting passage: the default of the authors' released code (-1/3; their stored
# outputs were computed with -0.333).
UDCG_GAMMA: float = 1 / 3

# Target number of (row, position) cells handled at once; bounds the memory of
# the (chunk, depth) temporaries (a few MiB each).
_CHUNK_CELLS = 1 << 20


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

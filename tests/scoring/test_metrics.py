"""Tests for scoring.metrics: hand-computed cases and a property test against a
plain per-ranking Python reference implementation. No database, no Django."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring import judged_table, metrics
from scoring.metrics import CUTOFFS, FLAVOURS, JUDGED, METRICS, Flavour, score, score_all

L2 = np.log2  # discount helper for the expected-value arithmetic below
ALL_FLAVOURS = [FLAVOURS[name] for name in ("exp", "trec", "jk", "judged")]
ALL_COMBOS = [
    Flavour(f"{g}-{d}-{u}", g, d, u)
    for g, d, u in itertools.product(("exp", "linear"), ("log2", "jk"), ("zero", "drop"))
]


def run(rankings, qrels, flavour="exp", rank_query=None):
    """rankings: list of lists of doc keys (query 1 unless rank_query is given);
    qrels: {(query, doc): grade} or {doc: grade} for query 1."""
    if qrels and not isinstance(next(iter(qrels)), tuple):
        qrels = {(1, d): g for d, g in qrels.items()}
    depth = max([len(r) for r in rankings] + [1])
    rk = np.full((len(rankings), depth), -1, dtype=np.int64)
    for i, r in enumerate(rankings):
        rk[i, : len(r)] = r
    rq = (
        np.ones(len(rankings), dtype=np.int64)
        if rank_query is None
        else np.asarray(rank_query, dtype=np.int64)
    )
    items = list(qrels.items())
    qq = np.array([q for (q, _), _ in items], dtype=np.int64)
    qd = np.array([d for (_, d), _ in items], dtype=np.int64)
    qg = np.array([g for _, g in items], dtype=np.float64)
    return score(rq, rk, qq, qd, qg, FLAVOURS[flavour] if isinstance(flavour, str) else flavour)


def one(result, name, row=0):
    return float(result[name][row])


# --------------------------------------------------------------------------- API shape


def test_constants():
    assert CUTOFFS == (3, 5, 10, 100)
    assert METRICS == (
        "ndcg@3",
        "ndcg@5",
        "ndcg@10",
        "ndcg@100",
        "p@3",
        "p@5",
        "p@10",
        "p@100",
        "recall@3",
        "recall@5",
        "recall@10",
        "recall@100",
        "mrr",
        "ap",
    )
    assert JUDGED == ("judged@3", "judged@5", "judged@10", "judged@100")
    assert [(f.name, f.gain, f.discount, f.unjudged) for f in FLAVOURS.values()] == [
        ("exp", "exp", "log2", "zero"),
        ("trec", "linear", "log2", "zero"),
        ("jk", "linear", "jk", "zero"),
        ("judged", "linear", "log2", "drop"),
    ]
    assert all(f.description for f in FLAVOURS.values())
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        FLAVOURS["exp"].gain = "linear"  # frozen
    with pytest.raises(ValueError):
        Flavour("x", "quadratic", "log2", "zero")


def test_output_shapes_and_types():
    res = run([[10, 11], [11]], {10: 2, 11: 1})
    assert set(res) == set(METRICS + JUDGED)
    for arr in res.values():
        assert arr.dtype == np.float64 and arr.shape == (2,)
    # arrays are independent objects
    assert len({id(a) for a in res.values()}) == len(res)


# --------------------------------------------------------------------------- NDCG, per flavour

QRELS = {10: 3, 11: 2, 12: 0, 13: 1}


def test_exp_flavour():
    res = run([[10, 11, 12, 13]], QRELS, "exp")
    dcg3 = (2**3 - 1) + (2**2 - 1) / L2(3) + 0
    idcg3 = (2**3 - 1) + (2**2 - 1) / L2(3) + (2**1 - 1) / L2(4)
    assert one(res, "ndcg@3") == pytest.approx(dcg3 / idcg3, abs=1e-12)
    dcg5 = dcg3 + (2**1 - 1) / L2(5)
    assert one(res, "ndcg@5") == pytest.approx(dcg5 / idcg3, abs=1e-12)
    assert one(res, "ndcg@10") == pytest.approx(dcg5 / idcg3, abs=1e-12)
    assert one(res, "ndcg@100") == pytest.approx(dcg5 / idcg3, abs=1e-12)


def test_exp_flavour_reversed_order():
    res = run([[13, 12, 11, 10]], QRELS, "exp")
    dcg3 = 1 + 0 + 3 / L2(4)
    idcg3 = 7 + 3 / L2(3) + 1 / L2(4)
    assert one(res, "ndcg@3") == pytest.approx(dcg3 / idcg3, abs=1e-12)
    dcg5 = dcg3 + 7 / L2(5)
    assert one(res, "ndcg@5") == pytest.approx(dcg5 / idcg3, abs=1e-12)


def test_trec_flavour_linear_gain():
    res = run([[13, 12, 11, 10]], QRELS, "trec")
    dcg3 = 1 + 0 + 2 / L2(4)
    idcg3 = 3 + 2 / L2(3) + 1 / L2(4)
    assert one(res, "ndcg@3") == pytest.approx(dcg3 / idcg3, abs=1e-12)
    assert one(res, "ndcg@5") == pytest.approx((dcg3 + 3 / L2(5)) / idcg3, abs=1e-12)


def test_jk_discount_ranks_1_2_3():
    # ranks 1 and 2 undiscounted, rank 3 divided by log2(3), rank 4 by log2(4)
    res = run([[13, 11, 10, 12]], QRELS, "jk")
    dcg3 = 1 * 1 + 2 * 1 + 3 / L2(3)
    idcg3 = 3 * 1 + 2 * 1 + 1 / L2(3)
    assert one(res, "ndcg@3") == pytest.approx(dcg3 / idcg3, abs=1e-12)
    res = run([[12, 13, 11, 10]], QRELS, "jk")
    dcg5 = 0 + 1 + 2 / L2(3) + 3 / L2(4)
    assert one(res, "ndcg@5") == pytest.approx(dcg5 / idcg3, abs=1e-12)
    # with log2 the second rank would be discounted: jk must differ from trec here
    assert one(run([[13, 11]], QRELS, "jk"), "ndcg@3") != one(run([[13, 11]], QRELS, "trec"), "ndcg@3")


def test_perfect_ranking_is_one():
    for f in ALL_COMBOS:
        res = run([[10, 11, 13, 12]], QRELS, f)
        for k in CUTOFFS:
            assert one(res, f"ndcg@{k}") == pytest.approx(1.0, abs=1e-12)


def test_fractional_grades():
    qrels = {10: 2.5, 11: 1 / 3, 12: 4.0}
    res = run([[10, 11]], qrels, "exp")
    dcg = (2**2.5 - 1) + (2 ** (1 / 3) - 1) / L2(3)
    idcg3 = (2**4 - 1) + (2**2.5 - 1) / L2(3) + (2 ** (1 / 3) - 1) / L2(4)
    assert one(res, "ndcg@3") == pytest.approx(dcg / idcg3, abs=1e-12)
    res = run([[10, 11]], qrels, "trec")
    assert one(res, "ndcg@3") == pytest.approx(
        (2.5 + (1 / 3) / L2(3)) / (4 + 2.5 / L2(3) + (1 / 3) / L2(4)), abs=1e-12
    )
    # 1/3 has a gain but is not relevant (grade < 1); 2.5 is relevant
    assert one(res, "p@3") == pytest.approx(1 / 3, abs=1e-15)
    assert one(res, "mrr") == 1.0


def test_grade_just_below_one_is_not_relevant():
    res = run([[10, 11]], {10: 0.99, 11: 1.0}, "trec")
    assert one(res, "mrr") == 0.5
    assert one(res, "p@3") == pytest.approx(1 / 3)
    assert one(res, "ndcg@3") > 0


def test_ideal_uses_unretrieved_judged_docs():
    # The best document (grade 4) was not retrieved: it still counts in the ideal.
    res = run([[11]], {10: 4, 11: 2}, "trec")
    assert one(res, "ndcg@3") == pytest.approx(2 / (4 + 2 / L2(3)), abs=1e-12)
    assert one(res, "recall@3") == pytest.approx(1 / 2)


def test_ideal_cut_at_k():
    qrels = {d: 1 for d in range(20)}
    res = run([[0, 100, 101, 1]], qrels, "trec")  # 100, 101 unjudged
    assert one(res, "ndcg@3") == pytest.approx(1 / (1 + 1 / L2(3) + 1 / L2(4)), abs=1e-12)
    idcg5 = sum(1 / L2(i + 1) for i in range(1, 6))
    assert one(res, "ndcg@5") == pytest.approx((1 + 1 / L2(5)) / idcg5, abs=1e-12)


# --------------------------------------------------------------------------- unjudged documents


def test_unjudged_zero_vs_drop():
    qrels = {10: 3, 11: 2, 12: 1}
    ranking = [[10, 99, 11, 98, 12]]  # 99 and 98 are unjudged
    idcg3 = 3 + 2 / L2(3) + 1 / L2(4)
    zero = run(ranking, qrels, "trec")
    assert one(zero, "ndcg@3") == pytest.approx((3 + 2 / L2(4)) / idcg3, abs=1e-12)
    assert one(zero, "ndcg@5") == pytest.approx((3 + 2 / L2(4) + 1 / L2(6)) / idcg3, abs=1e-12)
    drop = run(ranking, qrels, "judged")  # condensed list [10, 11, 12]
    assert one(drop, "ndcg@3") == pytest.approx(1.0, abs=1e-12)
    # P, recall, MRR, AP on the condensed list under "drop"
    assert one(zero, "p@3") == pytest.approx(2 / 3) and one(drop, "p@3") == pytest.approx(3 / 3)
    assert one(zero, "recall@3") == pytest.approx(2 / 3) and one(drop, "recall@3") == pytest.approx(1.0)
    assert one(zero, "ap") == pytest.approx((1 / 1 + 2 / 3 + 3 / 5) / 3, abs=1e-12)
    assert one(drop, "ap") == pytest.approx(1.0, abs=1e-12)
    # judged@k always on the original ranking
    for res in (zero, drop):
        assert one(res, "judged@3") == pytest.approx(2 / 3)
        assert one(res, "judged@5") == pytest.approx(3 / 5)
        assert one(res, "judged@10") == pytest.approx(3 / 5)


def test_drop_pulls_in_documents_beyond_k():
    qrels = {10: 1, 11: 1, 12: 1, 13: 2}
    ranking = [[10, 90, 91, 92, 93, 11, 12, 13]]
    drop = run(ranking, qrels, "judged")  # condensed: 10, 11, 12, 13
    idcg3 = 2 + 1 / L2(3) + 1 / L2(4)
    assert one(drop, "ndcg@3") == pytest.approx((1 + 1 / L2(3) + 1 / L2(4)) / idcg3, abs=1e-12)
    assert one(drop, "p@3") == 1.0
    assert one(drop, "mrr") == 1.0
    zero = run(ranking, qrels, "trec")
    assert one(zero, "ndcg@3") == pytest.approx(1 / idcg3, abs=1e-12)
    assert one(zero, "p@3") == pytest.approx(1 / 3)


def test_drop_mrr_uses_condensed_rank():
    res = run([[90, 91, 10]], {10: 1}, "judged")
    assert one(res, "mrr") == 1.0
    assert one(run([[90, 91, 10]], {10: 1}, "trec"), "mrr") == pytest.approx(1 / 3)


def test_negative_grade_is_unjudged():
    # trec_eval: a negative qrel means "in the pool but unjudged": no gain, not relevant,
    # not counted as relevant, dropped under -J. judged@k (not a trec_eval measure) counts it as
    # judged: it is a distractor (the grade -1), which a rater did grade.
    qrels = {10: -1, 11: 2, 12: 1}
    zero = run([[10, 11, 12]], qrels, "exp")
    assert one(zero, "ndcg@3") == pytest.approx((3 / L2(3) + 1 / L2(4)) / (3 + 1 / L2(3)), abs=1e-12)
    assert one(zero, "judged@3") == 1.0
    assert one(zero, "recall@3") == 1.0
    drop = run([[10, 11, 12]], qrels, "judged")
    assert one(drop, "ndcg@3") == pytest.approx(1.0, abs=1e-12)
    assert one(drop, "mrr") == 1.0
    # same as not being in the qrels at all
    other = run([[10, 11, 12]], {11: 2, 12: 1}, "exp")
    for name in METRICS:
        assert one(other, name) == one(zero, name)
    assert one(other, "judged@3") == pytest.approx(2 / 3)


def test_query_without_relevant_doc():
    for f in ALL_COMBOS:
        res = run([[10, 11, 12]], {10: 0, 11: 0}, f)
        for name in METRICS:
            assert one(res, name) == 0.0, (f, name)
        assert one(res, "judged@3") == pytest.approx(2 / 3)


def test_query_without_positive_doc_but_relevant_is_impossible_and_partial_gain():
    # grade 0.5 only: positive gain but nothing relevant -> NDCG defined, P/recall/MRR/AP 0
    res = run([[11, 10]], {10: 0.5}, "trec")
    assert one(res, "ndcg@3") == pytest.approx((0.5 / L2(3)) / 0.5, abs=1e-12)
    assert one(res, "recall@3") == 0.0 and one(res, "ap") == 0.0 and one(res, "mrr") == 0.0


def test_query_without_qrels():
    res = run([[10, 11], [10, 11]], {(1, 10): 2}, "exp", rank_query=[7, 1])
    for name in METRICS + JUDGED:
        assert one(res, name, 0) == 0.0
    assert one(res, "ndcg@3", 1) == 1.0
    assert one(res, "judged@3", 1) == pytest.approx(1 / 2)


def test_qrels_of_other_queries_do_not_leak():
    qrels = {(1, 10): 3, (2, 11): 3, (2, 10): 0}
    res = run([[10, 11], [10, 11]], qrels, "trec", rank_query=[1, 2])
    assert one(res, "ndcg@3", 0) == 1.0
    assert one(res, "ndcg@3", 1) == pytest.approx((3 / L2(3)) / 3, abs=1e-12)
    assert one(res, "judged@3", 0) == pytest.approx(1 / 2)
    assert one(res, "judged@3", 1) == 1.0


# --------------------------------------------------------------------------- short rankings, padding


def test_rankings_shorter_than_k():
    qrels = {10: 1, 11: 1, 12: 0, 13: 1, 14: 1, 15: 1, 16: 1}
    res = run([[10, 12]], qrels, "trec")
    assert one(res, "p@3") == pytest.approx(1 / 3)
    assert one(res, "p@5") == pytest.approx(1 / 5)
    assert one(res, "p@10") == pytest.approx(1 / 10)
    assert one(res, "p@100") == pytest.approx(1 / 100)
    assert one(res, "recall@100") == pytest.approx(1 / 6)
    assert one(res, "judged@3") == 1.0 and one(res, "judged@100") == 1.0
    idcg = lambda k: sum(1 / L2(i + 1) for i in range(1, min(k, 6) + 1))  # noqa: E731
    for k in CUTOFFS:
        assert one(res, f"ndcg@{k}") == pytest.approx(1 / idcg(k), abs=1e-12)


def test_padding_is_ignored():
    rq = np.array([1, 1], dtype=np.int64)
    rk = np.array([[10, 11, -1, -1, -1, -1], [10, 11, 12, -1, -1, -1]], dtype=np.int64)
    qq, qd, qg = np.array([1, 1, 1]), np.array([10, 11, 12]), np.array([2.0, 1.0, 3.0])  # grades 2, 1, 3
    for f in ALL_COMBOS:
        padded = score(rq, rk, qq, qd, qg, f)
        short = score(rq[:1], rk[:1, :2], qq, qd, qg, f)
        for name in METRICS + JUDGED:
            assert padded[name][0] == short[name][0]
        assert padded["judged@3"][0] == 1.0


def test_empty_ranking():
    rq = np.array([1, 1], dtype=np.int64)
    rk = np.array([[-1, -1], [10, -1]], dtype=np.int64)
    res = score(rq, rk, np.array([1]), np.array([10]), np.array([2.0]), FLAVOURS["exp"])
    for name in METRICS + JUDGED:
        assert res[name][0] == 0.0
    assert res["ndcg@3"][1] == 1.0
    # zero-depth and zero-row inputs
    res = score(rq, np.zeros((2, 0), dtype=np.int64), np.array([1]), np.array([10]), np.array([2.0]))
    assert all((a == 0).all() and a.shape == (2,) for a in res.values())
    res = score(
        np.zeros(0, np.int64), np.zeros((0, 5), np.int64), np.array([1]), np.array([10]), np.array([2.0])
    )
    assert all(a.shape == (0,) for a in res.values())
    res = score(rq, rk, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    assert all((a == 0).all() for a in res.values())


# --------------------------------------------------------------------------- P / recall / MRR / AP / judged@k


def test_precision_recall_mrr_ap_by_hand():
    # relevant (grade >= 1): 11, 13, 14, 20 (20 never retrieved); 12 grade 0; 99 unjudged
    qrels = {11: 1, 12: 0, 13: 3, 14: 2, 20: 1}
    res = run([[12, 11, 99, 13, 12 + 100, 14]], {**qrels, 112: 0}, "trec")
    assert one(res, "p@3") == pytest.approx(1 / 3)
    assert one(res, "p@5") == pytest.approx(2 / 5)
    assert one(res, "p@10") == pytest.approx(3 / 10)
    assert one(res, "p@100") == pytest.approx(3 / 100)
    assert one(res, "recall@3") == pytest.approx(1 / 4)
    assert one(res, "recall@5") == pytest.approx(2 / 4)
    assert one(res, "recall@10") == pytest.approx(3 / 4)
    assert one(res, "mrr") == pytest.approx(1 / 2)
    assert one(res, "ap") == pytest.approx((1 / 2 + 2 / 4 + 3 / 6) / 4, abs=1e-12)
    assert one(res, "judged@3") == pytest.approx(2 / 3)
    assert one(res, "judged@5") == pytest.approx(4 / 5)
    assert one(res, "judged@10") == pytest.approx(5 / 6)
    assert one(res, "judged@100") == pytest.approx(5 / 6)


def test_metrics_beyond_depth_100():
    # MRR and AP use the whole ranking (trec_eval without -M); cutoff metrics stop at 100.
    ranking = list(range(1000, 1119)) + [7]  # relevant doc 7 at rank 120
    res = run([ranking], {7: 2, 8: 1}, "trec")
    assert one(res, "mrr") == pytest.approx(1 / 120)
    assert one(res, "ap") == pytest.approx((1 / 120) / 2)
    assert one(res, "p@100") == 0.0 and one(res, "recall@100") == 0.0 and one(res, "ndcg@100") == 0.0
    assert one(res, "judged@100") == 0.0
    drop = run([ranking], {7: 2, 8: 1}, "judged")
    assert one(drop, "mrr") == 1.0 and one(drop, "ndcg@3") == pytest.approx(2 / (2 + 1 / L2(3)))


def test_ties_are_not_reordered():
    # order is given: equal grades are scored in the given order
    a = run([[10, 11, 12]], {10: 1, 11: 1, 12: 2}, "trec")
    b = run([[11, 10, 12]], {10: 1, 11: 1, 12: 2}, "trec")
    for name in METRICS + JUDGED:
        assert one(a, name) == one(b, name)


# --------------------------------------------------------------------------- score_all, validation


def test_score_all_matches_score():
    rng = np.random.default_rng(3)
    rq, rk, qq, qd, qg = random_problem(rng, n=40, nq=5, ndoc=30, depth=15)
    allres = score_all(rq, rk, qq, qd, qg)
    assert list(allres) == ["exp", "trec", "jk", "judged"]
    for name, f in FLAVOURS.items():
        single = score(rq, rk, qq, qd, qg, f)
        by_name = score(rq, rk, qq, qd, qg, name)
        for m in METRICS + JUDGED:
            np.testing.assert_array_equal(allres[name][m], single[m])
            np.testing.assert_array_equal(by_name[m], single[m])
    sub = score_all(rq, rk, qq, qd, qg, [FLAVOURS["judged"]])
    assert list(sub) == ["judged"]


def test_default_flavour_is_exp():
    rng = np.random.default_rng(4)
    args = random_problem(rng, n=10, nq=3, ndoc=20, depth=8)
    d = score(*args)
    e = score(*args, FLAVOURS["exp"])
    for m in METRICS:
        np.testing.assert_array_equal(d[m], e[m])


def test_invalid_input_is_rejected():
    q, d, g = np.array([1, 1]), np.array([10, 11]), np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="duplicate document"):
        score(np.array([1]), np.array([[10, 11, 10]]), q, d, g)
    with pytest.raises(ValueError, match="after -1 padding"):
        score(np.array([1]), np.array([[10, -1, 11]]), q, d, g)
    with pytest.raises(ValueError, match="duplicate qrel"):
        score(np.array([1]), np.array([[10]]), np.array([1, 1]), np.array([10, 10]), g)
    with pytest.raises(ValueError):
        score(np.array([1, 2]), np.array([[10]]), q, d, g)
    with pytest.raises(ValueError):
        score(np.array([1]), np.array([[10]]), q, d, np.array([1.0, np.nan]))
    with pytest.raises(TypeError):
        score(np.array([1]), np.array([[10.0]]), q, d, g)
    with pytest.raises(ValueError):
        score(np.array([1]), np.array([[10]]), q, d, g, "nope")


def test_chunking_and_row_order_do_not_matter(monkeypatch):
    rng = np.random.default_rng(5)
    rq, rk, qq, qd, qg = random_problem(rng, n=200, nq=12, ndoc=40, depth=14)
    base = score_all(rq, rk, qq, qd, qg, ALL_COMBOS)
    monkeypatch.setattr(metrics, "_CHUNK_CELLS", 30)
    small = score_all(rq, rk, qq, qd, qg, ALL_COMBOS)
    order = np.argsort(rq, kind="stable")
    grouped = score_all(rq[order], rk[order], qq, qd, qg, ALL_COMBOS)
    for f in base:
        for m in METRICS + JUDGED:
            np.testing.assert_allclose(small[f][m], base[f][m], rtol=0, atol=1e-15)
            np.testing.assert_allclose(grouped[f][m], base[f][m][order], rtol=0, atol=1e-15)


@pytest.fixture(params=["direct table", "binary search"])
def lookup(request, monkeypatch):
    """Run a test with each way _Qrels looks grades up (see _Qrels._direct_table)."""
    if request.param == "binary search":
        monkeypatch.setattr(judged_table, "DIRECT_TABLE_MIN", 0)
        monkeypatch.setattr(judged_table, "DIRECT_TABLE_FACTOR", 0)
    return request.param


@pytest.mark.parametrize("offset", [2**55, 2**61])
def test_large_keys(offset, lookup):
    # 2**55: packed sort does not fit -> argsort path; 2**61: combined key would overflow ->
    # dense document codes. Both must give the same numbers.
    rng = np.random.default_rng(6)
    rq, rk, qq, qd, qg = random_problem(rng, n=60, nq=6, ndoc=30, depth=12)
    base = score_all(rq, rk, qq, qd, qg, ALL_COMBOS)
    rk2 = np.where(rk >= 0, rk * 3 + offset, -1)
    big = score_all(rq * 1000 + 2**50, rk2, qq * 1000 + 2**50, qd * 3 + offset, qg, ALL_COMBOS)
    for f in base:
        for m in METRICS + JUDGED:
            np.testing.assert_allclose(big[f][m], base[f][m], rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- property test


def reference(rank_query, rankings, qrel_query, qrel_doc, qrel_grade, flavour):
    """Obviously-correct per-ranking implementation of the definitions."""
    judged_by_query: dict[int, dict[int, float]] = {}
    graded_by_query: dict[int, set[int]] = {}  # judged@k: a distractor (negative grade) was graded
    for q, d, g in zip(qrel_query.tolist(), qrel_doc.tolist(), qrel_grade.tolist(), strict=True):
        graded_by_query.setdefault(q, set()).add(d)
        if g >= 0:  # negative grade = in pool but unjudged (trec_eval)
            judged_by_query.setdefault(q, {})[d] = g

    def gain(g):
        return 2.0**g - 1.0 if flavour.gain == "exp" else g

    def disc(rank):  # 1-based
        if flavour.discount == "log2":
            return 1.0 / math.log2(rank + 1)
        return 1.0 if rank <= 2 else 1.0 / math.log2(rank)

    out = {name: [] for name in METRICS + JUDGED}
    for q, row in zip(rank_query.tolist(), rankings.tolist(), strict=True):
        judged = judged_by_query.get(q, {})
        graded = graded_by_query.get(q, set())
        docs = [d for d in row if d != -1]
        ranked = [d for d in docs if d in judged] if flavour.unjudged == "drop" else docs
        grades = [judged.get(d, 0.0) for d in ranked]
        ideal = sorted((g for g in judged.values() if g > 0), reverse=True)
        num_rel = sum(1 for g in judged.values() if g >= 1)
        for k in CUTOFFS:
            dcg = sum(gain(g) * disc(i + 1) for i, g in enumerate(grades[:k]))
            idcg = sum(gain(g) * disc(i + 1) for i, g in enumerate(ideal[:k]))
            out[f"ndcg@{k}"].append(dcg / idcg if idcg > 0 else 0.0)
            rel_k = sum(1 for g in grades[:k] if g >= 1)
            out[f"p@{k}"].append(rel_k / k)
            out[f"recall@{k}"].append(rel_k / num_rel if num_rel else 0.0)
            top = docs[:k]
            out[f"judged@{k}"].append(sum(1 for d in top if d in graded) / len(top) if top else 0.0)
        ranks = [i + 1 for i, g in enumerate(grades) if g >= 1]
        out["mrr"].append(1.0 / ranks[0] if ranks else 0.0)
        out["ap"].append(sum((j + 1) / r for j, r in enumerate(ranks)) / num_rel if num_rel else 0.0)
    return {name: np.array(v, dtype=np.float64) for name, v in out.items()}


def random_problem(rng, n, nq, ndoc, depth, grades=(0, 0, 1, 2, 3, 4, 0.5, 2.5, 1 / 3, -1)):
    qq, qd = [], []
    for q in range(nq):
        docs = rng.choice(ndoc, size=rng.integers(0, ndoc + 1), replace=False)
        qq += [q] * len(docs)
        qd += docs.tolist()
    qg = rng.choice(np.array(grades, dtype=np.float64), size=len(qq))
    rq = rng.integers(0, nq + 1, size=n)  # query nq has no qrels
    rk = np.full((n, depth), -1, dtype=np.int64)
    for i in range(n):
        length = rng.integers(0, min(depth, ndoc) + 1)
        rk[i, :length] = rng.choice(ndoc, size=length, replace=False)
    return rq.astype(np.int64), rk, np.array(qq, dtype=np.int64), np.array(qd, dtype=np.int64), qg


GRADE = st.one_of(
    st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0, 0.5, 2.5, 1 / 3, 2 / 3, 4 / 3, -1.0]),
    st.floats(min_value=0.0, max_value=4.0, allow_nan=False),
)


@st.composite
def problems(draw):
    nq = draw(st.integers(1, 4))
    ndoc = draw(st.integers(1, 130))
    qrels = draw(
        st.dictionaries(st.tuples(st.integers(0, nq - 1), st.integers(0, ndoc - 1)), GRADE, max_size=60)
    )
    n = draw(st.integers(0, 6))
    depth = draw(st.sampled_from([0, 1, 2, 3, 4, 6, 11, 12, 104, 120]))
    rq, rows = [], []
    for _ in range(n):
        rq.append(draw(st.integers(0, nq)))  # query nq has no qrels
        length = draw(st.integers(0, min(depth, ndoc)))
        docs = draw(st.permutations(range(ndoc)))[:length]
        rows.append(list(docs) + [-1] * (depth - length))
    items = sorted(qrels.items())
    return (
        np.array(rq, dtype=np.int64),
        np.array(rows, dtype=np.int64).reshape(n, depth),
        np.array([q for (q, _), _ in items], dtype=np.int64),
        np.array([d for (_, d), _ in items], dtype=np.int64),
        np.array([g for _, g in items], dtype=np.float64),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_matches_reference_implementation(problem):
    got = score_all(*problem, ALL_COMBOS)
    for f in ALL_COMBOS:
        want = reference(*problem, f)
        for name in METRICS + JUDGED:
            np.testing.assert_allclose(
                got[f.name][name], want[name], rtol=0, atol=1e-12, err_msg=f"{f.name} {name}"
            )


def test_matches_reference_on_random_arrays(lookup):
    rng = np.random.default_rng(7)
    for _ in range(5):
        problem = random_problem(rng, n=300, nq=20, ndoc=150, depth=int(rng.integers(1, 130)))
        got = score_all(*problem, ALL_COMBOS)
        for f in ALL_COMBOS:
            want = reference(*problem, f)
            for name in METRICS + JUDGED:
                np.testing.assert_allclose(
                    got[f.name][name], want[name], rtol=0, atol=1e-12, err_msg=f"{f.name} {name}"
                )


def test_the_direct_table_is_used_for_compact_keys_and_handles_shared_documents():
    rng = np.random.default_rng(8)
    problem = random_problem(rng, n=200, nq=10, ndoc=60, depth=30)
    qrels = metrics.PreparedQrels(*problem[2:])
    assert qrels.direct is not None and qrels.direct_shared  # 10 queries judge from the same 60 docs
    spread = metrics.PreparedQrels(problem[2], problem[3] * 10**9, problem[4])
    assert spread.direct is None  # keys spread too far apart: binary search


def test_threads_score_exactly_as_one(monkeypatch):
    monkeypatch.setattr(metrics, "_CHUNK_CELLS", 5000)  # many chunks for the threads to share
    rng = np.random.default_rng(5)
    n, depth = 3000, 60
    rank_query = np.sort(rng.integers(0, 300, n))
    docs = np.stack([rng.permutation(400)[:depth] for _ in range(n)])
    for row, length in enumerate(rng.integers(0, depth + 1, n)):
        docs[row, length:] = -1  # rankings of every length, padded on the right
    qrel_query = np.repeat(np.arange(300), 40)
    qrel_doc = np.concatenate([rng.permutation(400)[:40] for _ in range(300)])
    qrel_grade = rng.integers(0, 5, len(qrel_doc)) / rng.integers(1, 3, len(qrel_doc))
    one = score_all(rank_query, docs, qrel_query, qrel_doc, qrel_grade)
    two = score_all(rank_query, docs, qrel_query, qrel_doc, qrel_grade, workers=2)
    assert one.keys() == two.keys()
    for flavour in one:
        for metric in one[flavour]:
            assert np.array_equal(one[flavour][metric], two[flavour][metric]), (flavour, metric)
    assert one["exp"]["ndcg@10"].max() > 0
    # an error in any chunk still reaches the caller
    docs[-1, :2] = [7, 7]
    with pytest.raises(ValueError, match=f"ranking row {n - 1}: duplicate document key"):
        score_all(rank_query, docs, qrel_query, qrel_doc, qrel_grade, workers=2)

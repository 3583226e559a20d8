"""scoring.measures.compute against ir_measures (pytrec_eval, gdeval, the judged and msmarco providers) on
generated collections and on the trec_eval test files, and RBP against a hand-worked example."""

from __future__ import annotations

import random
from pathlib import Path

import ir_measures
import numpy as np
import pytest

from scoring.measures.compute import columns, compute
from scoring.measures.names import parse

DATA = Path(__file__).resolve().parent.parent.parent / "data" / "trec_eval"

# ir_measures computes these with pytrec_eval (trec_eval's code and tie-breaking): equal within 1e-9.
TREC_EVAL_MEASURES = [
    "nDCG@3", "nDCG@10", "nDCG@100", "nDCG", "nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10",
    "nDCG(gains={0:0,1:2,2:2,3:5,4:9})@5", "P@1", "P@5", "P(rel=2)@5", "P(rel=4)@20", "R@10", "R@1000",
    "Success@1", "Success(rel=3)@10", "RR", "RR(rel=2)", "AP", "AP(rel=2)", "AP@5", "AP(rel=3)@100",
    "R(rel=2)@10", "R(rel=4)@5", "Rprec", "Rprec(rel=2)", "Bpref", "Bpref(rel=2)", "infAP", "infAP(rel=2)",
]  # fmt: skip
# Computed by other providers, which sort ties by document id ascending (judged, msmarco, ranx).
ASCENDING_TIES_MEASURES = ["Judged@5", "Judged@100", "Judged", "RR@10", "RR(rel=2)@3"]


def trec_order(docs: dict[str, float]) -> list[str]:
    """pytrec_eval's ranking: score descending, ties by document id descending (strcmp), where pytrec_eval
    compares the scores as 32-bit floats (so 1.0 and 1.0 + 1e-12 tie there)."""
    by_id = sorted(docs, key=lambda d: d.encode(), reverse=True)
    return sorted(by_id, key=lambda d: -np.float32(docs[d]))


def double_order(docs: dict[str, float]) -> list[str]:
    """gdeval's ranking: as trec_eval's, with the scores compared as 64-bit floats."""
    return sorted(sorted(docs, key=lambda d: d.encode(), reverse=True), key=lambda d: -docs[d])


def ascending_order(docs: dict[str, float]) -> list[str]:
    return sorted(docs, key=lambda d: (-docs[d], d))


def ours(qrels, run, names, order=trec_order):
    """{qid: {measure: value}} for the run's queries, from scoring.measures.compute on integer keys."""
    measures = [parse(n) for n in names]
    doc_key: dict[str, int] = {}
    queries = sorted(set(qrels) | set(run))
    qkey = {q: i for i, q in enumerate(queries)}
    qq, qd, qg = [], [], []
    for q, docs in qrels.items():
        for d, g in docs.items():
            qq.append(qkey[q])
            qd.append(doc_key.setdefault(d, len(doc_key)))
            qg.append(float(g))
    ranked = [(q, order(docs)) for q, docs in sorted(run.items())]
    depth = max((len(r) for _, r in ranked), default=0)
    rows = np.full((len(ranked), depth), -1, dtype=np.int64)
    for i, (_, docs) in enumerate(ranked):
        rows[i, : len(docs)] = [doc_key.setdefault(d, len(doc_key)) for d in docs]
    values = compute(
        np.asarray([qkey[q] for q, _ in ranked]),
        rows,
        np.asarray(qq),
        np.asarray(qd),
        np.asarray(qg),
        measures,
    )
    names_out = columns(measures)
    return {q: dict(zip(names_out, values[i], strict=True)) for i, (q, _) in enumerate(ranked)}


def theirs(qrels, run, names):
    """ir_measures' values, one measure per call: in one call, pytrec_eval applies a gain map given for one
    nDCG to another nDCG of the same call (ir_measures 0.4.3 with pytrec-eval-terrier)."""
    found: dict[str, dict[str, float]] = {}
    for name in names:
        for metric in ir_measures.iter_calc([ir_measures.parse_measure(name)], qrels, run):
            found.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value
    return found


def assert_equal(qrels, run, names, order=trec_order, tolerance=1e-9):
    mine = ours(qrels, run, names, order)
    reference = theirs(qrels, run, names)
    assert reference, "ir_measures computed nothing"
    compared = 0
    for qid, values in reference.items():
        for name, value in values.items():
            if qid not in run:  # a query missing from the run: 0 here, as stored scores (trec_eval -c)
                assert value == 0.0, (qid, name)
                continue
            assert mine[qid][name] == pytest.approx(value, abs=tolerance), (qid, name)
            compared += 1
    # Queries of the run that ir_measures leaves out (no qrels) score 0 here, as under trec_eval -c.
    for qid in set(mine) - set(reference):
        assert qid not in qrels or not any(g > 0 for g in qrels[qid].values()) or "Judged" in str(names)
    return compared


def generated_collection(seed: int, queries: int = 60):
    """Qrels with grades -1..4 and unjudged documents; runs with ties, near-ties, short rankings, queries
    without qrels and queries without a ranking."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(1, queries + 1):
        qid = str(100 + q)
        pool = [f"d{q}-{i}" for i in range(rng.randint(1, 60))]
        if rng.random() > 0.1:  # some queries have no qrels
            judged = rng.sample(pool, rng.randint(1, len(pool)))
            weights = [0.15, 0.35, 0.2, 0.12, 0.1, 0.08] if rng.random() > 0.2 else [0.3, 0.7, 0, 0, 0, 0]
            qrels[qid] = {d: rng.choices([-1, 0, 1, 2, 3, 4], weights)[0] for d in judged}
        if rng.random() < 0.1:
            continue  # no ranking for this query
        length = rng.choice([0, 1, 2, 3, 7, 15, 40, 60]) if rng.random() < 0.3 else rng.randint(20, 60)
        docs = rng.sample(pool, min(length, len(pool))) + [
            f"x{q}-{i}" for i in range(max(0, length - len(pool)))
        ]
        if not docs:
            continue
        scores = {}
        for d in docs:
            kind = rng.random()
            if kind < 0.3:
                scores[d] = float(rng.randint(0, 5))  # ties
            elif kind < 0.4:
                scores[d] = 1.0 + rng.choice([0.0, 1e-12, 2e-12])  # near-ties
            else:
                scores[d] = rng.random()
        run[qid] = scores
    return qrels, run


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trec_eval_measures_on_generated_collections(seed):
    qrels, run = generated_collection(seed)
    assert assert_equal(qrels, run, TREC_EVAL_MEASURES) > 1000


@pytest.mark.parametrize("seed", [4, 5])
def test_other_providers_on_generated_collections(seed):
    qrels, run = generated_collection(seed)
    assert assert_equal(qrels, run, ASCENDING_TIES_MEASURES, order=ascending_order) > 100


@pytest.mark.parametrize("seed", [6, 7])
def test_err_matches_gdeval(seed):
    """gdeval prints ERR with 5 decimals, hence the tolerance; the formula is checked exactly below."""
    qrels, run = generated_collection(seed)
    assert assert_equal(qrels, run, ["ERR@5", "ERR@20"], double_order, tolerance=5.1e-6) > 50


def test_err_exactly():
    qrels = {"1": {"a": 4, "b": 1, "c": 0, "d": -1}}
    run = {"1": {"b": 3.0, "x": 2.5, "a": 2.0, "d": 1.5, "c": 1.0}}
    rb, ra = 1 / 16, 15 / 16
    expected = rb + (1 - rb) * ra / 3
    assert ours(qrels, run, ["ERR@10"])["1"]["ERR@10"] == pytest.approx(expected, abs=1e-15)
    assert ours(qrels, run, ["ERR@2"])["1"]["ERR@2"] == pytest.approx(rb, abs=1e-15)


def read_qrels(name):
    qrels: dict[str, dict[str, int]] = {}
    for line in (DATA / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            qid, _, doc, grade = line.split()
            qrels.setdefault(qid, {})[doc] = int(grade)
    return qrels


def read_run(name):
    run: dict[str, dict[str, float]] = {}
    for line in (DATA / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            fields = line.split()
            run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
    return run


@pytest.mark.parametrize(
    ("qrels_name", "run_name"),
    [("qrels.test", "results.test"), ("qrels.rel_level", "results.test"), ("qrels.test", "results.trunc")],
)
def test_trec_eval_files(qrels_name, run_name):
    qrels, run = read_qrels(qrels_name), read_run(run_name)
    assert assert_equal(qrels, run, TREC_EVAL_MEASURES) > 50
    assert assert_equal(qrels, run, ["ERR@20"], double_order, tolerance=5.1e-6)
    assert assert_equal(qrels, run, ASCENDING_TIES_MEASURES, order=ascending_order)


def test_rbp_hand_worked():
    """p = 0.5; ranking: grade 2, unjudged, grade 0, grade 4, (end). rel=1: relevant at ranks 1 and 4.
    RBP = (1 - 0.5) * (1 + 0.5**3) = 0.5625. Residual: the unjudged rank 2, 0.5 * 0.5 = 0.25, plus
    everything after the 4 documents read, 0.5**4 = 0.0625: 0.3125. Graded (g / 4): 0.5 * (0.5 + 0.125) =
    0.3125. Cut at 2: RBP = 0.5, residual 0.25 + 0.5**2 = 0.5."""
    qrels = {"1": {"a": 2, "c": 0, "d": 4}}
    run = {"1": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    got = ours(qrels, run, ["RBP(p=0.5,rel=1)", "RBP(p=0.5)", "RBP(p=0.5,rel=1)@2"])["1"]
    assert got["RBP(p=0.5,rel=1)"] == pytest.approx(0.5625, abs=1e-15)
    assert got["RBP(p=0.5,rel=1) residual"] == pytest.approx(0.3125, abs=1e-15)
    assert got["RBP(p=0.5)"] == pytest.approx(0.3125, abs=1e-15)
    assert got["RBP(p=0.5,rel=1)@2"] == pytest.approx(0.5, abs=1e-15)
    assert got["RBP(p=0.5,rel=1)@2 residual"] == pytest.approx(0.5, abs=1e-15)


def test_rbp_brute_force_on_generated_collection():
    qrels, run = generated_collection(8)
    got = ours(qrels, run, ["RBP(p=0.9,rel=2)", "RBP(p=0.7)@10"])
    for qid, docs in run.items():
        ranking = trec_order(docs)
        judged = qrels.get(qid, {})
        for name, p, rel, k in [("RBP(p=0.9,rel=2)", 0.9, 2, None), ("RBP(p=0.7)@10", 0.7, None, 10)]:
            seen = ranking[:k]
            value = residual = 0.0
            for i, d in enumerate(seen):
                g = judged.get(d, -1)
                weight = (1 - p) * p**i
                if g < 0:
                    residual += weight
                elif rel is None:
                    value += weight * g / 4
                elif g >= rel:
                    value += weight
            residual += p ** len(seen)
            assert got[qid][name] == pytest.approx(value, abs=1e-12)
            assert got[qid][name + " residual"] == pytest.approx(residual, abs=1e-12)


def test_udcg_matches_the_released_computation():
    from scoring.udcg import udcg_of_passages

    qrels = {"1": {"a": 2, "b": 0, "c": -1, "d": 1}}
    run = {"1": {"a": 5.0, "b": 4.0, "c": 3.0, "e": 2.0, "d": 1.0}}
    got = ours(qrels, run, ["UDCG@3", "UDCG@10"])["1"]
    assert got["UDCG@3"] == pytest.approx(udcg_of_passages([True, False, False], [1, 0, 1]), abs=1e-15)
    five = udcg_of_passages([True, False, False, False, True], [1, 0, 1, None, 1])
    assert got["UDCG@10"] == pytest.approx(five, abs=1e-15)


def test_bad_rankings_refused():
    measures = [parse("P@5")]
    with pytest.raises(ValueError, match="duplicate document key"):
        compute(np.array([0]), np.array([[1, 1]]), np.array([0]), np.array([1]), np.array([1.0]), measures)
    with pytest.raises(ValueError, match="after -1 padding"):
        compute(np.array([0]), np.array([[-1, 1]]), np.array([0]), np.array([1]), np.array([1.0]), measures)


def test_gain_map_read_back_from_its_canonical_name():
    """The canonical name drops g:g entries (ir_measures prints gains={0:0,1:1,2:3} as gains={2:3}): a
    grade the map leaves out keeps its own gain, so the stored name scores as the name given."""
    qrels, run = generated_collection(9)
    given = "nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10"
    canonical = parse(given).name
    assert canonical == "nDCG(gains={2:3,3:7,4:15})@10"
    assert ours(qrels, run, [given]) == ours(qrels, run, [canonical])
    assert assert_equal(qrels, run, [canonical]) > 10


def test_fractional_grades_interpolate_the_gain_map():
    measures = [parse("nDCG(gains={0:0,1:1,2:3,3:7,4:15})@1")]
    # one document of combined grade 2.5 (gain 5) ranked first; the ideal has it first too
    value = compute(
        np.array([0]), np.array([[1, 2]]), np.array([0, 0]), np.array([1, 2]), np.array([2.5, 3.0]), measures
    )
    assert value[0, 0] == pytest.approx(5 / 7)


def test_threads_and_chunks_give_the_same_numbers(monkeypatch):
    import scoring.measures.compute as module

    qrels, run = generated_collection(10)
    names = TREC_EVAL_MEASURES + ["ERR@20", "RBP(p=0.9)", "Judged@10", "UDCG@5"]
    whole = ours(qrels, run, names)
    monkeypatch.setattr(module, "_CHUNK_CELLS", 200)  # many small chunks
    monkeypatch.setitem(globals(), "compute", lambda *a, **k: module.compute(*a, **k, workers=2))
    assert ours(qrels, run, names) == whole

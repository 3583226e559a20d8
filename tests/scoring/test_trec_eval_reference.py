"""scoring.metrics against trec_eval.

(a) trec_eval's own expected outputs from its test collection (tests/data/trec_eval, copied
    from NIST's usnistgov/trec_eval repository; see README.txt and LICENSE-trec_eval.md there),
    to the 4 decimals trec_eval prints, per query and for the "all" average;
(b) pytrec_eval (trec_eval compiled as a Python extension) on the same files, to 1e-9, for
    the "trec" flavour (and "exp" with 2**g-1 written into the qrels);
(c) the "judged" flavour against pytrec_eval with judged_docs_only_flag=True (trec_eval -J).

No database, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from scoring.metrics import CUTOFFS, FLAVOURS, METRICS, score

DATA = Path(__file__).resolve().parent.parent / "data" / "trec_eval"

# trec_eval measure name -> our metric name, for what we compute.
TREC_NAMES = {
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTOFFS},
    **{f"P_{k}": f"p@{k}" for k in CUTOFFS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTOFFS},
    "recip_rank": "mrr",
    "map": "ap",
}
PYTREC_MEASURES = {
    "ndcg_cut." + ",".join(map(str, CUTOFFS)),
    "P." + ",".join(map(str, CUTOFFS)),
    "recall." + ",".join(map(str, CUTOFFS)),
    "recip_rank",
    "map",
}


# --------------------------------------------------------------------------- parsing


def data_lines(name: str):
    """Non-empty lines; since trec_eval 10.0 a line starting with '#' is a comment
    (a '#' inside a docno is not)."""
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield line.split()


def read_qrels(name: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for qid, _iter, docno, rel in data_lines(name):
        assert docno not in qrels.setdefault(qid, {})
        qrels[qid][docno] = int(rel)
    return qrels


def read_run(name: str) -> dict[str, dict[str, float]]:
    """qid -> {docno: score}; the rank column and anything after the tag are ignored."""
    run: dict[str, dict[str, float]] = {}
    for fields in data_lines(name):
        qid, docno, sim = fields[0], fields[2], float(fields[4])
        assert docno not in run.setdefault(qid, {})
        run[qid][docno] = sim
    return run


def trec_order(docs: dict[str, float]) -> list[str]:
    """trec_eval's ranking: score descending (as float64), ties broken by docno descending
    in byte (strcmp) order."""
    by_docno = sorted(docs, key=lambda d: d.encode(), reverse=True)
    return sorted(by_docno, key=lambda d: -docs[d])  # stable: keeps docno order within ties


def read_expected(name: str) -> dict[str, dict[str, float]]:
    """trec_eval output 'measure<TAB>qid|all<TAB>value' -> {qid: {measure: value}}."""
    out: dict[str, dict[str, float]] = {}
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        measure, qid, value = (x.strip() for x in line.split("\t"))
        if measure == "runid" or measure.startswith("relstring"):  # not numbers
            continue
        out.setdefault(qid, {})[measure] = float(value)
    return out


@dataclass
class Scored:
    qids: list[str]  # one per ranking row: the run's queries that have qrels
    values: dict[str, np.ndarray]

    def per_query(self) -> dict[str, dict[str, float]]:
        return {q: {m: float(self.values[m][i]) for m in METRICS} for i, q in enumerate(self.qids)}


def score_files(
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    flavour: str,
    max_docs: int | None = None,
) -> Scored:
    """Map doc ids and query ids to int keys, order the run as trec_eval does, and score
    every query that is in both the run and the qrels (trec_eval skips the others)."""
    qkey = {q: i for i, q in enumerate(sorted(set(qrels) | set(run)))}
    dkey: dict[str, int] = {}
    qq, qd, qg = [], [], []
    for q, judged in qrels.items():
        for d, g in judged.items():
            qq.append(qkey[q])
            qd.append(dkey.setdefault(d, len(dkey)))
            qg.append(float(g))
    qids = [q for q in sorted(run) if q in qrels]
    ranked = [trec_order(run[q])[:max_docs] for q in qids]
    depth = max((len(r) for r in ranked), default=0)
    rankings = np.full((len(qids), depth), -1, dtype=np.int64)
    for i, docs in enumerate(ranked):
        rankings[i, : len(docs)] = [dkey.setdefault(d, len(dkey)) for d in docs]
    values = score(
        np.array([qkey[q] for q in qids], dtype=np.int64),
        rankings,
        np.array(qq, dtype=np.int64),
        np.array(qd, dtype=np.int64),
        np.array(qg, dtype=np.float64),
        FLAVOURS[flavour],
    )
    return Scored(qids, values)


# --------------------------------------------------------------------------- (a) expected outputs


@dataclass(frozen=True)
class Case:
    out: str
    qrels: str
    run: str
    complete: bool = False  # trec_eval -c
    max_docs: int | None = None  # trec_eval -M
    measures: tuple[str, ...] | None = None  # restrict (e.g. -l2 changes P/recall/map/recip_rank)


CASES = [
    Case("out.test.aq", "qrels.test", "results.test"),
    Case("out.test.aqc", "qrels.test", "results.trunc", complete=True),
    Case("out.test.aqcM", "qrels.test", "results.trunc", complete=True, max_docs=100),
    # -l2: only ndcg_cut is independent of the relevance level (it uses raw grades as gains)
    Case("out.test.aql", "qrels.rel_level", "results.test", measures=tuple(f"ndcg_cut_{k}" for k in CUTOFFS)),
    Case("out.test.meas_params", "qrels.test", "results.test"),
    Case("out.test", "qrels.test", "results.test"),
    Case("out.test", "qrels.test.with-comments", "results.test"),
    Case("out.comment.test", "qrels.comment.test", "results.comment.test"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.out}-{c.qrels}-{c.run}")
def test_trec_eval_expected_output(case: Case):
    expected = read_expected(case.out)
    qrels, run = read_qrels(case.qrels), read_run(case.run)
    scored = score_files(qrels, run, "trec", case.max_docs)
    ours = scored.per_query()

    # trec_eval averages over the queries with both results and qrels; with -c over every
    # query of the qrels (missing ones count 0).
    n_avg = len(qrels) if case.complete else len(scored.qids)
    if "num_q" in expected["all"]:
        assert expected["all"]["num_q"] == n_avg
    ours["all"] = {m: float(scored.values[m].sum()) / n_avg for m in METRICS}
    if case.complete:  # -c -q also prints the missing queries, with every measure 0
        for qid in set(qrels) - set(run):
            ours[qid] = dict.fromkeys(METRICS, 0.0)

    checked = 0
    for qid, measures in expected.items():
        for measure, want in measures.items():
            if measure not in TREC_NAMES or (case.measures and measure not in case.measures):
                continue
            assert qid in ours, f"{qid} not scored"
            got = ours[qid][TREC_NAMES[measure]]
            assert abs(got - want) <= 0.5e-4 + 1e-9, f"{case.out} {measure} {qid}: {got} vs {want}"
            checked += 1
    # make sure the comparison covered what we expect from each file
    assert (
        checked
        == {
            "out.test.aq": 4 * 11,  # 3 queries + all; P, recall, ndcg_cut @5,10,100; recip_rank; map
            "out.test.aqc": 4 * 11,
            "out.test.aqcM": 4 * 11,
            "out.test.aql": 4 * 3,  # ndcg_cut_5,10,100
            "out.test.meas_params": 4 * 3,  # P_3, P_5, ndcg_cut_10
            "out.test": 5,  # all only: map, recip_rank, P_5, P_10, P_100
            "out.comment.test": 5,
        }[case.out]
    )


def test_tie_breaking_matters_in_comment_collection():
    """Sanity check of the test itself: the rank column of results.comment.test disagrees
    with trec_eval's order, and using it would change the numbers."""
    run = read_run("results.comment.test")
    ranks: dict[str, list[tuple[int, str]]] = {}
    for fields in data_lines("results.comment.test"):
        ranks.setdefault(fields[0], []).append((int(fields[3]), fields[2]))
    disagree = sum(
        a != b for q in run for a, b in zip(trec_order(run[q]), [d for _, d in sorted(ranks[q])], strict=True)
    )
    assert disagree > 0


# --------------------------------------------------------------------------- (b), (c) pytrec_eval


PAIRS = [
    ("qrels.test", "results.test"),
    ("qrels.rel_level", "results.test"),
    ("qrels.test", "results.trunc"),
    ("qrels.rel_level", "results.trunc"),
    ("qrels-302.test", "results-302.test"),
    ("qrels.comment.test", "results.comment.test"),
]


def pytrec(qrels, run, judged_only=False):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, judged_docs_only_flag=judged_only)
    return evaluator.evaluate(run)


def compare_with_pytrec(scored: Scored, reference: dict[str, dict[str, float]]):
    assert sorted(reference) == sorted(scored.qids)
    ours = scored.per_query()
    worst = 0.0
    for qid, measures in reference.items():
        assert set(TREC_NAMES) <= set(measures)
        for measure, name in TREC_NAMES.items():
            diff = abs(ours[qid][name] - measures[measure])
            assert diff <= 1e-9, f"{measure} {qid}: {ours[qid][name]} vs {measures[measure]}"
            worst = max(worst, diff)
    return worst


@pytest.mark.parametrize("qrels_name,run_name", PAIRS)
def test_trec_flavour_matches_pytrec_eval(qrels_name, run_name):
    qrels, run = read_qrels(qrels_name), read_run(run_name)
    compare_with_pytrec(score_files(qrels, run, "trec"), pytrec(qrels, run))


@pytest.mark.parametrize("qrels_name,run_name", PAIRS)
def test_judged_flavour_matches_pytrec_eval_judged_only(qrels_name, run_name):
    qrels, run = read_qrels(qrels_name), read_run(run_name)
    scored = score_files(qrels, run, "judged")
    compare_with_pytrec(scored, pytrec(qrels, run, judged_only=True))
    # -J really changes things on these files (unjudged docs are retrieved)
    plain = score_files(qrels, run, "trec")
    assert any(not np.array_equal(scored.values[m], plain.values[m]) for m in METRICS)


@pytest.mark.parametrize("qrels_name,run_name", PAIRS)
def test_exp_flavour_matches_pytrec_eval_with_exp_gains(qrels_name, run_name):
    """Exponential gain = trec_eval's linear gain on qrels rewritten to 2**g - 1 (integers for
    integer grades; negative grades stay negative = unjudged; g >= 1 iff 2**g - 1 >= 1)."""
    qrels, run = read_qrels(qrels_name), read_run(run_name)
    exp_qrels = {q: {d: (2**g - 1 if g >= 0 else g) for d, g in docs.items()} for q, docs in qrels.items()}
    compare_with_pytrec(score_files(qrels, run, "exp"), pytrec(exp_qrels, run))

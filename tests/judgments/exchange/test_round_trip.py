"""Round trip: trec_eval's own test files go in, come out again, and evaluate to the same numbers.

The files are trec_eval's test collection (tests/data/trec_eval, copied from ../shared/testdata).
pytrec_eval evaluates the originals and our exports; every measure of every query must be equal.
ir_measures reads the exports too, without complaint.
"""

import io
import shutil
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from django.core.management import call_command

from judgments.exchange.exports.grades import qrels_chunks
from judgments.exchange.exports.runs import run_chunks
from judgments.exchange.imports import import_qrels, import_run
from judgments.models import Pool, SearchConfiguration, Team

DATA = Path(__file__).resolve().parents[2] / "data" / "trec_eval"
SHARED = Path(__file__).resolve().parents[4] / "shared" / "testdata" / "trec_eval"
MEASURES = {
    "ndcg_cut.3,5,10,100",
    "ndcg",
    "map",
    "P.5,10,100",
    "recall.10,100",
    "recip_rank",
    "Rprec",
    "bpref",
    "num_rel_ret",
}

PAIRS = [
    ("qrels.test", "results.test", None),
    # results.trunc has junk words after the tag on some lines; our imports refuse a wrong field count, so
    # the test feeds its first six fields (what trec_eval reads) and checks the refusal elsewhere.
    ("qrels.test", "results.trunc", None),
    ("qrels.comment.test", "results.comment.test", None),
    ("qrels-302.test", "results-302.test", None),
    # -1 is "in the pool but unjudged" for trec_eval; we skip those lines, which changes no measure below
    # except bpref (it counts judged non-relevant documents), left out for this pair.
    ("qrels.rel_level", "results.test", "-1:skip"),
]


def data_file(name: str) -> Path:
    path = DATA / name
    if not path.exists():  # a fresh checkout without the copied data: take it from the shared folder
        DATA.mkdir(parents=True, exist_ok=True)
        for extra in ("README.txt", "LICENSE-trec_eval.md", name):
            if not (DATA / extra).exists():
                shutil.copyfile(SHARED / extra, DATA / extra)
    return path


def read_qrels(text: str) -> dict:
    qrels: dict = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            qid, _, docid, grade = line.split()
            qrels.setdefault(qid, {})[docid] = int(grade)
    return qrels


def read_run(text: str) -> dict:
    run: dict = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            qid, _, docid, _rank, score = line.split()[:5]
            run.setdefault(qid, {})[docid] = float(score)
    return run


def evaluate(qrels: dict, run: dict, measures=MEASURES) -> dict:
    return pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)


@pytest.fixture
def team(db):
    return Team.objects.create(name="trec")


@pytest.mark.parametrize(("qrels_name", "run_name", "grade_map"), PAIRS)
def test_exported_qrels_and_run_evaluate_like_the_originals(team, qrels_name, run_name, grade_map):
    qrels_path, run_path = data_file(qrels_name), data_file(run_name)
    pool = Pool.objects.create(name="trec")
    configuration = SearchConfiguration.objects.create(pool=pool, team=team, name="standard")
    import_qrels(pool, qrels_path.read_bytes(), name=qrels_name, grade_map=grade_map)
    run_bytes = run_path.read_bytes()
    if run_name == "results.trunc":
        run_bytes = b"".join(b" ".join(line.split()[:6]) + b"\n" for line in run_bytes.splitlines())
    run = import_run(configuration, run_bytes, name=run_name)

    exported_qrels = "".join(qrels_chunks(pool))
    exported_run = "".join(run_chunks(run))

    original_qrels = {
        q: {d: g for d, g in docs.items() if g >= 0} for q, docs in read_qrels(qrels_path.read_text()).items()
    }
    assert read_qrels(exported_qrels) == {q: docs for q, docs in original_qrels.items() if docs}
    measures = MEASURES - {"bpref"} if grade_map else MEASURES
    expected = evaluate(read_qrels(qrels_path.read_text()), read_run(run_path.read_text()), measures)
    got = evaluate(read_qrels(exported_qrels), read_run(exported_run), measures)
    assert got.keys() == expected.keys()
    for qid, values in expected.items():
        assert got[qid] == pytest.approx(values, abs=1e-12), qid


def test_exported_run_keeps_trec_eval_order_with_strictly_decreasing_scores(team):
    pool = Pool.objects.create(name="trec")
    configuration = SearchConfiguration.objects.create(pool=pool, team=team, name="standard")
    run = import_run(
        configuration, data_file("results.comment.test").read_bytes(), name="results.comment.test"
    )
    previous: dict[str, float] = {}
    ranks: dict[str, int] = {}
    for line in "".join(run_chunks(run)).splitlines():
        qid, q0, _docid, rank, score, tag = line.split(" ")
        assert (q0, tag) == ("Q0", "comment.test")
        assert int(rank) == ranks.get(qid, 0) + 1
        assert float(score) < previous.get(qid, float("inf"))
        previous[qid], ranks[qid] = float(score), int(rank)


def test_ir_measures_and_pytrec_eval_read_the_command_exports(team, tmp_path):
    pool = Pool.objects.create(name="trec")
    configuration = SearchConfiguration.objects.create(pool=pool, team=team, name="standard")
    import_qrels(pool, data_file("qrels.test").read_bytes(), name="qrels.test")
    import_run(configuration, data_file("results.test").read_bytes(), name="results.test")
    qrels_out, run_out = io.StringIO(), io.StringIO()
    call_command("export_qrels", "--pool", "trec", stdout=qrels_out)
    call_command("export_run", "--pool", "trec", "--configuration", "standard", stdout=run_out)
    (tmp_path / "exported.qrels").write_text(qrels_out.getvalue())
    (tmp_path / "exported.run").write_text(run_out.getvalue())

    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "exported.qrels")))
    run = list(ir_measures.read_trec_run(str(tmp_path / "exported.run")))
    assert len(qrels) == 3681 and len(run) == 1500
    ours = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.AP, ir_measures.P @ 10], qrels, run)
    original = ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 10, ir_measures.AP, ir_measures.P @ 10],
        ir_measures.read_trec_qrels(str(data_file("qrels.test"))),
        ir_measures.read_trec_run(str(data_file("results.test"))),
    )
    assert ours == pytest.approx(original, abs=1e-12)
    with open(tmp_path / "exported.qrels") as f:
        parsed_qrels = pytrec_eval.parse_qrel(f)
    with open(tmp_path / "exported.run") as f:
        parsed_run = pytrec_eval.parse_run(f)
    assert sum(len(docs) for docs in parsed_qrels.values()) == 3681
    assert sum(len(docs) for docs in parsed_run.values()) == 1500

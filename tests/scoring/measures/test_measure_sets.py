"""A pool's own measure set end to end: set_measures stores it and re-scores, export_scores writes the
canonical names with the same numbers as ir_measures, bad names change nothing, grades re-score
incrementally."""

import json
from io import StringIO

import ir_measures
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judgments.models import Judgment, Pool
from scoring.measure_sets import measure_set
from scoring.models import CellScore, MeasureScore, PoolMeasures

QRELS = "101 0 d1 2\n101 0 d2 0\n101 0 d5 4\n102 0 d3 4\n102 0 d4 1\n103 0 d6 3\n"
RUNS = {
    "bm25": "101 Q0 d1 1 3.0 a\n101 Q0 d2 2 2.0 a\n101 Q0 d9 3 1.5 a\n101 Q0 d5 4 1.0 a\n102 Q0 d4 1 3.0 a\n102 Q0 d3 2 2.0 a\n",
    "dense": "101 Q0 d5 1 9.0 b\n101 Q0 d1 2 8.0 b\n102 Q0 d8 1 7.0 b\n103 Q0 d6 1 5.0 b\n",
}
SET = ["nDCG@10", "P(rel=2)@5", "ERR@20", "RR", "MAP", "R@100", "Bpref", "infAP", "Success(rel=4)@1"]
SET += ["nDCG(gains={0:0,1:1,2:3,3:7,4:15})@3", "Rprec", "Judged@3", "RBP(p=0.9,rel=2)", "UDCG@5"]


def run_command(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def pool(db, tmp_path):
    return make_pool(tmp_path)


def make_pool(tmp_path):
    (tmp_path / "grades.qrels").write_text(QRELS)
    run_command("import_qrels", "--pool", "web", str(tmp_path / "grades.qrels"))
    for name, text in RUNS.items():
        (tmp_path / f"{name}.run").write_text(text)
        run_command("import_run", "--pool", "web", "--configuration", name, str(tmp_path / f"{name}.run"))
    run_command("score", "--pool", "web")
    return Pool.objects.get(name="web")


def reference() -> dict[tuple[str, str, str], float]:
    """ir_measures on the same qrels and runs (numeric query ids: gdeval, which computes ERR, needs them); a
    query missing from a run counts 0."""
    qrels = [ir_measures.Qrel(q, d, int(g)) for q, _, d, g in (line.split() for line in QRELS.splitlines())]
    out = {}
    for configuration, text in RUNS.items():
        run = [
            ir_measures.ScoredDoc(f[0], f[2], float(f[4]))
            for f in (line.split() for line in text.splitlines())
        ]
        for name in SET:
            if name.startswith(("UDCG", "RBP")):  # ours; RBP: no provider installed (test_measure_compute)
                continue
            measure = ir_measures.parse_measure(name)
            values = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
            for qid in ("101", "102", "103"):
                out[configuration, qid, str(measure)] = values.get(qid, 0.0)
    return out


def test_set_measures_then_export_matches_ir_measures(pool):
    check_set_measures_matches_ir_measures(pool)


@pytest.mark.django_db(transaction=True)
def test_set_measures_at_the_top_level_reads_ahead_and_stores_the_same(tmp_path, monkeypatch):
    """As the command runs it (no transaction around it): the rankings and CellScore rows are read ahead
    on a second connection, one query a batch, and no MeasureScore row is read back (all were deleted);
    values, means and the stored totals are the same as ir_measures and a rebuild."""
    from scoring import cells, measure_sets, services, totals
    from scoring.models import MeasureTotals

    pool = make_pool(tmp_path)
    monkeypatch.setattr(cells, "BATCH_ENTRIES", 1)  # a batch per query: three batches
    ahead = []
    real = services._ReadAhead

    def counting(load, batches):
        ahead.append(len(batches))
        return real(load, batches)

    monkeypatch.setattr(services, "_ReadAhead", counting)
    rescoring, read_back = [], []
    real_read, real_rescore = services.measure_cells.read_stored, measure_sets.rescore_pool

    def reading(*args):
        read_back.extend(rescoring)
        return real_read(*args)

    def rescore(*args, **kwargs):
        rescoring.append(kwargs)
        try:
            return real_rescore(*args, **kwargs)
        finally:
            rescoring.clear()

    monkeypatch.setattr(services.measure_cells, "read_stored", reading)
    monkeypatch.setattr(measure_sets, "rescore_pool", rescore)
    check_set_measures_matches_ir_measures(pool)
    assert ahead == [3] and read_back == []
    stored = {t.run_id: (t.n, t.sums, t.nans) for t in MeasureTotals.objects.all()}
    totals.rebuild()
    rebuilt = {t.run_id: (t.n, t.sums, t.nans) for t in MeasureTotals.objects.all()}
    assert len(stored) == 2 and stored.keys() == rebuilt.keys()
    for run_id, (n, sums, nans) in stored.items():
        assert (n, nans) == (rebuilt[run_id][0], rebuilt[run_id][2]) and len(sums) == 20
        assert sums == pytest.approx(rebuilt[run_id][1], abs=1e-12)


def check_set_measures_matches_ir_measures(pool):
    out = run_command("set_measures", "--pool", "web", *SET)
    canonical = [str(ir_measures.parse_measure(n)) if not n.startswith("UDCG") else n for n in SET]
    assert out.splitlines() == canonical
    assert [m.name for m in measure_set(pool)] == canonical
    text = run_command("export_scores", "--pool", "web", "--flavor", "trec", "--format", "jsonl")
    rows = [json.loads(line) for line in text.splitlines()]
    assert all(list(row) == ["configuration", "query", "flavor", "metric", "value", "judged"] for row in rows)
    assert len(rows) == 2 * 4 * len(SET)  # 2 configurations x (101, 102, 103, all) x measures
    assert {row["metric"] for row in rows} == set(canonical)
    assert {row["flavor"] for row in rows} == {"trec"}
    got = {(r["configuration"], r["query"], r["metric"]): r for r in rows}
    expected = reference()
    for key, value in expected.items():
        tolerance = 5.1e-6 if key[2].startswith("ERR") else 1e-9
        assert got[key]["value"] == pytest.approx(value, abs=tolerance), key
    for configuration in RUNS:
        for metric in canonical:
            mean = sum(got[configuration, q, metric]["value"] for q in ("101", "102", "103")) / 3
            assert got[configuration, "all", metric]["value"] == pytest.approx(mean, abs=1e-12)
    # judged is Judged@k of the measure's cut-off; dense ranks d5 (judged), d1 (judged) for 101
    assert got["dense", "101", "nDCG@10"]["judged"] == 1.0
    assert got["bm25", "101", "P(rel=2)@5"]["judged"] == 0.75  # d9 unjudged among 4
    assert got["bm25", "101", "AP"]["judged"] is None


def test_bad_name_exits_non_zero_with_one_line_and_keeps_the_old_set(pool):
    run_command("set_measures", "--pool", "web", "nDCG@10", "ERR@20")
    rows = MeasureScore.objects.count()
    for bad, says in [
        ("nDCG@0", "cut-off must be from 1 to 10000"),
        ("P@10001", "cut-off must be from 1 to 10000"),
        ("P(rel=5)@5", "rel must be a grade of the pool's scale"),
        ("nDCG(gains={0:0,1:1,2:3})@10", "leaves out grades 3, 4"),
        ("Foo@3", "unknown measure 'Foo'"),
        ("P(rel=2@5", "expected"),
    ]:
        with pytest.raises(CommandError) as caught:
            run_command("set_measures", "--pool", "web", "P@5", bad)
        assert says in str(caught.value) and "\n" not in str(caught.value)
        assert PoolMeasures.objects.get(pool=pool).names == ["nDCG@10", "ERR@20"]
        assert MeasureScore.objects.count() == rows


def test_default_set_is_untouched_and_reset(pool):
    before = run_command("export_scores", "--pool", "web")
    assert {json.loads(line)["metric"] for line in before.splitlines()} >= {"ndcg@10", "mrr"}
    run_command("set_measures", "--pool", "web", "nDCG@5")
    assert MeasureScore.objects.exists() and CellScore.objects.exists()
    run_command("set_measures", "--pool", "web", "--default")
    assert not MeasureScore.objects.exists() and not PoolMeasures.objects.exists()
    assert run_command("export_scores", "--pool", "web") == before


def test_one_changed_grade_updates_every_measure(pool):
    run_command("set_measures", "--pool", "web", *SET)
    from scoring.measure_reads import run_means
    from scoring.services import rescore_queries

    measures = measure_set(pool)
    runs = list(pool.configurations.values_list("runs__id", flat=True))
    before = run_means(runs, measures)
    judgment = Judgment.objects.get(pair__query__external_id="101", pair__document__external_id="d1")
    judgment.grade = 0
    judgment.save()
    rescore_queries(pool, [judgment.pair.query_id])  # what the grades_changed receiver runs
    after = run_means(runs, measures)
    changed = {name for r in runs for name in after[r].means if after[r].means[name] != before[r].means[name]}
    assert {"nDCG@10", "P(rel=2)@5", "ERR@20", "AP", "RBP(p=0.9,rel=2)"} <= changed
    # a full re-score finds nothing left to change
    text = run_command("export_scores", "--pool", "web", "--flavor", "trec")
    call_command("score", "--pool", "web", stdout=StringIO())
    assert run_command("export_scores", "--pool", "web", "--flavor", "trec") == text


def test_a_new_run_is_scored_with_the_set(pool, tmp_path):
    from judgments.models import Run
    from scoring.services import rescore_run

    run_command("set_measures", "--pool", "web", *SET)
    (tmp_path / "new.run").write_text(RUNS["bm25"].replace(" a\n", " n\n"))
    run_command("import_run", "--pool", "web", "--configuration", "new", str(tmp_path / "new.run"))
    new = Run.objects.get(configuration__name="new")
    rescore_run(new)  # what the receiver runs after the import commits
    rows = {
        (r.query.external_id, tuple(r.values))
        for r in MeasureScore.objects.filter(run=new).select_related("query")
    }
    bm25 = Run.objects.filter(configuration__name="bm25").latest("id")
    same = {
        (r.query.external_id, tuple(r.values))
        for r in MeasureScore.objects.filter(run=bm25).select_related("query")
    }
    assert len(rows) == 3 and rows == same

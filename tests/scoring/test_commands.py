"""The import, score and export commands: all or nothing, errors with file:line: field: message."""

import csv
import io
import json
from io import StringIO
from math import log2

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judgments.models import Judgment, Pool, Query, Run, SearchConfiguration, Team
from scoring import metrics
from scoring.models import CellScore, QueryScore


def run_command(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def files(tmp_path):
    paths = {
        "queries.tsv": "q1\tcheap flights\nq2\thotel deals\n",
        "queries.jsonl": '{"id": "q3", "text": "car hire", "information_need": "rent a car in Lisbon"}\n',
        "grades.qrels": "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 4\n",
        "bad.qrels": "q1 0 d1 2\nq1 0 d2\nq1 0 d3 7\n",
        "mapped.qrels": "q1 0 d1 -2\nq1 0 d2 -1\nq2 0 d3 3\n",
        "bm25.run": "q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 2 1.0 bm25\nq2 Q0 d4 1 3.0 bm25\n",
        "ties.run": "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 1.0 t\n",
        "bad.run": "q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d3 one 1.0 t\n",
    }
    for name, text in paths.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in paths}


def test_import_queries_creates_the_pool_and_the_queries(db, files):
    out = run_command("import_queries", "--pool", "web", files["queries.tsv"])
    assert "2 queries read: 2 created" in out
    run_command("import_queries", "--pool", "web", files["queries.jsonl"])
    pool = Pool.objects.get(name="web")
    assert dict(pool.queries.values_list("external_id", "text")) == {
        "q1": "cheap flights",
        "q2": "hotel deals",
        "q3": "car hire",
    }
    assert Query.objects.get(external_id="q3").information_need == "rent a car in Lisbon"


def test_import_queries_refuses_a_bad_pool_name(db, files):
    with pytest.raises(CommandError, match="may not be empty or contain whitespace"):
        run_command("import_queries", "--pool", "two words", files["queries.tsv"])
    assert not Pool.objects.exists()


def test_import_qrels_with_default_rater_and_reimport(db, files):
    out = run_command("import_qrels", "--pool", "web", files["grades.qrels"])
    assert out.startswith(f"{files['grades.qrels']}: 3 judgments read: 3 created")
    assert "rater qrels:grades.qrels" in out
    assert set(Judgment.objects.values_list("rater__username", flat=True)) == {"qrels:grades.qrels"}
    out = run_command("import_qrels", "--pool", "web", files["grades.qrels"])
    assert "0 created, 0 updated, 3 unchanged" in out


def test_import_qrels_attributes_to_an_existing_rater(db, files, rater):
    run_command("import_qrels", "--pool", "web", "--rater", rater.username, files["grades.qrels"])
    assert set(Judgment.objects.values_list("rater", flat=True)) == {rater.pk}
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        run_command("import_qrels", "--pool", "web", "--rater", "nobody", files["grades.qrels"])


def test_import_qrels_error_names_file_line_and_field_and_writes_nothing(db, files):
    with pytest.raises(CommandError) as error:
        run_command("import_qrels", "--pool", "web", files["bad.qrels"])
    lines = str(error.value).splitlines()
    path = files["bad.qrels"]
    assert lines[0] == f"{path}: 2 problems, nothing was imported:"
    assert lines[1].startswith(f"{path}:2: line: expected 4 whitespace-separated fields")
    assert lines[2].startswith(f"{path}:3: grade: grade must be an integer 0-4 or -1 (a distractor), got '7'")
    assert not Pool.objects.exists() and not Judgment.objects.exists()


def test_import_qrels_map_grades(db, files):
    run_command("import_qrels", "--pool", "web", "--map-grades=-2:0,-1:skip", files["mapped.qrels"])
    assert sorted(Judgment.objects.values_list("pair__document__external_id", "grade")) == [
        ("d1", 0),
        ("d3", 3),
    ]
    with pytest.raises(CommandError, match="--map-grades: grade map entry 1 '-1:9'"):
        run_command("import_qrels", "--pool", "web", "--map-grades=-1:9", files["mapped.qrels"])


def test_import_run_creates_configuration_in_default_team(db, files):
    out = run_command("import_run", "--pool", "web", "--configuration", "bm25", files["bm25.run"])
    configuration = SearchConfiguration.objects.get(pool__name="web", name="bm25")
    assert configuration.team.name == "default"
    run = configuration.runs.get()
    assert (run.source, run.tag, run.filename) == ("file", "bm25", "bm25.run")
    assert out.endswith(f"run {run.pk} of bm25 (tag bm25): 2 queries, 3 documents\n")


def test_import_run_team_option(db, files):
    run_command(
        "import_run", "--pool", "web", "--configuration", "bm25", "--team", "search", files["bm25.run"]
    )
    assert SearchConfiguration.objects.get(name="bm25").team.name == "search"
    run_command(
        "import_run", "--pool", "web", "--configuration", "bm25", "--team", "search", files["bm25.run"]
    )
    assert Run.objects.count() == 2
    with pytest.raises(CommandError, match="belongs to team search, not other"):
        run_command(
            "import_run", "--pool", "web", "--configuration", "bm25", "--team", "other", files["bm25.run"]
        )
    assert Run.objects.count() == 2
    assert not Team.objects.filter(name="other").exists()


def test_import_run_error_writes_nothing(db, files):
    with pytest.raises(CommandError) as error:
        run_command("import_run", "--pool", "web", "--configuration", "bm25", files["bad.run"])
    lines = str(error.value).splitlines()
    path = files["bad.run"]
    assert lines[1] == f"{path}:2: docid: doc d1 is ranked twice for query q1 (lines 1 and 2)"
    assert lines[2] == f"{path}:3: rank: rank must be an integer, got 'one'"
    assert not Pool.objects.exists() and not Run.objects.exists() and not SearchConfiguration.objects.exists()


def test_import_run_order_option(db, files):
    run_command("import_qrels", "--pool", "web", files["grades.qrels"])
    run_command("import_run", "--pool", "web", "--configuration", "by-score", files["ties.run"])
    run_command(
        "import_run", "--pool", "web", "--configuration", "by-rank", "--order", "rank", files["ties.run"]
    )
    run_command("score", "--pool", "web")
    by_score = QueryScore.objects.get(
        run__configuration__name="by-score", query__external_id="q1", flavor="trec"
    )
    by_rank = QueryScore.objects.get(
        run__configuration__name="by-rank", query__external_id="q1", flavor="trec"
    )
    # equal scores: docid descending puts d2 (grade 0) before d1 (grade 2); the rank column says d1 first
    assert (by_score.mrr, by_score.ndcg_3) == (0.5, pytest.approx(1 / log2(3)))
    assert (by_rank.mrr, by_rank.ndcg_3) == (1.0, 1.0)


def test_missing_file_is_a_clear_error(db):
    with pytest.raises(CommandError, match="Cannot read /nonexistent/x.qrels: No such file or directory"):
        run_command("import_qrels", "--pool", "web", "/nonexistent/x.qrels")


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_bar_only_on_a_terminal(db, files, terminal):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal() if terminal else StringIO()
    call_command(
        "import_run",
        "--pool",
        "web",
        "--configuration",
        "bm25",
        files["bm25.run"],
        stdout=StringIO(),
        stderr=err,
    )
    if terminal:
        assert "run" in err.getvalue() and "B" in err.getvalue()
    else:
        assert err.getvalue() == ""


def test_score_command_summary(db, files):
    run_command("import_qrels", "--pool", "web", files["grades.qrels"])
    run_command("import_run", "--pool", "web", "--configuration", "bm25", files["bm25.run"])
    CellScore.objects.all().delete()
    out, err = StringIO(), StringIO()
    call_command("score", "--pool", "web", "-v", "2", stdout=out, stderr=err)
    assert out.getvalue().startswith(
        "web: 2 cells for 1 run x 2 graded queries, 4 flavours each (2 inserted, 0 updated, 0 deleted)"
    )
    assert len(out.getvalue().splitlines()) == 1  # the result; the timings are diagnostics
    assert "read grades" in err.getvalue()
    # scores already current: nothing is written
    assert "(0 inserted, 0 updated, 0 deleted)" in run_command("score", "--pool", "web")
    CellScore.objects.update(trec_ndcg_10=-1)
    assert "(0 inserted, 2 updated, 0 deleted)" in run_command("score", "--pool", "web")
    with pytest.raises(CommandError, match="No pool named 'nope'"):
        run_command("score", "--pool", "nope")


@pytest.fixture
def scored(db, files):
    run_command("import_qrels", "--pool", "web", files["grades.qrels"])
    run_command("import_run", "--pool", "web", "--configuration", "old", files["ties.run"])
    run_command("import_run", "--pool", "web", "--configuration", "bm25", files["ties.run"])
    run_command("import_run", "--pool", "web", "--configuration", "bm25", files["bm25.run"])  # current
    run_command("score", "--pool", "web")


def test_export_scores_jsonl_rows_and_means(scored):
    rows = [json.loads(line) for line in run_command("export_scores", "--pool", "web").splitlines()]
    assert {row["flavor"] for row in rows} == {"exp"}
    assert len(rows) == 2 * 3 * len(metrics.METRICS + metrics.UDCG)  # 2 configurations x (q1, q2, all)
    assert list(rows[0]) == ["configuration", "query", "flavor", "metric", "value", "judged"]
    by_key = {(r["configuration"], r["query"], r["metric"]): r for r in rows}
    # bm25's current run ranks d1 (2), d2 (0) for q1: ideal; q2: d4 unjudged, d3 (4) missed
    assert by_key["bm25", "q1", "ndcg@10"] == {
        "configuration": "bm25",
        "query": "q1",
        "flavor": "exp",
        "metric": "ndcg@10",
        "value": 1.0,
        "judged": 1.0,
    }
    assert by_key["bm25", "q2", "ndcg@10"]["value"] == 0.0
    assert by_key["bm25", "q2", "ndcg@10"]["judged"] == 0.0
    assert by_key["bm25", "all", "ndcg@10"]["value"] == 0.5
    assert by_key["bm25", "all", "ndcg@10"]["judged"] == 0.5
    assert by_key["bm25", "q1", "mrr"]["judged"] is None
    # "old" ranks d2 (0) before d1 (2) for q1 and nothing for q2, which counts 0
    assert by_key["old", "q1", "ndcg@10"]["value"] == pytest.approx(1 / log2(3))
    assert by_key["old", "all", "ndcg@10"]["value"] == pytest.approx(1 / log2(3) / 2)
    assert [r["query"] for r in rows if r["configuration"] == "old" and r["metric"] == "ap"] == [
        "q1",
        "q2",
        "all",
    ]


def test_export_scores_csv_every_flavour(scored):
    text = run_command("export_scores", "--pool", "web", "--flavor", "all", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert set(csv.reader(io.StringIO(text)).__next__()) == {
        "configuration",
        "query",
        "flavor",
        "metric",
        "value",
        "judged",
    }
    assert {row["flavor"] for row in rows} == set(metrics.FLAVOURS)
    assert len(rows) == 4 * 2 * 3 * len(metrics.METRICS + metrics.UDCG)
    mrr = next(r for r in rows if r["metric"] == "mrr")
    assert mrr["judged"] == ""
    trec = next(
        r
        for r in rows
        if (r["configuration"], r["query"], r["flavor"], r["metric"]) == ("bm25", "q1", "trec", "ndcg@3")
    )
    assert float(trec["value"]) == 1.0


def test_export_scores_values_are_not_rounded(scored):
    rows = [
        json.loads(line)
        for line in run_command("export_scores", "--pool", "web", "--flavor", "trec").splitlines()
    ]
    old_q1 = next(r for r in rows if (r["configuration"], r["query"], r["metric"]) == ("old", "q1", "ndcg@3"))
    assert (
        old_q1["value"]
        == QueryScore.objects.get(
            run__configuration__name="old", query__external_id="q1", flavor="trec"
        ).ndcg_3
    )
    assert len(repr(old_q1["value"])) > 8


def test_command_input_gives_lines_or_the_whole_file_and_closes_it(tmp_path):
    from judgments.exchange.cli import _Lines

    path = tmp_path / "x.run"
    path.write_bytes(b"q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n")
    handle = open(path, "rb")  # noqa: SIM115 - _Lines closes it
    assert list(_Lines(handle, None)) == [b"q1 Q0 d1 1 2 t\n", b"q1 Q0 d2 2 1 t\n"] and handle.closed
    handle = open(path, "rb")  # noqa: SIM115
    assert _Lines(handle, None).read() == path.read_bytes() and handle.closed


def test_export_scores_takes_either_spelling_of_flavor(scored):
    assert run_command("export_scores", "--pool", "web", "--flavour", "trec") == run_command(
        "export_scores", "--pool", "web", "--flavor", "trec"
    )
    assert {
        json.loads(line)["flavor"]
        for line in run_command("export_scores", "--pool", "web", "--flavour", "jk").splitlines()
    } == {"jk"}

"""trec_eval's own test collection, imported through the management commands and scored by `score`.

Stored scores must equal trec_eval's expected outputs (tests/data/trec_eval/out.*, see README.txt there)
to the 4 decimals printed, and pytrec_eval (trec_eval's C code) run here on the same files to 1e-9:
flavour "trec" is `trec_eval -c -m ndcg_cut.3,5,10,100 ...`, flavour "judged" adds -J. With -c, a query
of the qrels that the run has no ranking for counts 0 in the mean, which is computed here from
pytrec_eval's per-query values (pytrec_eval itself leaves such queries out).
"""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judgments.models import Pool, Run
from scoring.leaderboard import configuration_means
from scoring.models import JUDGED_FIELDS, METRIC_FIELDS, QueryScore

pytrec_eval = pytest.importorskip("pytrec_eval")

DATA = Path(__file__).resolve().parent.parent / "data" / "trec_eval"

# trec_eval measure name -> our metric name
TREC_NAMES = {
    "ndcg_cut_3": "ndcg@3",
    "ndcg_cut_5": "ndcg@5",
    "ndcg_cut_10": "ndcg@10",
    "ndcg_cut_100": "ndcg@100",
    "P_3": "p@3",
    "P_5": "p@5",
    "P_10": "p@10",
    "P_100": "p@100",
    "recall_3": "recall@3",
    "recall_5": "recall@5",
    "recall_10": "recall@10",
    "recall_100": "recall@100",
    "recip_rank": "mrr",
    "map": "ap",
}
PYTREC_MEASURES = {"ndcg_cut.3,5,10,100", "P.3,5,10,100", "recall.3,5,10,100", "recip_rank", "map"}


def read_trec_eval_output(name: str) -> dict[tuple[str, str], float]:
    """{(our metric, qid or "all"): value} from a trec_eval output file, for the measures we keep."""
    values = {}
    for line in (DATA / name).read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        if measure in TREC_NAMES:
            values[TREC_NAMES[measure], qid] = float(value)
    return values


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            qrels.setdefault(fields[0], {})[fields[2]] = int(fields[3])
    return qrels


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
    return run


def pytrec_eval_scores(
    qrels_path: Path, run_path: Path, *, judged_only: bool
) -> dict[tuple[str, str], float]:
    """{(our metric, qid or "all"): value} by pytrec_eval, with trec_eval -c means over the qrels' queries."""
    qrels = read_qrels(qrels_path)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, judged_docs_only_flag=judged_only)
    per_query = evaluator.evaluate(read_run(run_path))
    values = {}
    for trec_name, ours in TREC_NAMES.items():
        for qid in qrels:
            values[ours, qid] = per_query[qid][trec_name] if qid in per_query else 0.0
        values[ours, "all"] = sum(values[ours, qid] for qid in qrels) / len(qrels)
    return values


def load(tmp_path, qrels: str, run: str, *, map_grades: str | None = None, pool: str = "trec") -> Run:
    """Import a qrels and a run file through the commands, then score the pool with `score`."""
    out = StringIO()
    qrels_args = [f"--map-grades={map_grades}"] if map_grades else []
    call_command("import_qrels", "--pool", pool, *qrels_args, str(DATA / qrels), stdout=out)
    run_path = DATA / run
    if run == "results.trunc":
        # Five of its lines carry words after the tag; trec_eval ignores them, our import refuses a
        # line with more than 6 fields (see test_a_run_line_with_extra_fields_is_refused), so cut them.
        run_path = tmp_path / run
        run_path.write_text("".join(" ".join(line.split()[:6]) + "\n" for line in (DATA / run).open()))
    call_command("import_run", "--pool", pool, "--configuration", "standard", str(run_path), stdout=out)
    call_command("score", "--pool", pool, stdout=out)
    return Run.objects.get(configuration__pool__name=pool, configuration__name="standard")


def stored(run: Run, flavour: str) -> dict[tuple[str, str], float]:
    """{(metric, qid or "all"): value} of the stored scores, the means as the leaderboard computes them."""
    values = {}
    names = {**METRIC_FIELDS, **JUDGED_FIELDS}
    for row in QueryScore.objects.filter(run=run, flavor=flavour).select_related("query"):
        for metric, column in names.items():
            values[metric, row.query.external_id] = getattr(row, column)
    (means,) = configuration_means(run.configuration.pool, flavour)
    for metric, value in means.current.means.items():
        values[metric, "all"] = value
    return values


def assert_matches_printed(ours: dict, expected: dict) -> None:
    assert expected, "no expected values were read"
    for key, value in expected.items():
        assert round(ours[key], 4) == pytest.approx(value, abs=1e-12), key


def assert_matches_pytrec_eval(ours: dict, reference: dict) -> None:
    for key, value in reference.items():
        assert ours[key] == pytest.approx(value, abs=1e-9, rel=0), key


@pytest.mark.parametrize("qrels", ["qrels.test", "qrels.test.with-comments"])
def test_default_measures_equal_out_test(db, tmp_path, qrels):
    run = load(tmp_path, qrels, "results.test")
    assert_matches_printed(stored(run, "trec"), read_trec_eval_output("out.test"))


def test_per_query_measures_equal_out_test_aq_and_pytrec_eval(db, tmp_path):
    run = load(tmp_path, "qrels.test", "results.test")
    trec = stored(run, "trec")
    assert_matches_printed(trec, read_trec_eval_output("out.test.aq"))
    assert_matches_printed(trec, read_trec_eval_output("out.test.meas_params"))  # P_3 is only there
    assert_matches_pytrec_eval(
        trec, pytrec_eval_scores(DATA / "qrels.test", DATA / "results.test", judged_only=False)
    )
    assert_matches_pytrec_eval(
        stored(run, "judged"),
        pytrec_eval_scores(DATA / "qrels.test", DATA / "results.test", judged_only=True),
    )


def test_query_missing_from_run_counts_zero_like_trec_eval_c(db, tmp_path):
    run = load(tmp_path, "qrels.test", "results.trunc")
    trec = stored(run, "trec")
    expected = read_trec_eval_output("out.test.aqc")
    assert ("ndcg@10", "302") in expected  # trec_eval -c -q prints the missing query with zeros
    assert_matches_printed(trec, expected)
    cut = tmp_path / "results.trunc"
    assert_matches_pytrec_eval(trec, pytrec_eval_scores(DATA / "qrels.test", cut, judged_only=False))
    assert_matches_pytrec_eval(
        stored(run, "judged"), pytrec_eval_scores(DATA / "qrels.test", cut, judged_only=True)
    )
    missing = QueryScore.objects.get(run=run, flavor="trec", query__external_id="302")
    assert missing.has_ranking is False and missing.ndcg_10 == 0.0 and missing.judged_10 == 0.0
    (means,) = configuration_means(run.configuration.pool, "trec")
    assert (means.current.n_queries, means.current.n_unranked) == (3, 1)


def test_graded_relevance_ndcg_equals_out_test_aql_and_pytrec_eval(db, tmp_path):
    # Grade -1 is trec_eval's "in the pool but not judged": skipping it on import means the same.
    run = load(tmp_path, "qrels.rel_level", "results.test", map_grades="-1:skip")
    trec = stored(run, "trec")
    expected = {
        key: value
        for key, value in read_trec_eval_output("out.test.aql").items()
        if key[0].startswith("ndcg")
    }
    assert len(expected) == 12  # ndcg_cut_5, 10, 100 for 301-303 and all (-l2 changes the others)
    assert_matches_printed(trec, expected)
    qrels = DATA / "qrels.rel_level"
    assert_matches_pytrec_eval(trec, pytrec_eval_scores(qrels, DATA / "results.test", judged_only=False))
    assert_matches_pytrec_eval(
        stored(run, "judged"), pytrec_eval_scores(qrels, DATA / "results.test", judged_only=True)
    )


def test_comment_collection_equals_out_comment_test_and_pytrec_eval(db, tmp_path):
    # 301 topics ranked, 31 judged (one with no relevant document); tied scores everywhere.
    run = load(tmp_path, "qrels.comment.test", "results.comment.test")
    trec = stored(run, "trec")
    assert_matches_printed(trec, read_trec_eval_output("out.comment.test"))
    qrels, results = DATA / "qrels.comment.test", DATA / "results.comment.test"
    assert_matches_pytrec_eval(trec, pytrec_eval_scores(qrels, results, judged_only=False))
    assert_matches_pytrec_eval(stored(run, "judged"), pytrec_eval_scores(qrels, results, judged_only=True))
    (means,) = configuration_means(run.configuration.pool, "trec")
    assert (means.current.n_queries, means.current.n_unranked, means.current.n_no_relevant) == (31, 0, 1)
    assert QueryScore.objects.filter(run=run, flavor="trec").count() == 31  # ungraded topics: no rows


def test_single_topic_302_agrees_with_pytrec_eval(db, tmp_path):
    run = load(tmp_path, "qrels-302.test", "results-302.test")
    qrels, results = DATA / "qrels-302.test", DATA / "results-302.test"
    assert_matches_pytrec_eval(stored(run, "trec"), pytrec_eval_scores(qrels, results, judged_only=False))
    assert_matches_pytrec_eval(stored(run, "judged"), pytrec_eval_scores(qrels, results, judged_only=True))


def test_a_run_line_with_extra_fields_is_refused(db):
    with pytest.raises(CommandError) as error:
        call_command(
            "import_run",
            "--pool",
            "trec",
            "--configuration",
            "standard",
            str(DATA / "results.trunc"),
            stdout=StringIO(),
        )
    lines = str(error.value).splitlines()
    assert lines[0].endswith("results.trunc: 5 problems, nothing was imported:")
    assert lines[1].endswith(
        "results.trunc:1: line: expected 6 whitespace-separated fields 'qid Q0 docid rank score tag', found 9"
    )
    assert not Run.objects.exists()
    assert not Pool.objects.filter(name="trec").exists()


def test_distractor_grades_stay_unjudged_for_trec_eval_and_count_against_in_udcg(db, tmp_path):
    """The same qrels with its 304 grades -1 kept, in a pool that has the distractor grade: they are stored
    as distractors, the "trec" and "judged" flavours still equal trec_eval and pytrec_eval on the file
    (a negative grade is "in the pool but unjudged" there), and UDCG counts them against."""
    from judgments.models import Judgment
    from scoring import metrics

    Pool.objects.create(name="trec", distractors_enabled=True)
    run = load(tmp_path, "qrels.rel_level", "results.test")
    assert Judgment.objects.filter(pair__pool__name="trec", grade=-1).count() == 304
    trec = stored(run, "trec")
    expected = {
        key: value
        for key, value in read_trec_eval_output("out.test.aql").items()
        if key[0].startswith("ndcg")
    }
    assert_matches_printed(trec, expected)
    qrels = DATA / "qrels.rel_level"
    assert_matches_pytrec_eval(trec, pytrec_eval_scores(qrels, DATA / "results.test", judged_only=False))
    assert_matches_pytrec_eval(
        stored(run, "judged"), pytrec_eval_scores(qrels, DATA / "results.test", judged_only=True)
    )
    # UDCG@10 of each query from the file itself: +1 per relevant, -gamma per -1 among the top 10.
    from judgments.models import Document, Ranking

    grades = read_qrels(qrels)
    names = dict(Document.objects.filter(pool__name="trec").values_list("pk", "external_id"))
    ranked = {r.query.external_id: r.doc_ids for r in Ranking.objects.filter(run=run).select_related("query")}
    udcg = {row.query.external_id: row.udcg_10 for row in QueryScore.objects.filter(run=run, flavor="exp")}
    assert udcg
    hit_a_distractor = False
    for qid, value in udcg.items():
        if qid not in ranked:
            assert value == 0.0
            continue
        top = [names[pk] for pk in ranked[qid][:10]]
        labels = [grades[qid].get(d) for d in top]
        hit_a_distractor |= -1 in labels
        expected_value = metrics.udcg_of_passages(
            [g is not None and g >= 1 for g in labels],
            [None if g is None else (1.0 if g >= 1 or g < 0 else 0.0) for g in labels],
        )
        assert value == pytest.approx(expected_value, abs=1e-12), qid
    assert hit_a_distractor

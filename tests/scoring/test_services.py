"""Stored scores, hand-computed: each flavour, ties, unjudged documents, missing rankings, queries
without relevant documents or without grades, combined grades (every rule, final grade, can't judge),
and the leaderboard means."""

from math import log2

import numpy as np
import pytest

from judgments import services as judgment_services
from judgments.exchange.imports import import_run
from judgments.models import Document, Pair, Pool, Query, SearchConfiguration
from scoring.grades import pool_grades
from scoring.leaderboard import configuration_means
from scoring.models import JUDGED_FIELDS, METRIC_FIELDS, CellScore, QueryScore
from scoring.services import rescore_pool

COLUMNS = {**METRIC_FIELDS, **JUDGED_FIELDS}


@pytest.fixture
def raters(db, django_user_model):
    return [django_user_model.objects.create_user(username=f"rater{i}") for i in range(4)]


def judge(pool, rater, qid, docid, grade=None, *, cant_judge=False):
    query, _ = Query.objects.get_or_create(pool=pool, external_id=qid)
    document, _ = Document.objects.get_or_create(pool=pool, external_id=docid)
    pair, _ = Pair.objects.get_or_create(pool=pool, query=query, document=document)
    judgment_services.record_judgment(
        pair, rater, grade=grade, cant_judge=cant_judge, reason="unreadable" if cant_judge else ""
    )
    return pair


def submit(configuration, rankings):
    return judgment_services.record_run(configuration, rankings, source="api")


def scores(run, flavour, qid) -> dict[str, float]:
    row = QueryScore.objects.get(run=run, flavor=flavour, query__external_id=qid)
    values = {metric: getattr(row, column) for metric, column in COLUMNS.items()}
    values["has_ranking"], values["has_relevant"] = row.has_ranking, row.has_relevant
    return values


def grades_by_doc(pool) -> dict[str, float]:
    grades = pool_grades(pool)
    names = dict(Document.objects.filter(pool=pool).values_list("pk", "external_id"))
    return {names[int(doc)]: float(grade) for doc, grade in zip(grades.doc, grades.grade, strict=True)}


# --- Flavours and metrics ------------------------------------------------------------------------------


@pytest.fixture
def graded_pool(pool, rater, configuration):
    """q1: d1=3, d2=2, d3=0, d4=1 (d4 never retrieved); the run ranks d2, d5 (unjudged), d1, d3."""
    for docid, grade in {"d1": 3, "d2": 2, "d3": 0, "d4": 1}.items():
        judge(pool, rater, "q1", docid, grade)
    run = submit(configuration, {"q1": ["d2", "d5", "d1", "d3"]})
    rescore_pool(pool)
    return run


def test_exp_flavour_exponential_gain_log_discount(graded_pool):
    s = scores(graded_pool, "exp", "q1")
    ideal3 = 7 + 3 / log2(3) + 1 / 2
    assert s["ndcg@3"] == pytest.approx((3 + 0 + 7 / 2) / ideal3, abs=1e-12)
    ideal5 = ideal3  # only three documents have a grade above 0
    assert s["ndcg@5"] == pytest.approx((3 + 7 / 2 + 0) / ideal5, abs=1e-12)
    assert s["ndcg@100"] == s["ndcg@10"] == s["ndcg@5"]


def test_trec_flavour_linear_gain_log_discount(graded_pool):
    s = scores(graded_pool, "trec", "q1")
    assert s["ndcg@3"] == pytest.approx((2 + 3 / 2) / (3 + 2 / log2(3) + 1 / 2), abs=1e-12)


def test_jk_flavour_leaves_the_first_two_ranks_undiscounted(graded_pool):
    s = scores(graded_pool, "jk", "q1")
    assert s["ndcg@3"] == pytest.approx((2 + 0 + 3 / log2(3)) / (3 + 2 + 1 / log2(3)), abs=1e-12)


def test_judged_flavour_removes_unjudged_documents_before_cutting(graded_pool):
    s = scores(graded_pool, "judged", "q1")
    # condensed list: d2, d1, d3
    assert s["ndcg@3"] == pytest.approx((2 + 3 / log2(3) + 0) / (3 + 2 / log2(3) + 1 / 2), abs=1e-12)
    assert s["p@3"] == pytest.approx(2 / 3)
    assert s["ap"] == pytest.approx((1 / 1 + 2 / 2) / 3)


def test_precision_recall_mrr_ap_and_judged_fraction(graded_pool):
    s = scores(graded_pool, "trec", "q1")
    assert (s["p@3"], s["p@5"], s["p@10"], s["p@100"]) == pytest.approx((2 / 3, 2 / 5, 2 / 10, 2 / 100))
    # three relevant (grade >= 1) documents are judged; d4 is never retrieved
    assert (s["recall@3"], s["recall@100"]) == pytest.approx((2 / 3, 2 / 3))
    assert s["mrr"] == 1.0
    assert s["ap"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    # judged@k looks at the first min(k, 4) documents of the original ranking
    assert (s["judged@3"], s["judged@5"], s["judged@100"]) == pytest.approx((2 / 3, 3 / 4, 3 / 4))
    assert s["has_ranking"] and s["has_relevant"]
    # judged@k is the same in every flavour
    assert scores(graded_pool, "judged", "q1")["judged@3"] == pytest.approx(2 / 3)


def test_unjudged_documents_count_zero_in_place_but_are_dropped_by_judged(pool, rater, configuration):
    judge(pool, rater, "q1", "d1", 2)
    run = submit(configuration, {"q1": ["x1", "x2", "d1"]})
    rescore_pool(pool)
    assert scores(run, "trec", "q1")["ndcg@3"] == pytest.approx(2 / 2 / 2)  # gain 2 at rank 3 / ideal 2
    assert scores(run, "trec", "q1")["mrr"] == pytest.approx(1 / 3)
    assert scores(run, "judged", "q1")["ndcg@3"] == 1.0
    assert scores(run, "judged", "q1")["mrr"] == 1.0
    assert scores(run, "exp", "q1")["judged@3"] == pytest.approx(1 / 3)


def test_exact_ties_follow_trec_eval_order_on_import(pool, rater, configuration):
    judge(pool, rater, "q1", "d1", 3)
    judge(pool, rater, "q1", "d2", 0)
    ties = b"q1 Q0 d1 1 1.5 t\nq1 Q0 d2 2 1.5 t\n"
    by_score = import_run(configuration, ties, name="ties.run")  # equal scores: docid descending, d2 first
    other = SearchConfiguration.objects.create(pool=pool, team=configuration.team, name="by-rank")
    by_rank = import_run(other, ties, name="ties.run", order="rank")
    rescore_pool(pool)
    assert scores(by_score, "trec", "q1")["ndcg@3"] == pytest.approx(1 / log2(3))
    assert scores(by_score, "trec", "q1")["mrr"] == 0.5
    assert scores(by_rank, "trec", "q1")["ndcg@3"] == 1.0


# --- Which queries count -------------------------------------------------------------------------------


def test_query_missing_from_a_run_scores_zero_and_is_counted(pool, rater, configuration):
    judge(pool, rater, "q1", "d1", 2)
    judge(pool, rater, "q2", "d2", 4)
    run = submit(configuration, {"q1": ["d1"]})
    rescore_pool(pool)
    missing = scores(run, "exp", "q2")
    assert missing["has_ranking"] is False and missing["has_relevant"] is True
    assert all(missing[metric] == 0.0 for metric in COLUMNS)
    (means,) = configuration_means(pool, "exp")
    assert (means.current.n_queries, means.current.n_unranked, means.current.n_no_relevant) == (2, 1, 0)
    assert means.current.means["ndcg@10"] == pytest.approx((1.0 + 0.0) / 2)


def test_query_without_relevant_document_scores_zero_and_is_counted(pool, rater, configuration):
    judge(pool, rater, "q1", "d1", 3)
    judge(pool, rater, "q2", "d1", 0)
    judge(pool, rater, "q2", "d2", 0)
    run = submit(configuration, {"q1": ["d1"], "q2": ["d1", "d2"]})
    rescore_pool(pool)
    none = scores(run, "exp", "q2")
    assert none["has_ranking"] is True and none["has_relevant"] is False
    assert (none["ndcg@10"], none["p@10"], none["recall@10"], none["mrr"], none["ap"]) == (0, 0, 0, 0, 0)
    assert none["judged@10"] == 1.0
    (means,) = configuration_means(pool, "exp")
    assert (means.current.n_queries, means.current.n_unranked, means.current.n_no_relevant) == (2, 0, 1)
    assert means.current.means["ndcg@10"] == pytest.approx(0.5)


def test_queries_without_grades_are_left_out(pool, rater, configuration):
    judge(pool, rater, "q1", "d1", 2)
    judge(pool, rater, "q2", "d1", cant_judge=True)  # can't judge is no grade
    run = submit(configuration, {"q1": ["d1"], "q2": ["d1"], "q3": ["d2"]})
    rescore_pool(pool)
    assert set(QueryScore.objects.filter(run=run).values_list("query__external_id", flat=True)) == {"q1"}
    assert QueryScore.objects.filter(run=run).count() == 4  # one row per flavour
    (means,) = configuration_means(pool, "trec")
    assert means.current.n_queries == 1


def test_rescore_pool_replaces_only_this_pools_rows(pool, rater, configuration, team):
    judge(pool, rater, "q1", "d1", 2)
    run = submit(configuration, {"q1": ["d1", "d2"]})
    other_pool = Pool.objects.create(name="other")
    judge(other_pool, rater, "q1", "d1", 1)
    other_run = submit(
        SearchConfiguration.objects.create(pool=other_pool, team=team, name="x"), {"q1": ["d1"]}
    )
    rescore_pool(other_pool)
    summary = rescore_pool(pool)
    assert (summary.runs, summary.queries, summary.rows) == (1, 1, 1)
    CellScore.objects.filter(run=run).update(exp_ndcg_10=0.123)
    rescore_pool(pool)
    assert QueryScore.objects.get(run=run, flavor="exp").ndcg_10 == 1.0
    assert QueryScore.objects.filter(run=other_run).count() == 4


def test_every_run_of_a_configuration_is_scored_not_only_the_current_one(pool, rater, configuration):
    judge(pool, rater, "q1", "d1", 2)
    judge(pool, rater, "q1", "d2", 1)
    old = submit(configuration, {"q1": ["d2", "d1"]})
    new = submit(configuration, {"q1": ["d1", "d2"]})
    rescore_pool(pool)
    assert scores(new, "trec", "q1")["ndcg@3"] == 1.0
    assert scores(old, "trec", "q1")["ndcg@3"] == pytest.approx((1 + 2 / log2(3)) / (2 + 1 / log2(3)))
    (means,) = configuration_means(pool, "trec")
    assert (means.current.run_id, means.previous.run_id) == (new.pk, old.pk)
    assert means.change("ndcg@3") == pytest.approx(1 - (1 + 2 / log2(3)) / (2 + 1 / log2(3)))
    assert means.change("judged@3") == 0.0


def test_configuration_means_lists_configurations_with_runs_by_name(
    pool, rater, configuration, other_configuration
):
    judge(pool, rater, "q1", "d1", 2)
    judge(pool, rater, "q2", "d3", 1)
    submit(other_configuration, {"q1": ["d2", "d1"]})  # q2 not ranked: scores 0, judged@k not counted
    submit(configuration, {"q1": ["d1"], "q2": ["d3"]})
    SearchConfiguration.objects.create(pool=pool, team=configuration.team, name="no-runs-yet")
    rescore_pool(pool)
    means = configuration_means(pool, "trec")
    assert [m.configuration.name for m in means] == ["bm25", "dense"]
    assert means[0].previous is None and means[0].change("ndcg@3") is None
    assert means[1].current.means["ndcg@3"] == pytest.approx(1 / log2(3) / 2)
    assert (means[1].current.n_queries, means[1].current.n_unranked) == (2, 1)
    assert means[1].current.means["judged@3"] == pytest.approx(1 / 2)  # q1 only: d2 is unjudged
    assert means[0].current.means["judged@3"] == 1.0
    assert set(means[0].current.means) == set(COLUMNS) | {"udcg@3", "udcg@5", "udcg@10", "udcg@100"}
    with pytest.raises(ValueError, match="unknown flavour"):
        configuration_means(pool, "linear")


# --- Combined grades -----------------------------------------------------------------------------------


def test_two_raters_2_and_3_combine_to_fractional_2_5_used_as_is(pool, raters, configuration):
    judge(pool, raters[0], "q1", "d1", 2)
    judge(pool, raters[1], "q1", "d1", 3)
    judge(pool, raters[0], "q1", "d2", 4)
    assert grades_by_doc(pool) == {"d1": 2.5, "d2": 4.0}
    run = submit(configuration, {"q1": ["d1", "d2"]})
    rescore_pool(pool)
    gain = 2**2.5 - 1
    assert scores(run, "exp", "q1")["ndcg@3"] == pytest.approx(
        (gain + 15 / log2(3)) / (15 + gain / log2(3)), abs=1e-12
    )
    assert scores(run, "trec", "q1")["ndcg@3"] == pytest.approx(
        (2.5 + 4 / log2(3)) / (4 + 2.5 / log2(3)), abs=1e-12
    )


@pytest.mark.parametrize(
    ("rule", "spread", "tie"),
    [
        # spread: raters 1, 2, 2, 4; tie: raters 1, 1, 3, 3
        ("mean", 2.25, 2.0),
        ("median", 2.0, 2.0),
        ("majority", 2.0, 1.0),  # most frequent; a tie goes to the lower grade
        ("min", 1.0, 1.0),
        ("max", 4.0, 3.0),
    ],
)
def test_combine_rules(pool, raters, rule, spread, tie):
    pool.combine_rule = rule
    pool.save()
    for rater, grade in zip(raters, (1, 2, 2, 4), strict=True):
        judge(pool, rater, "q1", "spread", grade)
    for rater, grade in zip(raters, (1, 1, 3, 3), strict=True):
        judge(pool, rater, "q1", "tie", grade)
    for rater, grade in zip(raters, (4, 0, 0, 4), strict=True):
        judge(pool, rater, "q1", "high-tie", grade)
    expected_high_tie = {"mean": 2.0, "median": 2.0, "majority": 0.0, "min": 0.0, "max": 4.0}[rule]
    assert grades_by_doc(pool) == {"spread": spread, "tie": tie, "high-tie": expected_high_tie}


@pytest.mark.parametrize("rule", ["mean", "median", "majority", "min", "max"])
def test_final_grade_wins_over_every_rule(pool, raters, site_admin, rule):
    pool.combine_rule = rule
    pool.save()
    pair = judge(pool, raters[0], "q1", "d1", 1)
    judge(pool, raters[1], "q1", "d1", 1)
    judgment_services.set_final_grade(pair, 4, site_admin)
    only_final = Pair.objects.create(
        pool=pool, query=pair.query, document=Document.objects.create(pool=pool, external_id="d9")
    )
    judgment_services.set_final_grade(only_final, 0, site_admin)
    assert grades_by_doc(pool) == {"d1": 4.0, "d9": 0.0}


def test_cant_judge_counts_as_no_grade(pool, raters, configuration):
    judge(pool, raters[0], "q1", "d1", 3)
    judge(pool, raters[1], "q1", "d1", cant_judge=True)
    judge(pool, raters[0], "q1", "d2", cant_judge=True)
    assert grades_by_doc(pool) == {"d1": 3.0}
    run = submit(configuration, {"q1": ["d2", "d1"]})
    rescore_pool(pool)
    assert scores(run, "exp", "q1")["judged@3"] == pytest.approx(1 / 2)  # d2 has no grade


def test_a_full_recompute_writes_only_what_differs_and_removes_stray_rows(pool, rater, configuration):
    from judgments.models import Judgment

    judge(pool, rater, "q1", "d1", 2)
    judge(pool, rater, "q2", "d2", 1)
    run = submit(configuration, {"q1": ["d1"], "q2": ["d2"]})
    first = rescore_pool(pool)
    assert (first.rows, first.inserted, first.updated, first.deleted) == (2, 2, 0, 0)
    again = rescore_pool(pool)
    assert (again.rows, again.inserted, again.updated, again.deleted) == (2, 0, 0, 0)

    CellScore.objects.filter(run=run, query__external_id="q1").update(mrr=0.5, has_relevant=False)
    Judgment.objects.filter(pair__query__external_id="q2").delete()  # q2 has no grade any more
    fixed = rescore_pool(pool)
    assert (fixed.rows, fixed.inserted, fixed.updated, fixed.deleted) == (1, 0, 1, 1)
    assert QueryScore.objects.get(run=run, query__external_id="q1", flavor="exp").mrr == 1.0
    assert QueryScore.objects.get(run=run, query__external_id="q1", flavor="judged").mrr == 1.0
    assert set(QueryScore.objects.filter(run=run).values_list("query__external_id", "flavor")) == {
        ("q1", "exp"),
        ("q1", "trec"),
        ("q1", "jk"),
        ("q1", "judged"),
    }


@pytest.mark.parametrize("rule", ["mean", "median", "majority", "min", "max"])
def test_combine_grades_matches_a_plain_python_reference(rule):
    import random
    import statistics

    import numpy as np

    from scoring.grades import NO_GRADE, combine_grades

    rng = random.Random(rule)
    rows, expected = [], {}
    for pair in range(400):
        query, doc = rng.randint(1, 30), 1000 + pair
        # -1 is the distractor grade: the lowest grade, an ordinary number to every rule.
        grades = [rng.randint(-1, 4) for _ in range(rng.choice([0, 1, 1, 2, 3, 4, 5]))]
        final = rng.choice([NO_GRADE, NO_GRADE, NO_GRADE, rng.randint(-1, 4)])
        rows += [(pair, query, doc, final, g) for g in grades] or (
            [(pair, query, doc, final, NO_GRADE)] if final != NO_GRADE else []
        )
        if final != NO_GRADE:
            expected[query, doc] = float(final)
        elif grades:
            counts = {g: grades.count(g) for g in grades}
            expected[query, doc] = float(
                {
                    "mean": statistics.fmean(grades),
                    "median": statistics.median(grades),
                    "majority": min(g for g in counts if counts[g] == max(counts.values())),
                    "min": min(grades),
                    "max": max(grades),
                }[rule]
            )
    rng.shuffle(rows)
    columns = [np.array(column, dtype=np.int64) for column in zip(*rows, strict=True)]
    combined = combine_grades(*columns, rule=rule)
    assert list(combined.query) == sorted(combined.query)
    got = {
        (int(q), int(d)): float(g)
        for q, d, g in zip(combined.query, combined.doc, combined.grade, strict=True)
    }
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("others", "reads"), [(1, "BETWEEN"), (12, "IN (SELECT")]
)  # pairs close together or not
def test_pool_grades_ignore_other_pools_judgments_between_this_pools_pairs(
    pool, raters, site_admin, team, others, reads, monkeypatch
):
    import scoring.grades

    statements = []
    copy_columns = scoring.grades.read_columns
    monkeypatch.setattr(
        scoring.grades,
        "read_columns",
        lambda c, sql, *a: statements.append(sql) or copy_columns(c, sql, *a),
    )
    other = Pool.objects.create(name="neighbour")
    judge(pool, raters[0], "q1", "d1", 3)
    for i in range(others):  # pairs of another pool created in between
        judge(other, raters[0], "q1", f"x{i}", 4)
    judge(pool, raters[0], "q1", "d2", 2)
    judge(pool, raters[1], "q1", "d2", 3)
    judge(pool, raters[0], "q2", "d3", 0)
    final_only = Pair.objects.create(
        pool=pool,
        query=Query.objects.get(pool=pool, external_id="q2"),
        document=Document.objects.get(external_id="d1"),
    )
    judgment_services.set_final_grade(final_only, 4, site_admin)
    judge(pool, raters[0], "q2", "d2", cant_judge=True)
    grades = pool_grades(pool)
    assert reads in statements[-1]
    names = dict(Query.objects.filter(pool=pool).values_list("pk", "external_id"))
    docs = dict(Document.objects.filter(pool=pool).values_list("pk", "external_id"))
    got = {
        (names[int(q)], docs[int(d)]): float(g)
        for q, d, g in zip(grades.query, grades.doc, grades.grade, strict=True)
    }
    assert got == {("q1", "d1"): 3.0, ("q1", "d2"): 2.5, ("q2", "d3"): 0.0, ("q2", "d1"): 4.0}
    assert list(grades.query) == sorted(grades.query)
    assert len(pool_grades(other)) == others


@pytest.mark.parametrize("rule", ["mean", "median", "majority", "min", "max"])
def test_whole_pool_grades_equal_the_per_query_path(pool, raters, site_admin, rule):
    """pool_grades(pool) reads pairs and judgments apart (and sums per pair for the mean); with
    query_ids it joins in SQL and combines with combine_grades: both must give the same grades."""
    import random

    rng = random.Random(11)
    for q in range(8):
        for d in range(10):
            for rater in rng.sample(raters, rng.randint(0, len(raters))):
                if rng.random() < 0.1:
                    judge(pool, rater, f"q{q}", f"d{d}", cant_judge=True)
                else:
                    judge(pool, rater, f"q{q}", f"d{d}", rng.randint(0, 4))
            if rng.random() < 0.1:
                pair = Pair.objects.filter(
                    pool=pool, query__external_id=f"q{q}", document__external_id=f"d{d}"
                )
                if pair.exists():
                    judgment_services.set_final_grade(pair.get(), rng.randint(0, 4), site_admin)
    pool.combine_rule = rule
    pool.save()
    whole = pool_grades(pool)
    per_query = pool_grades(pool, Query.objects.filter(pool=pool).values_list("pk", flat=True))
    assert len(whole) > 40
    for column in ("query", "doc", "grade"):
        assert np.array_equal(getattr(whole, column), getattr(per_query, column)), column


# --- Storage: one CellScore row per (run, query), read per flavour through the QueryScore view ----------


def test_the_view_shows_each_flavour_from_one_stored_row(graded_pool):
    cell = CellScore.objects.get(run=graded_pool)
    assert QueryScore.objects.filter(run=graded_pool).count() == 4
    for flavour in ("exp", "trec", "jk", "judged"):
        row = QueryScore.objects.get(run=graded_pool, flavor=flavour)
        assert row.ndcg_10 == getattr(cell, f"{flavour}_ndcg_10")
        assert row.judged_10 == cell.judged_10
        # P, recall, MRR and AP: kept-unjudged columns, or the condensed ones for "judged"
        prefix = "c_" if flavour == "judged" else ""
        assert (row.p_3, row.ap) == (getattr(cell, f"{prefix}p_3"), getattr(cell, f"{prefix}ap"))
    # d5 (rank 2) is unjudged: removing it moves d1 (relevant) from rank 3 to rank 2; 3 relevant in all
    assert (cell.ap, cell.c_ap) == (pytest.approx((1 + 2 / 3) / 3), pytest.approx((1 + 1) / 3))


def test_deleting_runs_or_queries_by_any_means_removes_their_scores(pool, rater, configuration, team):
    from django.db import connection

    judge(pool, rater, "q1", "d1", 2)
    judge(pool, rater, "q2", "d2", 1)
    run = submit(configuration, {"q1": ["d1"], "q2": ["d2"]})
    other = submit(SearchConfiguration.objects.create(pool=pool, team=team, name="x"), {"q1": ["d1"]})
    rescore_pool(pool)
    assert CellScore.objects.count() == 4
    with connection.cursor() as cursor:  # plain SQL: no Django cascade, the trigger does it
        cursor.execute("DELETE FROM judgments_ranking WHERE run_id = %s", [other.pk])
        cursor.execute("DELETE FROM judgments_run WHERE id = %s", [other.pk])
    assert set(CellScore.objects.values_list("run_id", flat=True)) == {run.pk}
    Query.objects.filter(pool=pool, external_id="q2").delete()  # the ORM: Django's cascade
    assert list(CellScore.objects.values_list("query__external_id", flat=True)) == ["q1"]
    run.delete()
    assert not CellScore.objects.exists() and not QueryScore.objects.exists()


def test_delete_pool_in_bulk_removes_the_pool_and_everything_in_it(pool, rater, configuration, team):
    """judgments.services.delete_pool_in_bulk (the benchmarks' clean-up): every row of the pool goes,
    scores and judgment history included; another pool is untouched."""
    from judgments.models import Judgment, JudgmentChange, Ranking, Run

    judge(pool, rater, "q1", "d1", 2)
    judge(pool, rater, "q1", "d1", 3)  # a second history row
    submit(configuration, {"q1": ["d1", "d2"]})
    other = Pool.objects.create(name="other")
    judge(other, rater, "q9", "d9", 1)
    other_run = submit(SearchConfiguration.objects.create(pool=other, team=team, name="x"), {"q9": ["d9"]})
    rescore_pool(pool)
    rescore_pool(other)
    assert JudgmentChange.objects.filter(pair__pool=pool).count() == 2

    judgment_services.delete_pool_in_bulk(pool)
    assert not Pool.objects.filter(pk=pool.pk).exists()
    assert set(Document.objects.values_list("pool__name", flat=True)) == {"other"}
    assert set(Query.objects.values_list("pool__name", flat=True)) == {"other"}
    assert set(Pair.objects.values_list("pool__name", flat=True)) == {"other"}
    assert Judgment.objects.count() == JudgmentChange.objects.count() == 1
    assert set(Run.objects.values_list("pk", flat=True)) == {other_run.pk}
    assert set(Ranking.objects.values_list("run_id", flat=True)) == {other_run.pk}
    assert set(CellScore.objects.values_list("run_id", flat=True)) == {other_run.pk}
    assert SearchConfiguration.objects.filter(pool_id=pool.pk).count() == 0

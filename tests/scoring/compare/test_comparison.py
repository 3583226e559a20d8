"""The comparison service reads stored scores: its figures equal plain Python over the QueryScore rows,
its t-test equals scipy's, and its randomization test and bootstrap agree with independent
implementations within Monte-Carlo error (fixed seeds)."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from judgments import services
from judgments.models import Document, Pair
from scoring import comparison, side_by_side, stats

from ..test_stats import independent_permutation_p, mc_tolerance
from .conftest import db_mean, paired_arrays, rows_of

# --- Leaderboard ---------------------------------------------------------------------------------------


def test_leaderboard_means_equal_the_stored_rows(scored):
    rows = {row.configuration.name: row for row in comparison.leaderboard(scored.pool, "exp")}
    for name, run in (("bm25", scored.bm25_run), ("dense", scored.dense_run), ("hybrid", scored.hybrid_run)):
        row = rows[name]
        assert row.run_id == run.pk
        assert row.run_created_at == run.created_at
        for metric in comparison.LEADERBOARD_METRICS:
            field = "ndcg_" + metric.split("@")[1]
            assert row.mean(metric) == pytest.approx(db_mean(run, field), abs=1e-12)
        # judged@10: over the queries the run ranked.
        assert row.judged("judged@10") == pytest.approx(
            db_mean(run, "judged_10", ranked_only=True), abs=1e-12
        )
        stored = rows_of(run)
        assert row.current.n_queries == len(stored)
        assert row.current.n_unranked == sum(not s.has_ranking for s in stored.values())
    assert rows["dense"].current.n_unranked == 3
    assert rows["hybrid"].current.n_queries == 38


def test_leaderboard_change_is_current_minus_previous_run(scored):
    rows = {row.configuration.name: row for row in comparison.leaderboard(scored.pool, "exp")}
    expected = db_mean(scored.bm25_run, "ndcg_10") - db_mean(scored.bm25_old_run, "ndcg_10")
    assert rows["bm25"].previous_run_id == scored.bm25_old_run.pk
    assert rows["bm25"].change("ndcg@10") == pytest.approx(expected, abs=1e-12)
    assert rows["dense"].change("ndcg@10") is None  # first run


def test_leaderboard_is_sorted_by_ndcg10_and_lists_configurations_without_run(scored, team):
    from judgments.models import SearchConfiguration

    SearchConfiguration.objects.create(pool=scored.pool, team=team, name="aaa-new")
    rows = comparison.leaderboard(scored.pool, "exp")
    scored_rows = [r for r in rows if r.current]
    means = [r.mean("ndcg@10") for r in scored_rows]
    assert means == sorted(means, reverse=True)
    assert rows[-1].configuration.name == "aaa-new" and rows[-1].current is None and rows[-1].run_id is None


def test_leaderboard_reads_the_chosen_flavour(scored):
    trec = {r.configuration.name: r for r in comparison.leaderboard(scored.pool, "trec")}
    exp = {r.configuration.name: r for r in comparison.leaderboard(scored.pool, "exp")}
    assert trec["bm25"].mean("ndcg@10") == pytest.approx(
        db_mean(scored.bm25_run, "ndcg_10", "trec"), abs=1e-12
    )
    assert trec["bm25"].mean("ndcg@10") != pytest.approx(exp["bm25"].mean("ndcg@10"), abs=1e-6)


def test_unknown_flavour_is_refused(scored):
    with pytest.raises(comparison.ComparisonError):
        comparison.leaderboard(scored.pool, "nonsense")


def test_leaderboard_reads_stored_scores_in_a_constant_number_of_queries(
    scored, team, django_assert_num_queries
):
    # configurations, newest runs, their stored totals (scoring.totals: one row per run)
    with django_assert_num_queries(3):
        comparison.leaderboard(scored.pool, "exp")
    from judgments.models import Run, SearchConfiguration

    for i in range(5):
        extra = SearchConfiguration.objects.create(pool=scored.pool, team=team, name=f"more-{i}")
        Run.objects.create(configuration=extra, source="api")
        Run.objects.create(configuration=extra, source="api")
    with django_assert_num_queries(3):
        comparison.leaderboard(scored.pool, "exp")


def test_configuration_history_lists_every_run_with_its_means(scored):
    points = comparison.configuration_history(scored.bm25, "exp")
    assert [p.run.pk for p in points] == [scored.bm25_old_run.pk, scored.bm25_run.pk]
    for p in points:
        assert p.summary.means["ndcg@10"] == pytest.approx(db_mean(p.run, "ndcg_10"), abs=1e-12)
        assert p.summary.means["ap"] == pytest.approx(db_mean(p.run, "ap"), abs=1e-12)


# --- Two configurations --------------------------------------------------------------------------------


def test_compare_pair_pairs_the_queries_both_have_a_row_for(scored):
    result = comparison.compare_pair(scored.bm25, scored.hybrid, "exp")
    a, b, common = paired_arrays(scored.bm25_run, scored.hybrid_run, "ndcg_10")
    assert result.n == len(common) == 38
    assert result.only_a == 2 and result.only_b == 0
    assert result.query_ids.tolist() == common
    headline = result.headline.result
    assert headline.mean_a == pytest.approx(a.mean(), abs=1e-12)
    assert headline.mean_b == pytest.approx(b.mean(), abs=1e-12)
    assert headline.diff == pytest.approx((b - a).mean(), abs=1e-12)
    assert (headline.wins, headline.ties, headline.losses) == (
        int((b - a > 1e-12).sum()),
        int((abs(b - a) <= 1e-12).sum()),
        int((b - a < -1e-12).sum()),
    )


@pytest.mark.parametrize("metric", ["ndcg@3", "ndcg@5", "ndcg@10", "ndcg@100", "ap"])
def test_paired_t_test_equals_scipy(scored, metric):
    result = comparison.compare_pair(scored.bm25, scored.dense, "exp", metric=metric)
    row = next(r for r in result.rows if r.metric == metric)
    field = comparison.SCORE_FIELDS[metric]
    a, b, _ = paired_arrays(scored.bm25_run, scored.dense_run, field)
    reference = scipy.stats.ttest_rel(b, a)
    assert row.result.p_t == pytest.approx(reference.pvalue, rel=1e-9)


def test_randomization_p_agrees_with_an_independent_permutation_test(scored):
    result = comparison.compare_pair(
        scored.bm25, scored.hybrid, "exp", metrics=("ndcg@3", "ndcg@10", "ndcg@100")
    )
    for row in result.rows:
        field = comparison.SCORE_FIELDS[row.metric]
        a, b, _ = paired_arrays(scored.bm25_run, scored.hybrid_run, field)
        reference = independent_permutation_p(a, b, 200_000, seed=7)
        p = row.result.p_randomization
        assert abs(p - reference) <= mc_tolerance(reference, stats.N_RESAMPLES, 200_000), (
            row.metric,
            p,
            reference,
        )


def test_bootstrap_intervals_agree_with_an_independent_bootstrap(scored):
    result = comparison.compare_pair(scored.bm25, scored.dense, "exp")
    a, b, _ = paired_arrays(scored.bm25_run, scored.dense_run, "ndcg_10")
    rng = np.random.default_rng(99)
    idx = rng.integers(0, len(a), size=(40_000, len(a)))
    ma, mb = a[idx].mean(axis=1), b[idx].mean(axis=1)
    reference = {
        "ci_a": np.quantile(ma, [0.025, 0.975]),
        "ci_b": np.quantile(mb, [0.025, 0.975]),
        "ci_diff": np.quantile(mb - ma, [0.025, 0.975]),
    }
    spread = {"ci_a": a.std(), "ci_b": b.std(), "ci_diff": (b - a).std()}
    headline = result.headline.result
    for name, ref in reference.items():
        # Monte-Carlo error of a 2.5% / 97.5% endpoint: ~0.03 standard errors of the mean at 10,000 resamples.
        tolerance = 0.15 * spread[name] / math.sqrt(len(a))
        assert getattr(headline, name) == pytest.approx(tuple(ref), abs=tolerance), name


def test_sentence_names_the_winner_the_metric_and_its_flavour(scored):
    result = comparison.compare_pair(scored.bm25, scored.dense, "exp")
    headline = result.headline.result
    assert headline.significant()
    sentence = result.sentence()
    assert sentence.startswith("dense beats bm25 on NDCG@10 (exp) by ")
    assert f"{result.n:,} queries" in sentence


def test_low_judged_flags_configurations_below_90_percent(scored):
    result = comparison.compare_pair(scored.bm25, scored.hybrid, "exp")
    flagged = [c.name for c, _ in result.low_judged()]
    assert flagged == ["hybrid"]
    assert result.judged_b == pytest.approx(
        db_mean(scored.hybrid_run, "judged_10", ranked_only=True), abs=1e-12
    )


def test_compare_pair_refuses_a_configuration_without_run(scored, team):
    from judgments.models import SearchConfiguration

    empty = SearchConfiguration.objects.create(pool=scored.pool, team=team, name="empty")
    with pytest.raises(comparison.ComparisonError, match="No run yet for empty"):
        comparison.compare_pair(scored.bm25, empty, "exp")


# --- More than two: the matrix -------------------------------------------------------------------------


def test_matrix_differences_and_holm_corrected_p_values(scored):
    configurations = [scored.bm25, scored.dense, scored.hybrid]
    matrix = comparison.pairwise_matrix(configurations, "exp")
    runs = {
        scored.bm25.pk: scored.bm25_run,
        scored.dense.pk: scored.dense_run,
        scored.hybrid.pk: scored.hybrid_run,
    }
    assert [c.name for c in matrix.configurations] == sorted(
        [c.name for c in configurations],
        key=lambda name: -matrix.means[{c.name: c.pk for c in configurations}[name]],
    )
    pairs = []
    for x, y in itertools.combinations(matrix.configurations, 2):
        cell, mirror = matrix.cell(x, y), matrix.cell(y, x)
        a, b, common = paired_arrays(runs[y.pk], runs[x.pk], "ndcg_10")  # row x minus column y
        assert cell.n == len(common)
        assert cell.diff == pytest.approx((b - a).mean(), abs=1e-12)
        assert mirror.diff == pytest.approx(-cell.diff, abs=1e-12)
        assert cell.p_t == pytest.approx(scipy.stats.ttest_rel(b, a).pvalue, rel=1e-9)
        reference = independent_permutation_p(a, b, 100_000, seed=17)
        assert abs(cell.p_randomization - reference) <= mc_tolerance(reference, stats.N_RESAMPLES, 100_000)
        pairs.append(cell)
    # Holm by hand: sort, multiply by (m - i), running max, cap at 1.
    p = np.array([c.p_randomization for c in pairs])
    order = np.argsort(p)
    adjusted = np.minimum(np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))), 1.0)
    expected = np.empty_like(p)
    expected[order] = adjusted
    assert [c.p_holm for c in pairs] == pytest.approx(expected.tolist())
    assert all(c.p_holm >= c.p_randomization for c in pairs)


def test_matrix_needs_two_configurations(scored):
    with pytest.raises(comparison.ComparisonError):
        comparison.pairwise_matrix([scored.bm25], "exp")


# --- One query --------------------------------------------------------------------------------------


def test_query_comparison_shows_both_rankings_with_combined_grades(
    pool, configuration, other_configuration, engineer, rater, other_rater, site_admin
):
    run_a = services.record_run(configuration, {"q1": ["d1", "d2", "d3"]}, source="api")
    run_b = services.record_run(other_configuration, {"q1": ["d3", "d1"]}, source="api")
    query = pool.queries.get(external_id="q1")
    d1, d2, d3 = (Document.objects.get(pool=pool, external_id=d) for d in ("d1", "d2", "d3"))
    p1 = Pair.objects.create(pool=pool, query=query, document=d1)
    p3 = Pair.objects.create(pool=pool, query=query, document=d3)
    services.record_judgment(p1, rater, grade=3)
    services.record_judgment(p1, other_rater, grade=2)  # mean 2.5
    services.record_judgment(p3, rater, grade=1)
    services.set_final_grade(p3, 4, site_admin)  # the admin's grade wins
    view = side_by_side.query_comparison(configuration, other_configuration, query, "exp", depth=10)
    assert view.a.run == run_a and view.b.run == run_b
    assert [(d.document.external_id, d.grade, d.other_rank) for d in view.a.ranking] == [
        ("d1", 2.5, 2),
        ("d2", None, None),
        ("d3", 4.0, 1),
    ]
    assert [d.grade_class for d in view.a.ranking] == ["g3", "unjudged", "g4"]
    assert [d.document.external_id for d in view.b.ranking] == ["d3", "d1"]
    assert view.a.length == 3 and view.b.ranked


@pytest.mark.parametrize(
    "grade, css", [(-0.5, "g-1"), (-1.0, "g-1"), (0.0, "g0"), (2.5, "g3"), (None, "unjudged")]
)
def test_grade_colours_round_as_the_exports_do_a_negative_grade_is_a_distractor(grade, css):
    from scoring.live import LiveDocument
    from scoring.side_by_side import RankedDocument

    assert RankedDocument(1, None, grade, None).grade_class == css
    assert LiveDocument(1, "d1", None, None, grade, None).grade_class == css

"""Tests for scoring.stats without a database (scipy, exact enumeration and plain loops are the references).

The helpers exact_sign_flip_p, independent_permutation_p and mc_tolerance serve tests/scoring/compare too."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from scoring import stats
from scoring.stats import (
    N_RESAMPLES,
    Comparison,
    bootstrap_means,
    compare_many,
    default_n_bootstrap,
    holm,
    paired_t_test,
    percentile_intervals,
    randomization_pvalues,
    student_t_sf,
    wins_ties_losses,
)


def _pairs(seed, n, effect=0.0, noise=0.2):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = np.clip(a + rng.normal(effect, noise, n), 0.0, 1.0)
    return a, b


def _mc_tolerance(p, n_resamples):
    return 4.0 * math.sqrt(p * (1.0 - p) / n_resamples) + 0.005


def mc_tolerance(p, *resamples, z=4.5):
    """z standard errors of the difference of two Monte-Carlo estimates of p (plus the +1 of the estimator)."""
    return z * math.sqrt(max(p * (1 - p), 1e-4) * sum(1 / r for r in resamples)) + 2 / min(resamples)


def exact_sign_flip_p(d):
    """Two-sided sign-flip test by full enumeration of the 2^n sign patterns (small n)."""
    d = np.asarray(d, dtype=float)
    observed = abs(d.sum())
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(d))))
    sums = np.abs(signs @ d)
    return float(np.mean(sums >= observed - 1e-12))


def independent_permutation_p(a, b, n_resamples, seed):
    """Sign-flip permutation test written independently: random ±1 matrix, mean of the flipped differences."""
    d = np.asarray(b) - np.asarray(a)
    rng = np.random.Generator(np.random.PCG64DXSM(seed))
    count = 0
    for start in range(0, n_resamples, 5000):
        size = min(5000, n_resamples - start)
        signs = rng.choice((-1.0, 1.0), size=(size, len(d)))
        count += int(np.sum(np.abs(signs @ d) >= abs(d.sum()) - 1e-12))
    return (count + 1) / (n_resamples + 1)


def _column(x):
    return np.asarray(x, dtype=np.float64).reshape(-1, 1)


def paired_randomization_test(a, b, *, n_resamples=N_RESAMPLES, seed=0):
    """The randomization test of one metric: stats.randomization_pvalues on a single column."""
    return float(randomization_pvalues(_column(b) - _column(a), n_resamples=n_resamples, seed=seed)[0])


def bootstrap_ci(x, *, n_resamples=N_RESAMPLES, confidence=0.95, seed=0):
    """The percentile bootstrap interval of one column's mean."""
    means = bootstrap_means(_column(x), n_resamples=n_resamples, seed=seed)
    low, high = percentile_intervals(means, confidence)[:, 0]
    return float(low), float(high)


def compare(a, b, **options):
    """stats.compare_many on a single column."""
    (result,) = compare_many(_column(a), _column(b), **options)
    return result


# ---------------------------------------------------------------------------
# paired t-test
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 10, 31, 200, 5000])
@pytest.mark.parametrize("seed", range(6))
def test_t_test_matches_scipy(n, seed):
    rng = np.random.default_rng(1000 * n + seed)
    effect = rng.choice([0.0, 0.01, 0.05, 0.3])
    a, b = _pairs(seed, n, effect=effect, noise=rng.choice([0.05, 0.2, 0.5]))
    t, p = paired_t_test(a, b)
    ref = scipy.stats.ttest_rel(b, a)
    assert t == pytest.approx(ref.statistic, rel=1e-10, abs=1e-10)
    assert p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-10)


def test_t_test_direction_and_lists():
    t, p = paired_t_test([0.1, 0.2, 0.3, 0.4], [0.2, 0.4, 0.35, 0.5])
    ref = scipy.stats.ttest_rel([0.2, 0.4, 0.35, 0.5], [0.1, 0.2, 0.3, 0.4])
    assert t > 0
    assert (t, p) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 9, 30, 99, 1000, 4999, 100_000])
def test_student_t_tail_matches_scipy(df):
    for t in [0.0, 1e-9, 1e-4, 0.1, 0.5, 1.0, 1.96, 2.5, 3.3, 5.0, 8.0, 15.0, 40.0, 1e3]:
        expected = 2.0 * scipy.stats.t.sf(t, df)
        got = student_t_sf(t, df)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), (t, df)
        assert student_t_sf(-t, df) == got


def test_t_test_tiny_p_value():
    a, b = _pairs(7, 5000, effect=0.1, noise=0.2)
    t, p = paired_t_test(a, b)
    ref = scipy.stats.ttest_rel(b, a)
    assert p < 1e-100
    assert p == pytest.approx(ref.pvalue, rel=1e-8)


def test_t_test_degenerate():
    assert paired_t_test([0.3, 0.5, 0.7], [0.3, 0.5, 0.7]) == (0.0, 1.0)
    assert paired_t_test([0.5] * 4, [0.5] * 4) == (0.0, 1.0)
    for a, b in ([[0.3], [0.5]], [[], []]):
        t, p = paired_t_test(a, b)
        assert math.isnan(t) and math.isnan(p)
    assert paired_t_test([0.0, 0.25, 0.5], [0.5, 0.75, 1.0]) == (math.inf, 0.0)
    assert paired_t_test([0.5, 0.75, 1.0], [0.0, 0.25, 0.5]) == (-math.inf, 0.0)


def test_input_validation():
    with pytest.raises(ValueError):
        paired_t_test([0.1, 0.2], [0.1])
    with pytest.raises(ValueError):
        paired_t_test([0.1, float("nan")], [0.1, 0.2])
    with pytest.raises(ValueError):
        randomization_pvalues(np.zeros((2, 1)), n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_means(np.zeros((2, 1)), n_resamples=0)
    with pytest.raises(ValueError):
        percentile_intervals(np.zeros((5, 1)), confidence=1.0)
    with pytest.raises(ValueError):
        compare_many(np.zeros((3, 2)), np.zeros((3, 1)))


# ---------------------------------------------------------------------------
# randomization test
# ---------------------------------------------------------------------------


def _loop_sign_flip_p(a, b, n_resamples, seed):
    """Independent reference: one resample at a time, plain loop."""
    d = np.asarray(b, float) - np.asarray(a, float)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    count = 0
    for _ in range(n_resamples):
        signs = rng.choice([-1.0, 1.0], size=d.size)
        if abs((signs * d).mean()) >= observed - 1e-12:
            count += 1
    return (count + 1) / (n_resamples + 1)


@pytest.mark.parametrize(
    "seed,n,effect",
    [(1, 30, 0.0), (2, 40, 0.05), (3, 100, 0.03), (4, 250, 0.02), (5, 25, 0.1), (6, 8, 0.0)],
)
def test_randomization_matches_loop_implementation(seed, n, effect):
    a, b = _pairs(seed, n, effect=effect)
    p1 = paired_randomization_test(a, b, n_resamples=10000, seed=seed)
    p2 = _loop_sign_flip_p(a, b, 20000, seed=10_000 + seed)
    assert abs(p1 - p2) < _mc_tolerance(p2, 10000), (p1, p2)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_randomization_matches_exact_enumeration(seed):
    a, b = _pairs(seed, 12, effect=0.1)
    exact = exact_sign_flip_p(np.asarray(b) - np.asarray(a))
    p = paired_randomization_test(a, b, n_resamples=10000, seed=seed)
    assert abs(p - exact) < _mc_tolerance(exact, 10000), (p, exact)


def test_randomization_matches_scipy_permutation_test():
    a, b = _pairs(21, 60, effect=0.04)

    def statistic(x, y, axis):
        return np.abs(np.mean(x - y, axis=axis))

    ref = scipy.stats.permutation_test(
        (b, a),
        statistic,
        permutation_type="samples",
        alternative="greater",
        n_resamples=20000,
        vectorized=True,
        rng=np.random.default_rng(99),
    )
    p = paired_randomization_test(a, b)
    assert abs(p - ref.pvalue) < _mc_tolerance(ref.pvalue, 10000), (p, ref.pvalue)


def test_randomization_ties_are_counted():
    # Graded-style differences with many exact zeros and repeated magnitudes:
    # sums of sign-flipped values hit the observed value exactly.
    a = np.array([0.0, 0.5, 0.5, 1.0, 0.25, 0.75, 0.5, 0.0, 1.0, 0.25, 0.5, 0.5])
    b = np.array([0.5, 0.5, 1.0, 1.0, 0.5, 0.75, 0.25, 0.5, 1.0, 0.5, 0.5, 1.0])
    exact = exact_sign_flip_p(np.asarray(b) - np.asarray(a))
    p = paired_randomization_test(a, b, n_resamples=10000, seed=3)
    assert abs(p - exact) < _mc_tolerance(exact, 10000), (p, exact)


def test_randomization_degenerate():
    assert paired_randomization_test([0.2, 0.4, 0.6], [0.2, 0.4, 0.6]) == 1.0
    assert paired_randomization_test([0.3], [0.9]) == 1.0  # n=1: every flip ties
    assert math.isnan(paired_randomization_test([], []))


def test_randomization_deterministic_and_bounded(monkeypatch):
    a, b = _pairs(8, 300, effect=0.02)
    p = paired_randomization_test(a, b, seed=5)
    assert p == paired_randomization_test(a, b, seed=5)
    assert 1 / 10001 <= p <= 1.0
    # Force many small blocks: same distribution (different stream layout).
    monkeypatch.setattr(stats, "_RANDOM_BYTES", 38 * 7)
    p_blocks = paired_randomization_test(a, b, seed=5)
    assert abs(p_blocks - p) < 2 * _mc_tolerance(p, 10000)


def test_randomization_strong_effect_hits_floor():
    a, b = _pairs(9, 2000, effect=0.05)
    assert paired_randomization_test(a, b, n_resamples=10000) == pytest.approx(1 / 10001)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_randomization_p_agrees_with_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, 14)
    b = np.clip(a + rng.normal(0.08, 0.15, 14), 0, 1)
    exact = exact_sign_flip_p(b - a)
    p = randomization_pvalues((b - a)[:, None])[0]
    assert abs(p - exact) <= mc_tolerance(exact, N_RESAMPLES, 10**9)


def test_zero_padding_leaves_a_columns_randomization_test_unchanged():
    rng = np.random.default_rng(5)
    d = rng.normal(0, 0.2, 60)
    d += 0.05 - d.mean()  # mean 0.05: t about 2, p about 0.05
    padded = np.zeros(120)
    padded[::2] = d  # the same differences, interleaved with queries this pair lacks
    exact_like = independent_permutation_p(np.zeros(60), d, 200_000, seed=3)
    p = randomization_pvalues(padded[:, None])[0]
    assert 0.01 < exact_like < 0.5  # a p-value where Monte-Carlo error shows
    assert abs(p - exact_like) <= mc_tolerance(exact_like, N_RESAMPLES, 200_000)


def test_randomization_columns_share_the_flips_but_keep_their_own_test():
    a, b = _pairs(14, 200, effect=0.03)
    d = np.column_stack([b - a, a - b, np.zeros(200), 2 * (b - a)])
    p = randomization_pvalues(d, seed=6)
    single = paired_randomization_test(a, b, seed=6)
    assert p[0] == p[1] == p[3] == single  # a column's p does not depend on the other columns
    assert p[2] == 1.0


# ---------------------------------------------------------------------------
# bootstrap
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_bootstrap_contains_mean(seed):
    rng = np.random.default_rng(seed)
    x = rng.beta(0.7, 0.9, size=rng.integers(5, 400))
    low, high = bootstrap_ci(x, n_resamples=2000, seed=seed)
    assert low <= x.mean() <= high
    assert low >= x.min() and high <= x.max()


@pytest.mark.parametrize(
    "sampler",
    [
        lambda rng, n: rng.normal(0.4, 0.25, n),
        lambda rng, n: rng.exponential(0.3, n),
        lambda rng, n: np.where(rng.random(n) < 0.3, 0.0, rng.random(n)),  # NDCG-like, many zeros
    ],
)
def test_bootstrap_converges_to_normal_ci(sampler):
    rng = np.random.default_rng(42)
    x = sampler(rng, 2000)  # skew of the exponential's mean at n=2000 moves the endpoints by ~0.03 se
    low, high = bootstrap_ci(x, n_resamples=10000, seed=1)
    se = x.std() / math.sqrt(x.size)
    z = 1.959963984540054
    # MC standard error of a 2.5% endpoint with 10k resamples ~ 0.027 se.
    assert low == pytest.approx(x.mean() - z * se, abs=0.15 * se)
    assert high == pytest.approx(x.mean() + z * se, abs=0.15 * se)


def test_bootstrap_confidence_level():
    x = np.random.default_rng(3).normal(size=3000)
    l90, h90 = bootstrap_ci(x, confidence=0.90, n_resamples=4000)
    l99, h99 = bootstrap_ci(x, confidence=0.99, n_resamples=4000)
    assert l99 < l90 < h90 < h99


def test_bootstrap_block_size_does_not_change_result(monkeypatch):
    x = np.random.default_rng(4).random(777)
    ref = bootstrap_ci(x, n_resamples=3000, seed=9)
    monkeypatch.setattr(stats, "_BOOTSTRAP_ROWS", 7)
    assert bootstrap_ci(x, n_resamples=3000, seed=9) == ref


def test_bootstrap_degenerate():
    low, high = compare([], []).ci_a
    assert math.isnan(low) and math.isnan(high)
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([0.25] * 50) == (0.25, 0.25)
    assert compare([0.7], [0.1]).ci_a == (0.7, 0.7)
    assert compare([0.1 * 3] * 50, np.arange(50) / 50).ci_a == (0.1 * 3, 0.1 * 3)  # exact, not a mean


def test_bootstrap_means_hand_computed():
    x = np.array([[1.0, 10.0], [2.0, 20.0], [4.0, 40.0]])
    means = bootstrap_means(x, n_resamples=50, seed=2)
    draws = np.random.default_rng(2).integers(0, 3, size=(50, 3))  # the draws of one block
    np.testing.assert_allclose(means, x[draws].mean(axis=1), rtol=1e-15)
    np.testing.assert_allclose(percentile_intervals(means, 0.5), np.quantile(means, [0.25, 0.75], axis=0))


# ---------------------------------------------------------------------------
# Holm, wins/ties/losses
# ---------------------------------------------------------------------------


def test_holm_hand_values():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], rtol=1e-15)
    # 0.2*3=0.6, 0.5*2=1.0, 0.9*1=0.9 -> monotone 1.0, capped at 1
    np.testing.assert_allclose(holm([0.5, 0.2, 0.9]), [1.0, 0.6, 1.0], rtol=1e-15)
    # ties: 0.01*3=0.03, 0.01*2=0.02 -> 0.03 (monotone), 0.2*1=0.2
    np.testing.assert_allclose(holm([0.01, 0.2, 0.01]), [0.03, 0.2, 0.03], rtol=1e-15)
    # statsmodels docs-style example: 0.01*5, 0.02*4, 0.03*3, 0.04*2, 0.05*1 -> 0.05, 0.08, 0.09, 0.09, 0.09
    np.testing.assert_allclose(
        holm([0.05, 0.01, 0.04, 0.02, 0.03]), [0.09, 0.05, 0.09, 0.08, 0.09], rtol=1e-12
    )
    np.testing.assert_allclose(holm([0.3]), [0.3])
    assert holm([]).shape == (0,)


def test_holm_nan_left_out_of_family():
    out = holm([0.01, float("nan"), 0.04])
    assert math.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.04])


def test_holm_invariants_random():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.random(rng.integers(1, 30)) ** 3
        adj = holm(p)
        assert np.all(adj >= p) and np.all(adj <= 1.0)
        order = np.argsort(p)
        assert np.all(np.diff(adj[order]) >= 0)  # monotone in the raw p order
        assert adj.min() == pytest.approx(min(1.0, p.min() * p.size))


def test_wins_ties_losses():
    a = [0.5, 0.5, 0.5, 0.2, 0.9, 0.3]
    b = [0.6, 0.5, 0.4, 0.2 + 1e-15, 0.1, 0.3]
    assert wins_ties_losses(a, b) == (1, 3, 2)
    assert wins_ties_losses(b, a) == (2, 3, 1)
    assert wins_ties_losses(a, b, tol=0.2) == (0, 5, 1)
    assert wins_ties_losses([], []) == (0, 0, 0)


# ---------------------------------------------------------------------------
# compare + sentence
# ---------------------------------------------------------------------------


def _comparison(**overrides):
    fields = dict(
        n=5000,
        mean_a=0.500,
        mean_b=0.542,
        ci_a=(0.49, 0.51),
        ci_b=(0.53, 0.55),
        diff=0.042,
        ci_diff=(0.018, 0.066),
        p_randomization=0.0012,
        p_t=0.0011,
        wins=2600,
        ties=500,
        losses=1900,
    )
    fields.update(overrides)
    return Comparison(**fields)


def test_sentence_significant():
    assert _comparison().sentence("NDCG@10", "A", "B") == (
        "B beats A on NDCG@10 by 0.042 (95% CI 0.018\u20130.066), p = 0.001, 5,000 queries."
    )
    assert _comparison(p_randomization=0.0001).sentence("NDCG@10", "A", "B") == (
        "B beats A on NDCG@10 by 0.042 (95% CI 0.018\u20130.066), p < 0.001, 5,000 queries."
    )


def test_sentence_significant_a_wins():
    c = _comparison(diff=-0.042, ci_diff=(-0.066, -0.018), p_randomization=0.0234, n=1234567)
    assert c.sentence("NDCG@10", "prod", "candidate") == (
        "prod beats candidate on NDCG@10 by 0.042 (95% CI 0.018\u20130.066), p = 0.023, 1,234,567 queries."
    )


def test_sentence_not_significant():
    c = _comparison(diff=0.003, ci_diff=(-0.010, 0.016), p_randomization=0.6234, n=5000)
    assert c.sentence("NDCG@10", "A", "B") == (
        "No significant difference between A and B on NDCG@10 "
        "(B - A = +0.003, 95% CI -0.010 to +0.016, p = 0.623, 5,000 queries)."
    )
    # p just below 0.05 is truncated, never displayed as 0.050 next to "beats"
    assert "p = 0.049" in _comparison(p_randomization=0.04996).sentence("m", "A", "B")
    assert _comparison(p_randomization=0.05).sentence("m", "A", "B").startswith("No significant")


def test_sentence_not_enough_queries():
    c = compare([0.3], [0.5])
    assert c.sentence("NDCG@10", "A", "B") == "Not enough queries to compare A and B on NDCG@10 (1 query)."
    c = compare([], [])
    assert c.sentence("NDCG@10", "A", "B") == "Not enough queries to compare A and B on NDCG@10 (0 queries)."


def test_compare_significant_and_not():
    a, b = _pairs(31, 5000, effect=0.02)
    c = compare(a, b)
    assert c.sentence("NDCG@10", "A", "B").startswith("B beats A on NDCG@10 by 0.0")
    assert c.sentence("NDCG@10", "A", "B").endswith(", p < 0.001, 5,000 queries.")
    a, b = _pairs(32, 300, effect=0.0)
    c = compare(a, b)
    assert c.p_randomization >= 0.05
    assert c.sentence("NDCG@10", "A", "B").startswith(
        "No significant difference between A and B on NDCG@10 ("
    )


def test_compare_fields_consistent():
    a, b = _pairs(33, 800, effect=0.01)
    c = compare(a, b, n_resamples=5000, seed=4)
    assert c.n == 800
    assert c.mean_a == pytest.approx(a.mean()) and c.mean_b == pytest.approx(b.mean())
    assert c.diff == pytest.approx(b.mean() - a.mean())
    assert c.p_randomization == paired_randomization_test(a, b, n_resamples=5000, seed=4)
    assert c.p_t == paired_t_test(a, b)[1]
    assert c.p_t == pytest.approx(scipy.stats.ttest_rel(b, a).pvalue, rel=1e-9)
    assert (c.wins, c.ties, c.losses) == wins_ties_losses(a, b)
    n_boot = default_n_bootstrap(800, 5000)
    assert n_boot == 5000
    assert c.ci_a == bootstrap_ci(a, n_resamples=n_boot, seed=4)
    assert c.ci_b == bootstrap_ci(b, n_resamples=n_boot, seed=4)
    low, high = bootstrap_ci(b - a, n_resamples=n_boot, seed=4)  # same draws, rounding may differ
    assert c.ci_diff == pytest.approx((low, high), abs=1e-12)
    assert c.ci_a[0] <= c.mean_a <= c.ci_a[1]
    assert c.ci_b[0] <= c.mean_b <= c.ci_b[1]
    assert c.ci_diff[0] <= c.diff <= c.ci_diff[1]


def test_compare_degenerate():
    c = compare([0.4, 0.6, 0.8], [0.4, 0.6, 0.8])
    assert (c.diff, c.p_randomization, c.p_t) == (0.0, 1.0, 1.0)
    assert c.ci_diff == (0.0, 0.0)
    assert (c.wins, c.ties, c.losses) == (0, 3, 0)
    c = compare([0.5] * 10, [0.5] * 10)
    assert c.ci_a == c.ci_b == (0.5, 0.5) and c.ci_diff == (0.0, 0.0)
    assert c.sentence("NDCG@10", "A", "B").startswith("No significant difference")
    c = compare([0.3], [0.5])
    assert c.n == 1 and math.isnan(c.p_t) and c.p_randomization == 1.0
    assert c.ci_a == (0.3, 0.3) and c.ci_diff == pytest.approx((0.2, 0.2))
    c = compare([], [])
    assert c.n == 0 and math.isnan(c.mean_a) and math.isnan(c.p_randomization)
    assert all(math.isnan(v) for v in c.ci_diff)


def test_default_n_bootstrap():
    assert default_n_bootstrap(100) == 10000
    assert default_n_bootstrap(500) == 10000
    assert default_n_bootstrap(1000) == 5000
    assert default_n_bootstrap(5000) == 1000
    assert default_n_bootstrap(50000) == 1000
    assert default_n_bootstrap(100, n_resamples=500) == 500


def test_compare_many_matches_scipy_column_by_column():
    rng = np.random.default_rng(11)
    a = rng.uniform(0, 1, (300, 3))
    b = np.clip(a + rng.normal([0.0, 0.02, -0.03], 0.15, (300, 3)), 0, 1)
    many = compare_many(a, b)
    for c in range(3):
        got, d = many[c], b[:, c] - a[:, c]
        wins, losses = int(np.sum(d > 1e-12)), int(np.sum(d < -1e-12))
        assert (got.n, got.wins, got.ties, got.losses) == (300, wins, 300 - wins - losses, losses)
        assert got.mean_a == pytest.approx(a[:, c].mean()) and got.diff == pytest.approx(d.mean())
        assert got.p_t == pytest.approx(scipy.stats.ttest_rel(b[:, c], a[:, c]).pvalue, rel=1e-9)
        reference = scipy.stats.permutation_test(
            (b[:, c], a[:, c]),
            lambda x, y, axis: np.abs(np.mean(x - y, axis=axis)),
            permutation_type="samples",
            alternative="greater",
            n_resamples=20_000,
            vectorized=True,
            rng=np.random.default_rng(100 + c),
        ).pvalue
        assert abs(got.p_randomization - reference) <= mc_tolerance(reference, N_RESAMPLES, 20_000)
        se = d.std() / math.sqrt(300)
        for interval, sample in ((got.ci_diff, d), (got.ci_a, a[:, c]), (got.ci_b, b[:, c])):
            ci = scipy.stats.bootstrap(
                (sample,), np.mean, method="percentile", n_resamples=10_000, rng=np.random.default_rng(c)
            ).confidence_interval
            assert interval == pytest.approx((ci.low, ci.high), abs=0.2 * se)

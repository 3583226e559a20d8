"""Tests for scoring.stats (scipy is used here as the reference only)."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from scoring import stats
from scoring.stats import (
    Comparison,
    bootstrap_ci,
    compare,
    default_n_bootstrap,
    holm,
    paired_randomization_test,
    paired_t_test,
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
        paired_randomization_test([0.1, 0.2], [0.1, 0.2], n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_ci([0.1, 0.2], confidence=1.0)


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


def _exact_sign_flip_p(a, b):
    d = np.asarray(b, float) - np.asarray(a, float)
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=d.size)))
    return float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12))


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
    exact = _exact_sign_flip_p(a, b)
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
    exact = _exact_sign_flip_p(a, b)
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
    monkeypatch.setattr(stats, "_RANDOMIZATION_BLOCK", 38 * 7)
    p_blocks = paired_randomization_test(a, b, seed=5)
    assert abs(p_blocks - p) < 2 * _mc_tolerance(p, 10000)


def test_randomization_strong_effect_hits_floor():
    a, b = _pairs(9, 2000, effect=0.05)
    assert paired_randomization_test(a, b, n_resamples=10000) == pytest.approx(1 / 10001)


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
    x = sampler(rng, 10000)
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
    monkeypatch.setattr(stats, "_BOOTSTRAP_BLOCK", 777 * 7 + 5)
    assert bootstrap_ci(x, n_resamples=3000, seed=9) == ref


def test_bootstrap_degenerate():
    low, high = bootstrap_ci([])
    assert math.isnan(low) and math.isnan(high)
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([0.25] * 50) == (0.25, 0.25)


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

"""scoring.paired_stats without a database: the randomization test against exact enumeration and an
independent permutation test, and every column against scoring.stats.compare (fixed seeds)."""

import math

import numpy as np
import pytest

from scoring import paired_stats, stats

from .test_comparison import exact_sign_flip_p, independent_permutation_p, mc_tolerance


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_randomization_p_agrees_with_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, 14)
    b = np.clip(a + rng.normal(0.08, 0.15, 14), 0, 1)
    exact = exact_sign_flip_p(b - a)
    p = paired_stats.randomization_pvalues((b - a)[:, None])[0]
    assert abs(p - exact) <= mc_tolerance(exact, paired_stats.N_RESAMPLES, 10**9)


def test_zero_padding_leaves_a_columns_randomization_test_unchanged():
    rng = np.random.default_rng(5)
    d = rng.normal(0, 0.2, 60)
    d += 0.05 - d.mean()  # mean 0.05: t about 2, p about 0.05
    padded = np.zeros(120)
    padded[::2] = d  # the same differences, interleaved with queries this pair lacks
    exact_like = independent_permutation_p(np.zeros(60), d, 200_000, seed=3)
    p = paired_stats.randomization_pvalues(padded[:, None])[0]
    assert 0.01 < exact_like < 0.5  # a p-value where Monte-Carlo error shows
    assert abs(p - exact_like) <= mc_tolerance(exact_like, paired_stats.N_RESAMPLES, 200_000)


def test_compare_many_matches_stats_compare_column_by_column():
    rng = np.random.default_rng(11)
    a = rng.uniform(0, 1, (300, 3))
    b = np.clip(a + rng.normal([0.0, 0.02, -0.03], 0.15, (300, 3)), 0, 1)
    many = paired_stats.compare_many(a, b)
    for c in range(3):
        single = stats.compare(a[:, c], b[:, c])
        got = many[c]
        assert (got.n, got.wins, got.ties, got.losses) == (single.n, single.wins, single.ties, single.losses)
        assert got.mean_a == pytest.approx(single.mean_a) and got.diff == pytest.approx(single.diff)
        assert got.p_t == pytest.approx(single.p_t, rel=1e-12)
        assert abs(got.p_randomization - single.p_randomization) <= mc_tolerance(
            single.p_randomization, 10_000, 10_000
        )
        se = (b[:, c] - a[:, c]).std() / math.sqrt(300)
        assert got.ci_diff == pytest.approx(single.ci_diff, abs=0.2 * se)

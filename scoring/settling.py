"""Has a leaderboard settled? Kendall's tau and its bootstrap over queries. Pure numpy, no Django.

`scores` is a (configurations, queries) matrix of one measure (nDCG@10, say), a query a configuration
did not rank or nobody graded counting 0, as on the leaderboard. The leaderboard's ordering is by the mean
over queries. `expected_tau` resamples the queries with replacement (`n_resamples` times, seeded) and
averages Kendall's tau-b between the ordering of the full means and that of each resample's means: how
much the ordering would move with another sample of queries of the same kind. Where every configuration
ties (nothing graded yet) tau is 0, not undefined: an ordering that says nothing has not settled.
"""

from __future__ import annotations

import numpy as np

N_RESAMPLES = 200
SEED = 20260527
SETTLED_TAU = 0.9
SETTLED_JUDGED = 0.8


def _signs(means: np.ndarray) -> np.ndarray:
    """Sign of every pairwise difference (i < j) of the rows' values; means: (n,) or (n, b)."""
    i, j = np.triu_indices(means.shape[0], k=1)
    return np.sign(means[i] - means[j])


def kendall_tau(a, b) -> float:
    """Kendall's tau-b between two score vectors over the same configurations (0 when either is all ties)."""
    return float(_tau_b(_signs(np.asarray(a, float)), _signs(np.asarray(b, float))))


def _tau_b(sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """tau-b from pairwise signs: sa (p,), sb (p,) or (p, b)."""
    if sb.ndim == 2:
        sa = sa[:, None]
    concordance = (sa * sb).sum(axis=0)
    denominator = np.sqrt(np.count_nonzero(sa, axis=0) * np.count_nonzero(sb, axis=0).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(denominator > 0, concordance / np.where(denominator > 0, denominator, 1), 0.0)
    return tau


def expected_tau(scores, *, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> float:
    """Mean Kendall tau-b between the ordering by mean over all queries and orderings by the means of
    bootstrap resamples of the queries. scores: (configurations, queries). Fewer than 2 configurations
    or no query: 0.0 (nothing to order)."""
    scores = np.asarray(scores, dtype=float)
    n_configurations, n_queries = scores.shape
    if n_configurations < 2 or n_queries == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n_queries, size=(n_resamples, n_queries))
    # (configurations, resamples): each resample's mean, by counting how often each query was drawn.
    counts = np.zeros((n_resamples, n_queries))
    np.add.at(counts, (np.repeat(np.arange(n_resamples), n_queries), picks.ravel()), 1.0)
    resampled = scores @ counts.T / n_queries
    full = _signs(scores.mean(axis=1))
    return float(_tau_b(full, _signs(resampled)).mean())


def ordering(means, keys) -> list:
    """`keys` ordered by their mean, best first (ties by key), as the leaderboard ranks them."""
    return [key for _, key in sorted(zip((-float(m) for m in means), keys, strict=True))]


def is_settled(tau: float, judged: list[float]) -> bool:
    """Expected tau at least SETTLED_TAU and every configuration's judged@10 at least SETTLED_JUDGED."""
    return tau >= SETTLED_TAU and bool(judged) and min(judged) >= SETTLED_JUDGED

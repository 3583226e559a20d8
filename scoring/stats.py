"""Significance testing for comparing search configurations: pure numpy, no Django, no scipy.

Configurations are scored on the *same* queries (one value per query and metric, e.g. NDCG@10), so
every test here is paired: row ``i`` of ``a`` and of ``b`` belong to the same query. Differences are
always ``b - a`` ("B vs A"). The tests work column-wise: a comparison page shows 4 or more metrics of
two configurations on thousands of queries, and a matrix compares every pair of configurations, so
each array is (queries x columns) and the random numbers (sign flips, query resamples) are drawn once
for all the columns; each column still gets exactly its own test.

* `randomization_pvalues`: the sign-flip randomization test of the mean difference; it looks up
  precomputed partial sums for each byte of random bits (8 queries a lookup).
* `bootstrap_means`, `percentile_intervals`: the percentile bootstrap of the means.
* `paired_t_test` (with `student_t_sf`: the Student t CDF from the regularized incomplete beta
  function, Numerical Recipes' continued fraction), `holm`, `wins_ties_losses`.
* `compare_many`: all of these for every column, as `Comparison`s (with their one-line sentence).

Performance note: a full bootstrap costs one random index per query per resample, i.e. 5e7 for
5,000 queries x 10,000 resamples, so `compare_many` caps its bootstrap at 5e6 index draws by default
(`default_n_bootstrap`: 1,000 resamples at 5,000 queries, the full 10,000 up to 500 queries) while
the randomization p-value keeps all ``n_resamples=10000`` (it is ~25x cheaper per resample). With
1,000 resamples the Monte-Carlo standard error of a 95% percentile endpoint is about 0.085 standard
errors of the mean (~0.0004 NDCG for 5,000 queries with per-query sd 0.3), below the 3 decimals shown.

No BLAS: a multi-threaded BLAS call on a busy web server wakes up spinning threads that cost more than
the arithmetic; numpy's own loops are used instead. Memory stays bounded (a few MB) whatever the
number of queries and resamples: both resamplings work in blocks.

Accuracy of the t-test p-value: within ~1e-11 (relative) of scipy up to about 1e6 pairs; the continued
fraction loses roughly eps * df relative precision beyond that (irrelevant for judged query sets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONFIDENCE",
    "N_RESAMPLES",
    "SEED",
    "Comparison",
    "bootstrap_means",
    "compare_many",
    "default_n_bootstrap",
    "holm",
    "paired_t_test",
    "percentile_intervals",
    "randomization_pvalues",
    "student_t_sf",
    "wins_ties_losses",
]

N_RESAMPLES = 10_000  # sign flips of the randomization test (Monte-Carlo SE of p = 0.05: 0.002)
SEED = 0
CONFIDENCE = 0.95
# Relative tolerance (w.r.t. sum |d|) under which resampled sums count as ties with the observed one;
# absorbs summation-order rounding only.
_TIE_RTOL = 1e-9
_RANDOM_BYTES = 1 << 23  # random bytes (query groups x resamples) per block of the randomization test
_BOOTSTRAP_ROWS = 100  # resamples per bootstrap block: (100 x queries) counts stay in cache
_BOOTSTRAP_DRAWS = 5_000_000  # budget of bootstrap index draws (resamples x queries) by default


# ---------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------


def _as_1d(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _paired(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = _as_1d(a, "a")
    b = _as_1d(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length ({a.size} != {b.size})")
    return a, b


def _check_resamples(n_resamples: int) -> int:
    n_resamples = int(n_resamples)
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    return n_resamples


# ---------------------------------------------------------------------------
# Student t distribution (regularized incomplete beta, Numerical Recipes)
# ---------------------------------------------------------------------------

_BETACF_EPS = 1e-16
_BETACF_FPMIN = 1e-300
_BETACF_MAXIT = 100_000


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for I_x(a, b) (modified Lentz), NR 6.4."""
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _BETACF_FPMIN:
        d = _BETACF_FPMIN
    d = 1.0 / d
    h = d
    for m in range(1, _BETACF_MAXIT + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < _BETACF_FPMIN:
            d = _BETACF_FPMIN
        c = 1.0 + aa / c
        if abs(c) < _BETACF_FPMIN:
            c = _BETACF_FPMIN
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _BETACF_FPMIN:
            d = _BETACF_FPMIN
        c = 1.0 + aa / c
        if abs(c) < _BETACF_FPMIN:
            c = _BETACF_FPMIN
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) <= _BETACF_EPS:
            break
    return h


def _stirling_error(z: float) -> float:
    """lgamma(z) - [(z - 1/2) log z - z + log(2 pi) / 2], asymptotic series (z >= 15)."""
    z2 = z * z
    return (
        1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - (1.0 / 1680.0 - 1.0 / (1188.0 * z2)) / z2) / z2) / z2
    ) / z


def _lgamma_ratio(a: float, b: float) -> float:
    """lgamma(a + b) - lgamma(a), without the cancellation of two huge lgammas."""
    if a < 15.0:
        return math.lgamma(a + b) - math.lgamma(a)
    return (
        (a - 0.5) * math.log1p(b / a) + b * math.log(a + b) - b + _stirling_error(a + b) - _stirling_error(a)
    )


def _betainc(a: float, b: float, x: float, y: float, log_x: float, log_y: float) -> float:
    """Regularized incomplete beta I_x(a, b) (NR 6.4).

    ``y = 1 - x``, ``log_x`` and ``log_y`` are passed in so callers can compute
    them without cancellation.
    """
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    if a >= b:
        log_beta = _lgamma_ratio(a, b) - math.lgamma(b)
    else:
        log_beta = _lgamma_ratio(b, a) - math.lgamma(a)
    # log_beta is log(1 / B(a, b)).
    front = math.exp(log_beta + a * log_x + b * log_y)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def student_t_sf(t: float, df: float) -> float:
    """Two-sided tail probability P(|T| >= |t|) of Student's t with df degrees of freedom."""
    t = float(t)
    df = float(df)
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0
    if t == 0.0:
        return 1.0
    t2 = t * t
    # p = I_x(df/2, 1/2) with x = df / (df + t^2); 1 - x = t^2 / (df + t^2).
    x = df / (df + t2)
    y = t2 / (df + t2)
    log_x = -math.log1p(t2 / df)
    log_y = math.log(t2) - math.log(df + t2) if t2 < df else -math.log1p(df / t2)
    p = _betainc(df / 2.0, 0.5, x, y, log_x, log_y)
    return min(1.0, max(0.0, p))


def paired_t_test(a, b) -> tuple[float, float]:
    """Two-sided paired t-test of ``b - a``.

    Returns ``(t, p)``, equal to ``scipy.stats.ttest_rel(b, a)``.  Degenerate
    cases: fewer than 2 pairs -> ``(nan, nan)``; all differences exactly zero
    -> ``(0.0, 1.0)`` (scipy returns nan there); constant non-zero differences
    -> ``(+-inf, 0.0)``.
    """
    a, b = _paired(a, b)
    n = a.size
    if n < 2:
        return math.nan, math.nan
    d = b - a
    if not np.any(d):
        return 0.0, 1.0
    mean = float(np.mean(d))
    var = float(np.var(d, ddof=1))
    if var == 0.0:
        return math.copysign(math.inf, mean), 0.0
    t = mean / math.sqrt(var / n)
    return t, student_t_sf(t, n - 1)


# ---------------------------------------------------------------------------
# sign-flip randomization test
# ---------------------------------------------------------------------------

# _BYTE_SIGNS[v, k] = +1 if bit k of byte v is set else -1: the sign pattern of 8 queries coded as one byte.
_BYTE_SIGNS = (
    np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.float64) * 2.0
    - 1.0
)


def randomization_pvalues(
    d: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int | None = SEED
) -> np.ndarray:
    """Two-sided paired sign-flip test of the mean of every column of d (n queries x m), at once.

    Each resample flips the sign of every query's difference independently with probability 1/2 (the
    same flips for every column); p = (count(|sum*| >= |sum|) + 1) / (R + 1), ties detected with a tiny
    relative tolerance. No queries: nan. A column padded with zeros for queries it lacks gives exactly
    its own test: a zero difference adds nothing to any resampled sum.

    For each group of 8 queries the 256 possible signed partial sums are precomputed, so a resample
    costs ceil(n / 8) table lookups; the random bytes come in blocks of at most ~8 MB.
    """
    n_resamples = _check_resamples(n_resamples)
    d = np.asarray(d, dtype=np.float64)
    if d.ndim == 1:
        d = d[:, None]
    n, m = d.shape
    if n == 0:
        return np.full(m, math.nan)
    observed = np.abs(d.sum(axis=0))
    threshold = observed - _TIE_RTOL * np.abs(d).sum(axis=0)
    n_groups = (n + 7) // 8
    padded = np.zeros((n_groups * 8, m))
    padded[:n] = d
    groups = padded.reshape(n_groups, 8, m)
    # table[j, c, v]: signed sum of the 8 differences of group j in column c under sign pattern v.
    table = np.ascontiguousarray(np.einsum("vk,gkc->gcv", _BYTE_SIGNS, groups))
    rng = np.random.default_rng(seed)
    block = max(1, min(n_resamples, _RANDOM_BYTES // n_groups))
    counts = np.zeros(m, dtype=np.int64)
    done = 0
    while done < n_resamples:
        size = min(block, n_resamples - done)
        n_bytes = n_groups * size
        raw = rng.bit_generator.random_raw((n_bytes + 7) // 8).astype("<u8", copy=False)
        codes = raw.view(np.uint8)[:n_bytes].reshape(n_groups, size)
        sums = np.zeros((m, size))
        for j in range(n_groups):
            sums += table[j].take(codes[j], axis=1)
        counts += np.count_nonzero(np.abs(sums) >= threshold[:, None], axis=1)
        done += size
    return (counts + 1) / (n_resamples + 1)


# ---------------------------------------------------------------------------
# bootstrap
# ---------------------------------------------------------------------------


def bootstrap_means(x: np.ndarray, *, n_resamples: int, seed: int | None = SEED) -> np.ndarray:
    """(n_resamples, m) bootstrap means of every column of x (n >= 1 queries x m), all resampled alike.

    Resample r draws n query indices; its counts (how often each query was drawn) times each column,
    summed, give that column's resampled mean. The draws do not depend on the block size."""
    n_resamples = _check_resamples(n_resamples)
    x = np.asarray(x, dtype=np.float64)
    n, m = x.shape
    columns = np.ascontiguousarray(x.T)
    out = np.empty((n_resamples, m))
    rng = np.random.default_rng(seed)
    offsets = (np.arange(_BOOTSTRAP_ROWS) * n)[:, None]
    done = 0
    while done < n_resamples:
        size = min(_BOOTSTRAP_ROWS, n_resamples - done)
        draws = rng.integers(0, n, size=(size, n))
        draws += offsets[:size]
        counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)
        for c in range(m):
            out[done : done + size, c] = np.einsum("rn,n->r", counts, columns[c])
        done += size
    return out / n


def percentile_intervals(means: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """(2, m): the percentile interval (low row, high row) of every column of bootstrap means."""
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be strictly between 0 and 1")
    tail = (1.0 - confidence) / 2.0
    return np.quantile(means, [tail, 1.0 - tail], axis=0)


# ---------------------------------------------------------------------------
# multiple comparisons, win/tie/loss
# ---------------------------------------------------------------------------


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (monotone, capped at 1).

    Same values as ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]``.
    NaN entries are left out of the family and stay NaN in the output.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        p = p.ravel()
    adjusted = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return adjusted
    if np.any((p[valid] < 0) | (p[valid] > 1)):
        raise ValueError("p-values must be in [0, 1]")
    order = valid[np.argsort(p[valid], kind="stable")]
    stepped = p[order] * (m - np.arange(m))
    stepped = np.minimum(np.maximum.accumulate(stepped), 1.0)
    adjusted[order] = stepped
    return adjusted


def wins_ties_losses(a, b, *, tol: float = 1e-12) -> tuple[int, int, int]:
    """Number of queries where B beats A (b - a > tol), ties (|b - a| <= tol), and loses."""
    a, b = _paired(a, b)
    d = b - a
    wins = int(np.count_nonzero(d > tol))
    losses = int(np.count_nonzero(d < -tol))
    return wins, a.size - wins - losses, losses


# ---------------------------------------------------------------------------
# the comparison of two configurations on every metric
# ---------------------------------------------------------------------------


def _format_p(p: float) -> str:
    if p < 0.001:
        return "p < 0.001"
    # Truncate (not round) so the displayed value never crosses 0.05 upwards.
    return f"p = {math.floor(p * 1000 + 1e-9) / 1000:.3f}"


def _format_range(low: float, high: float) -> str:
    lo, hi = f"{low:.3f}", f"{high:.3f}"
    if lo.startswith("-") or hi.startswith("-"):
        return f"{lo} to {hi}"
    return f"{lo}\u2013{hi}"


def _format_queries(n: int) -> str:
    return f"{n:,} query" if n == 1 else f"{n:,} queries"


@dataclass(frozen=True)
class Comparison:
    """Paired comparison of configuration B against configuration A.

    ``diff = mean_b - mean_a``; ``wins`` counts queries where B is better.
    ``p_randomization`` (sign-flip test) is the headline p-value; ``p_t`` is
    the paired t-test.  CIs are 95% percentile bootstrap intervals.
    """

    n: int
    mean_a: float
    mean_b: float
    ci_a: tuple[float, float]
    ci_b: tuple[float, float]
    diff: float
    ci_diff: tuple[float, float]
    p_randomization: float
    p_t: float
    wins: int
    ties: int
    losses: int

    def significant(self, alpha: float = 0.05) -> bool:
        return not math.isnan(self.p_randomization) and self.p_randomization < alpha

    def sentence(self, metric: str, name_a: str, name_b: str, *, alpha: float = 0.05) -> str:
        """One-line human summary, e.g.

        "B beats A on NDCG@10 by 0.042 (95% CI 0.018–0.066), p = 0.001, 5,000 queries."
        """
        queries = _format_queries(self.n)
        if self.n < 2 or math.isnan(self.p_randomization):
            return f"Not enough queries to compare {name_a} and {name_b} on {metric} ({queries})."
        p_text = _format_p(self.p_randomization)
        if self.significant(alpha) and self.diff != 0:
            if self.diff > 0:
                winner, loser = name_b, name_a
                by, (low, high) = self.diff, self.ci_diff
            else:
                winner, loser = name_a, name_b
                by, (low, high) = -self.diff, (-self.ci_diff[1], -self.ci_diff[0])
            return (
                f"{winner} beats {loser} on {metric} by {by:.3f} "
                f"(95% CI {_format_range(low, high)}), {p_text}, {queries}."
            )
        low, high = self.ci_diff
        return (
            f"No significant difference between {name_a} and {name_b} on {metric} "
            f"({name_b} - {name_a} = {self.diff:+.3f}, 95% CI {low:+.3f} to {high:+.3f}, "
            f"{p_text}, {queries})."
        )


def default_n_bootstrap(n: int, n_resamples: int = N_RESAMPLES) -> int:
    """Bootstrap resamples used by `compare_many` when ``n_bootstrap`` is None.

    Caps the bootstrap work at 5e6 index draws (~20 ms):
    ``min(n_resamples, max(1000, 5_000_000 // n))`` -- i.e. the full
    ``n_resamples`` (10,000) up to 500 queries, 5,000 at 1,000 queries and
    1,000 from 5,000 queries on.
    """
    return min(int(n_resamples), max(1000, _BOOTSTRAP_DRAWS // max(int(n), 1)))


def compare_many(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    n_bootstrap: int | None = None,
    seed: int | None = SEED,
) -> list[Comparison]:
    """Compare B against A on every column of two (n queries x m metrics) arrays.

    * ``p_randomization``: `randomization_pvalues` of ``b - a`` with ``n_resamples`` sign flips.
    * ``p_t``: `paired_t_test`.
    * ``ci_a``, ``ci_b``, ``ci_diff``: 95% percentile bootstrap intervals from one *paired* bootstrap
      (each resample draws queries, and the same draw serves mean A, mean B and their difference, for
      every column); ``n_bootstrap=None`` picks `default_n_bootstrap` (1,000 at 5,000 queries).
      A constant column's interval is that value, with zero width.
    * ``wins``/``ties``/``losses``: `wins_ties_losses` (B vs A).

    Degenerate inputs: 0 queries -> means, CIs and p-values are nan; 1 query -> p_t is nan,
    p_randomization is 1.0 and the CIs have zero width.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(
            f"a and b must be (queries x metrics) arrays of the same shape, got {a.shape} and {b.shape}"
        )
    n, m = a.shape
    if n == 0:
        nan_pair = (math.nan, math.nan)
        empty = Comparison(
            0, math.nan, math.nan, nan_pair, nan_pair, math.nan, nan_pair, math.nan, math.nan, 0, 0, 0
        )
        return [empty] * m
    if n_bootstrap is None:
        n_bootstrap = default_n_bootstrap(n, n_resamples)
    p_rand = randomization_pvalues(b - a, n_resamples=n_resamples, seed=seed)
    boot = bootstrap_means(np.hstack([a, b]), n_resamples=n_bootstrap, seed=seed)
    quantiles = percentile_intervals(np.hstack([boot, boot[:, m:] - boot[:, :m]]))
    results = []
    for c in range(m):
        col_a, col_b = a[:, c], b[:, c]
        const_a, const_b = bool(np.all(col_a == col_a[0])), bool(np.all(col_b == col_b[0]))
        ci_a = (float(col_a[0]),) * 2 if const_a else (float(quantiles[0, c]), float(quantiles[1, c]))
        ci_b = (float(col_b[0]),) * 2 if const_b else (float(quantiles[0, m + c]), float(quantiles[1, m + c]))
        if const_a and const_b:
            ci_diff = (float(col_b[0] - col_a[0]),) * 2
        else:
            ci_diff = (float(quantiles[0, 2 * m + c]), float(quantiles[1, 2 * m + c]))
        _, p_t = paired_t_test(col_a, col_b)
        wins, ties, losses = wins_ties_losses(col_a, col_b)
        mean_a, mean_b = float(col_a.mean()), float(col_b.mean())
        results.append(
            Comparison(
                n=n,
                mean_a=mean_a,
                mean_b=mean_b,
                ci_a=ci_a,
                ci_b=ci_b,
                diff=mean_b - mean_a,
                ci_diff=ci_diff,
                p_randomization=float(p_rand[c]),
                p_t=p_t,
                wins=wins,
                ties=ties,
                losses=losses,
            )
        )
    return results

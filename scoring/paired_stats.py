"""Paired statistics for several metrics at once: the figures of `scoring.stats.compare`, for every
column of two (queries x metrics) arrays, with the random numbers drawn once. Pure numpy, no Django.

A comparison page shows 4 or more metrics of two configurations on thousands of queries; calling
`stats.compare` per metric would draw the resamples again for each. Here the sign flips of the
randomization test and the query resamples of the bootstrap are shared by the metrics. Each column
still gets exactly the test `stats` defines (and today the very same random stream: a single column's
p-value and intervals equal `stats.compare`'s).

No BLAS: a multi-threaded BLAS call on a busy web server wakes up spinning threads that cost more than
the arithmetic (see `stats.paired_randomization_test`); numpy's own loops are used instead.
"""

from __future__ import annotations

import math

import numpy as np

from . import stats

N_RESAMPLES = 10_000  # sign flips of the randomization test (Monte-Carlo SE of p = 0.05: 0.002)
SEED = 0
CONFIDENCE = 0.95

# _BYTE_SIGNS[v, k] = +1 if bit k of byte v is set else -1: the sign pattern of 8 queries coded as one byte.
_BYTE_SIGNS = (
    np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.float64) * 2.0
    - 1.0
)
_TIE_RTOL = 1e-9  # as scoring.stats: resampled sums within this of the observed one count as ties
_BOOTSTRAP_ROWS = 100  # resamples per bootstrap block: (100 x queries) counts stay in cache
_RANDOM_BYTES = 1 << 23  # random bytes (query groups x resamples) per block of the randomization test


def randomization_pvalues(
    d: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int | None = SEED
) -> np.ndarray:
    """Two-sided paired sign-flip test of the mean of every column of d (n queries x m), at once.

    The same test as `stats.paired_randomization_test` (p = (count(|sum*| >= |sum|) + 1) / (R + 1)),
    with the sign flips shared by the columns, so the random numbers are drawn once. A column padded
    with zeros for queries it lacks gives exactly its own test: a zero difference adds nothing to any
    resampled sum.
    """
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
    # Random bytes drawn as stats.paired_randomization_test draws them, so a single column gets its p.
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


def bootstrap_means(x: np.ndarray, *, n_resamples: int, seed: int | None = SEED) -> np.ndarray:
    """(n_resamples, m) bootstrap means of every column of x (n queries x m), all resampled alike.

    Resample r draws n query indices (the draws of `stats.bootstrap_ci` with the same seed); its counts
    (how often each query was drawn) times each column, summed, give that column's resampled mean."""
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


def compare_many(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    n_bootstrap: int | None = None,
    seed: int | None = SEED,
) -> list[stats.Comparison]:
    """`stats.compare` for every column of two (n queries x m metrics) arrays, B against A.

    Same definitions as `stats.compare` (percentile bootstrap with one query resample for mean A, mean B
    and their difference; sign-flip p-value; paired t-test; wins/ties/losses; n_bootstrap None picks
    `stats.default_n_bootstrap`), with the resamples shared by the metrics, so a page comparing 5 metrics
    on 5,000 queries draws its random numbers once.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(
            f"a and b must be (queries x metrics) arrays of the same shape, got {a.shape} and {b.shape}"
        )
    n, m = a.shape
    if n == 0:
        return [stats.compare(np.zeros(0), np.zeros(0)) for _ in range(m)]
    if n_bootstrap is None:
        n_bootstrap = stats.default_n_bootstrap(n, n_resamples)
    p_rand = randomization_pvalues(b - a, n_resamples=n_resamples, seed=seed)
    boot = bootstrap_means(np.hstack([a, b]), n_resamples=n_bootstrap, seed=seed)
    tail = (1.0 - CONFIDENCE) / 2.0
    quantiles = np.quantile(np.hstack([boot, boot[:, m:] - boot[:, :m]]), [tail, 1.0 - tail], axis=0)
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
        _, p_t = stats.paired_t_test(col_a, col_b)
        wins, ties, losses = stats.wins_ties_losses(col_a, col_b)
        mean_a, mean_b = float(col_a.mean()), float(col_b.mean())
        results.append(
            stats.Comparison(
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

"""Judgment-free comparison of two rankings of the same query: rank-biased overlap and Jaccard@k. Pure
numpy, no Django, vectorised over many pairs of rankings.

RBO (Webber, Moffat & Zobel 2010, "A similarity measure for indefinite rankings", TOIS 28(4)), the
extrapolated form of their equation 32, for lists S (length s) and L (length l >= s) and persistence p:

    RBO_ext = (1 - p) / p * ( sum_{d=1}^{l} X_d / d * p^d  +  sum_{d=s+1}^{l} X_s * (d - s) / (s * d) * p^d )
              + ( (X_l - X_s) / l + X_s / s ) * p^l

where X_d is the overlap of the two lists' first d items; past the end of S, X_d is the overlap of all of S
with L's first d. (With s = l the second sum is empty and the last term is X_l / l * p^l.) RBO_ext is 1 for
identical lists and 0 for disjoint ones; two empty lists count 1 (nothing differs), one empty list 0.

Jaccard@k = |A_k ∩ B_k| / |A_k ∪ B_k| over the two lists' first k items (1 when both are empty).

Rankings are (n, depth) document keys padded with -1 on the right, without repeated keys, as in
scoring.metrics.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RBO_P", "jaccard_at", "overlap_depths", "rbo_ext"]

RBO_P = 0.9


def overlap_depths(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, len_a, len_b): X[:, d-1] = the number of keys that are in the first d items of both lists
    (a key counts at depth max(its rank in a, its rank in b)), for d = 1..depth."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"two (n, depth) arrays of one shape are needed, got {a.shape} and {b.shape}")
    n, depth = a.shape
    len_a, len_b = (a >= 0).sum(axis=1), (b >= 0).sum(axis=1)
    if n == 0 or depth == 0:
        return np.zeros((n, depth)), len_a, len_b
    # Rank (1-based) in b of each key of a: search (row, key) in b's sorted (row, key) pairs.
    row = np.repeat(np.arange(n), depth)
    keys_b = np.stack([row, b.ravel()], axis=1)
    order = np.lexsort((keys_b[:, 1], keys_b[:, 0]))
    sorted_row, sorted_key = keys_b[order, 0], keys_b[order, 1]
    rank_b = (order % depth) + 1
    flat_a = a.ravel()
    lo = np.searchsorted(sorted_row, row, side="left")
    hi = np.searchsorted(sorted_row, row, side="right")
    pos = np.empty(len(flat_a), dtype=np.int64)
    for r in range(n):  # one searchsorted per row on its slice (rows are short)
        s, e = lo[r * depth], hi[r * depth]
        pos[r * depth : (r + 1) * depth] = s + np.searchsorted(
            sorted_key[s:e], flat_a[r * depth : (r + 1) * depth]
        )
    pos = np.minimum(pos, len(sorted_key) - 1)
    found = (sorted_row[pos] == row) & (sorted_key[pos] == flat_a) & (flat_a >= 0)
    rank_a = np.tile(np.arange(1, depth + 1), n)
    at = np.where(found, np.maximum(rank_a, rank_b[pos]), 0).reshape(n, depth)
    counts = np.zeros((n, depth + 1))
    np.add.at(counts, (np.repeat(np.arange(n), depth), at.ravel()), 1.0)
    counts[:, 0] = 0.0  # keys not in both lists
    return np.cumsum(counts[:, 1:], axis=1), len_a, len_b


def rbo_ext(a: np.ndarray, b: np.ndarray, p: float = RBO_P) -> np.ndarray:
    """RBO_ext of each pair of rows (see the module docstring)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be between 0 and 1")
    x, len_a, len_b = overlap_depths(a, b)
    n, depth = x.shape
    out = np.zeros(n)
    d = np.arange(1, depth + 1, dtype=np.float64)
    weights = p**d
    for r in range(n):
        short, long = int(min(len_a[r], len_b[r])), int(max(len_a[r], len_b[r]))
        if long == 0:
            out[r] = 1.0
            continue
        if short == 0:
            continue
        xr = x[r]
        first = float(np.sum(xr[:long] / d[:long] * weights[:long]))
        xs = xr[short - 1]
        tail = d[short:long]
        second = float(np.sum(xs * (tail - short) / (short * tail) * weights[short:long]))
        out[r] = (1 - p) / p * (first + second) + ((xr[long - 1] - xs) / long + xs / short) * p**long
    return out


def jaccard_at(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Jaccard@k of each pair of rows."""
    x, len_a, len_b = overlap_depths(a, b)
    depth = x.shape[1]
    if depth == 0:
        return np.ones(x.shape[0])
    shared = x[:, min(k, depth) - 1]
    union = np.minimum(len_a, k) + np.minimum(len_b, k) - shared
    return np.divide(shared, union, out=np.ones(len(shared)), where=union > 0)

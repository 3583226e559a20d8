"""RBO_ext and Jaccard@k against a plain-Python transcription of Webber et al. (2010), equation 32, with sets."""

import random

import numpy as np
import pytest

from scoring.measures.overlap import jaccard_at, rbo_ext


def reference_rbo(S: list, L: list, p: float) -> float:
    """Equation 32 term by term, overlaps counted with Python sets (S the shorter list)."""
    if len(S) > len(L):
        S, L = L, S
    s, n_l = len(S), len(L)
    if n_l == 0:
        return 1.0
    if s == 0:
        return 0.0

    def X(d):
        return len(set(S[: min(d, s)]) & set(L[:d]))

    total = sum(X(d) / d * p**d for d in range(1, n_l + 1))
    total += sum(X(s) * (d - s) / (s * d) * p**d for d in range(s + 1, n_l + 1))
    return (1 - p) / p * total + ((X(n_l) - X(s)) / n_l + X(s) / s) * p**n_l


def padded(lists, depth):
    out = np.full((len(lists), depth), -1, dtype=np.int64)
    for i, values in enumerate(lists):
        out[i, : len(values)] = values
    return out


def test_rbo_and_jaccard_match_the_reference_on_random_lists():
    rng = random.Random(3)
    pairs = []
    for _ in range(300):
        universe = list(range(rng.randint(1, 40)))
        a = rng.sample(universe, rng.randint(0, len(universe)))
        b = rng.sample(universe, rng.randint(0, len(universe)))
        pairs.append((a, b))
    depth = max(max(len(a), len(b)) for a, b in pairs)
    A, B = padded([a for a, _ in pairs], depth), padded([b for _, b in pairs], depth)
    for p in (0.9, 0.5):
        got = rbo_ext(A, B, p)
        for i, (a, b) in enumerate(pairs):
            assert got[i] == pytest.approx(reference_rbo(a, b, p), abs=1e-12), (a, b)
    for k in (1, 5, 10):
        got = jaccard_at(A, B, k)
        for i, (a, b) in enumerate(pairs):
            sa, sb = set(a[:k]), set(b[:k])
            expected = len(sa & sb) / len(sa | sb) if sa | sb else 1.0
            assert got[i] == pytest.approx(expected, abs=1e-12)


def test_known_values():
    same = padded([[1, 2, 3, 4]], 4)
    assert rbo_ext(same, same)[0] == pytest.approx(1.0)
    assert rbo_ext(padded([[1, 2]], 2), padded([[3, 4]], 2))[0] == 0.0
    # a b c d vs b a c d at p = 0.9: X_d / d = 0, 1, 1, 1 -> (0.1 / 0.9) * (0.81 + 0.729 + 0.6561) + 4 / 4 * 0.6561
    swapped = rbo_ext(padded([[1, 2, 3, 4]], 4), padded([[2, 1, 3, 4]], 4))[0]
    assert swapped == pytest.approx(0.1 / 0.9 * (0.81 + 0.729 + 0.6561) + 0.6561)

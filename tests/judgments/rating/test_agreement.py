"""Tests for judgments.rating.agreement against the krippendorff package and scikit-learn."""

import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from judgments.rating.agreement import (
    cohen_kappa_quadratic,
    krippendorff_alpha_ordinal,
    pairwise_kappas,
)

DOMAIN = [0, 1, 2, 3, 4]


def _reference_alpha(units_by_raters):
    """krippendorff package; it takes raters x units."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return krippendorff.alpha(
            reliability_data=np.asarray(units_by_raters, dtype=float).T,
            level_of_measurement="ordinal",
            value_domain=DOMAIN,
        )


def _reference_kappa(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a, b, weights="quadratic", labels=DOMAIN)


def _random_pool(rng, n_units, n_raters, missing, correlated):
    truth = rng.integers(0, 5, size=n_units)
    noise = rng.integers(-1, 2, size=(n_units, n_raters)) * (rng.random((n_units, n_raters)) < 0.4)
    grades = np.clip(truth[:, None] + noise, 0, 4) if correlated else rng.integers(0, 5, (n_units, n_raters))
    data = grades.astype(float)
    data[rng.random((n_units, n_raters)) < missing] = np.nan
    return data


def _nan_equal(x, y):
    return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, abs=1e-9)


# ---------------------------------------------------------------------------
# Krippendorff's alpha
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_alpha_matches_krippendorff_package(seed):
    rng = np.random.default_rng(seed)
    data = _random_pool(
        rng,
        n_units=int(rng.integers(2, 300)),
        n_raters=int(rng.integers(2, 8)),
        missing=float(rng.choice([0.0, 0.3, 0.7])),
        correlated=bool(seed % 2),
    )
    pairable = int(np.count_nonzero((~np.isnan(data)).sum(axis=1) >= 2))
    if pairable == 0:
        assert krippendorff_alpha_ordinal(data) == (pytest.approx(math.nan, nan_ok=True), 0)
        return
    alpha, n_units = krippendorff_alpha_ordinal(data)
    assert n_units == pairable
    assert _nan_equal(alpha, _reference_alpha(data))


def test_alpha_list_input_ragged_and_missing():
    rng = np.random.default_rng(123)
    data = _random_pool(rng, 150, 5, missing=0.5, correlated=True)
    ragged = [[v for v in row if not np.isnan(v)] for row in data]  # only present grades
    with_none = [[None if np.isnan(v) else int(v) for v in row] for row in data]
    expected = _reference_alpha(data)
    for units in (ragged, with_none, data.tolist()):
        alpha, n_units = krippendorff_alpha_ordinal(units)
        assert alpha == pytest.approx(expected, abs=1e-9)
        assert n_units == sum(len(r) >= 2 for r in ragged)


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.lists(
        st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=3, max_size=3),
        min_size=1,
        max_size=40,
    )
)
def test_alpha_hypothesis(rows):
    data = np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)
    alpha, n_units = krippendorff_alpha_ordinal(data)
    pairable = int(np.count_nonzero((~np.isnan(data)).sum(axis=1) >= 2))
    assert n_units == pairable
    if pairable == 0:
        assert math.isnan(alpha)
    else:
        assert _nan_equal(alpha, _reference_alpha(data))


def test_alpha_hand_examples():
    # Perfect agreement -> 1.
    assert krippendorff_alpha_ordinal([[0, 0], [1, 1, 1], [4, 4], [2, 2], [3]]) == (1.0, 4)
    # Krippendorff's classic example (values 1..4 here fit in 0..4): ordinal alpha.
    rel = [
        [np.nan, np.nan, np.nan, np.nan, np.nan, 3, 4, 1, 2, 1, 1, 3, 3, np.nan, 3],
        [1, np.nan, 2, 1, 3, 3, 4, 3, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
        [np.nan, np.nan, 2, 1, 3, 4, 4, np.nan, 2, 1, 1, 3, 3, np.nan, 4],
    ]
    units = np.array(rel, dtype=float).T
    alpha, n_units = krippendorff_alpha_ordinal(units)
    assert n_units == 12  # units rated by 2+ coders
    assert alpha == pytest.approx(_reference_alpha(units), abs=1e-12)
    # Systematic disagreement below chance -> negative.
    alpha, _ = krippendorff_alpha_ordinal([[0, 4], [4, 0], [0, 4], [4, 0]])
    assert alpha < 0


def test_alpha_degenerate():
    assert krippendorff_alpha_ordinal([]) == (pytest.approx(math.nan, nan_ok=True), 0)
    alpha, n = krippendorff_alpha_ordinal([[1], [2, None], [3]])
    assert math.isnan(alpha) and n == 0
    alpha, n = krippendorff_alpha_ordinal([[2, 2], [2, 2, 2]])  # no variation: 0/0
    assert math.isnan(alpha) and n == 2
    assert math.isnan(_reference_alpha([[2, 2, np.nan], [2, 2, 2]]))


def test_alpha_rejects_non_grades():
    with pytest.raises(ValueError):
        krippendorff_alpha_ordinal([[1, 5]])
    with pytest.raises(ValueError):
        krippendorff_alpha_ordinal([[1, 2.5]])
    with pytest.raises(ValueError):
        krippendorff_alpha_ordinal(np.array([1.0, 2.0]))


# ---------------------------------------------------------------------------
# Cohen's kappa
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_kappa_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    a = rng.integers(0, 5, n)
    if seed % 2:
        b = np.clip(a + rng.integers(-1, 2, n), 0, 4)
    else:
        b = rng.integers(int(rng.integers(0, 3)), 5, n)
    assert _nan_equal(cohen_kappa_quadratic(a, b), _reference_kappa(a, b))
    assert _nan_equal(cohen_kappa_quadratic(list(map(float, a)), b.tolist()), _reference_kappa(a, b))


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=30))
def test_kappa_hypothesis(pairs):
    a, b = zip(*pairs, strict=True)
    assert _nan_equal(cohen_kappa_quadratic(a, b), _reference_kappa(a, b))


def test_kappa_hand_and_degenerate():
    assert cohen_kappa_quadratic([0, 1, 2, 3, 4], [0, 1, 2, 3, 4]) == 1.0
    assert cohen_kappa_quadratic([0, 4, 0, 4], [4, 0, 4, 0]) < 0
    # Both raters constant and identical: undefined -> nan (sklearn also nan).
    assert math.isnan(cohen_kappa_quadratic([2, 2, 2], [2, 2, 2]))
    assert math.isnan(_reference_kappa([2, 2, 2], [2, 2, 2]))
    # Constant but different: 0.0, as sklearn.
    assert cohen_kappa_quadratic([2, 2, 2], [3, 3, 3]) == 0.0 == _reference_kappa([2, 2, 2], [3, 3, 3])
    assert math.isnan(cohen_kappa_quadratic([], []))
    with pytest.raises(ValueError):
        cohen_kappa_quadratic([1, 2], [1])
    with pytest.raises(ValueError):
        cohen_kappa_quadratic([1, 7], [1, 2])


# ---------------------------------------------------------------------------
# pairwise kappas
# ---------------------------------------------------------------------------


def test_pairwise_kappas_against_sklearn():
    rng = np.random.default_rng(7)
    raters = ["ann", "bob", "cy", "dee"]
    ratings = {}
    for q in range(60):
        truth = int(rng.integers(0, 5))
        ratings[(f"q{q}", q % 7)] = {
            r: int(np.clip(truth + rng.integers(-1, 2), 0, 4)) for r in raters if rng.random() < 0.6
        }
    # "dee" shares only one item with "eve"; eve must not pair with anybody else.
    ratings[("extra", 0)] = {"dee": 3, "eve": 3}

    result = pairwise_kappas(ratings)
    pairs = [(ra, rb) for ra, rb, _, _ in result]
    assert pairs == sorted(pairs)
    assert all(ra < rb for ra, rb in pairs)
    assert not any("eve" in p for p in pairs)
    assert len(result) == 6
    for ra, rb, kappa, n_items in result:
        common = [k for k, by in ratings.items() if ra in by and rb in by]
        assert n_items == len(common) >= 2
        ga = [ratings[k][ra] for k in common]
        gb = [ratings[k][rb] for k in common]
        assert _nan_equal(kappa, _reference_kappa(ga, gb))


def test_pairwise_kappas_min_common_and_perfect():
    ratings = {
        "i1": {1: 3, 2: 3, 3: 0},
        "i2": {1: 1, 2: 1},
        "i3": {1: 4, 2: 4, 3: None},
    }
    assert pairwise_kappas(ratings) == [(1, 2, 1.0, 3)]
    assert pairwise_kappas({}) == []


# ---------------------------------------------------------------------------
# The distractor grade: -1, an ordinal category below 0
# ---------------------------------------------------------------------------

WITH_DISTRACTOR = [-1, 0, 1, 2, 3, 4]


@pytest.mark.parametrize("seed", range(20))
def test_minus_1_is_the_category_below_0_for_kappa_and_alpha(seed):
    rng = np.random.default_rng(seed)
    data = np.clip(_random_pool(rng, 40, 3, 0.2, True) - (rng.random((40, 3)) < 0.2), -1, 4)
    data[0, :2] = [-1, -1]  # always some distractors, one agreed on
    data[1, :2] = [-1, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = krippendorff.alpha(
            reliability_data=data.T, level_of_measurement="ordinal", value_domain=WITH_DISTRACTOR
        )
    assert _nan_equal(krippendorff_alpha_ordinal(data)[0], expected)
    both = ~np.isnan(data[:, 0]) & ~np.isnan(data[:, 1])
    a, b = data[both, 0], data[both, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = cohen_kappa_score(a, b, weights="quadratic", labels=WITH_DISTRACTOR)
    assert _nan_equal(cohen_kappa_quadratic(a, b), reference)


def test_a_scale_without_distractors_gets_the_figures_of_the_plain_0_to_4_scale():
    a, b = [0, 1, 2, 3, 4, 2, 1], [0, 2, 2, 4, 3, 1, 1]
    assert cohen_kappa_quadratic(a, b) == pytest.approx(_reference_kappa(a, b))
    units = [[0, 1], [2, 2, 3], [4, 3], [1, 1]]
    padded = [u + [np.nan] * (3 - len(u)) for u in units]
    assert krippendorff_alpha_ordinal(units)[0] == pytest.approx(_reference_alpha(padded))
    with pytest.raises(ValueError, match="-1..4"):
        cohen_kappa_quadratic([-2], [0])

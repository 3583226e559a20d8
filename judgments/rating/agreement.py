"""Inter-rater agreement for a judgment pool (pure numpy).

Grades are integers -1..4: 0..4, and -1, the distractor grade of the pools that enable it (looks
relevant, misleads), an ordinal category *below 0*: one step from 0, as 0 is from 1.  Two measures:

* :func:`krippendorff_alpha_ordinal` -- Krippendorff's alpha with the ordinal
  metric over all raters, tolerant of missing ratings; identical to
  ``krippendorff.alpha(reliability_data=<raters x units>,
  level_of_measurement="ordinal", value_domain=[-1, 0, 1, 2, 3, 4])``.
* :func:`cohen_kappa_quadratic` / :func:`pairwise_kappas` -- quadratic-weighted
  Cohen's kappa for pairs of raters; identical to
  ``sklearn.metrics.cohen_kappa_score(a, b, weights="quadratic", labels=[-1, 0, 1, 2, 3, 4])``
  (the weight of a distractor against a 0 is (-1 - 0)^2 = 1, against a 4 it is 25).

A category nobody used changes neither measure (its row and column of the coincidence or
confusion matrix are 0, and the ordinal distance sums over used categories only), so a pool
without distractors gets exactly the figures of the plain 0..4 scale.

Undefined values are returned as ``nan`` (never raised):

* alpha with no pairable unit (no unit has 2+ ratings): ``(nan, 0)`` -- the
  ``krippendorff`` package raises ValueError there;
* alpha when every pairable rating has the same grade (no variation, 0/0):
  ``nan`` -- same as the ``krippendorff`` package;
* kappa when both raters use one and the same grade for every item (0/0):
  ``nan`` -- same as scikit-learn (which also warns);
* kappa on zero items: ``nan`` -- scikit-learn raises ValueError there.

Note that kappa is a well-defined ``0.0`` when each rater is constant but the
two constants differ (e.g. all 2s vs all 3s), as in scikit-learn.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

__all__ = [
    "GRADES",
    "alpha_from_counts",
    "cohen_kappa_quadratic",
    "krippendorff_alpha_ordinal",
    "kappas_of_raters",
    "pairwise_kappas",
]

GRADES = (-1, 0, 1, 2, 3, 4)
_N_GRADES = len(GRADES)
_LOW, _HIGH = GRADES[0], GRADES[-1]


def _grade_indices(values: np.ndarray) -> np.ndarray:
    """Validate finite grades in -1..4 and return their category indices 0..5."""
    if values.size and (
        np.any(values != np.round(values)) or np.any(values < _LOW) or np.any(values > _HIGH)
    ):
        bad = values[(values != np.round(values)) | (values < _LOW) | (values > _HIGH)]
        raise ValueError(f"grades must be integers {_LOW}..{_HIGH}, got {bad[:5].tolist()}")
    return (values - _LOW).astype(np.intp)


def _value_counts(units) -> np.ndarray:
    """(n_units, 6) matrix: how many raters gave grade g (column g + 1) to unit u."""
    if isinstance(units, np.ndarray):
        arr = np.asarray(units, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError("an array of ratings must be 2-D (n_units, n_raters)")
        present = ~np.isnan(arr)
        grades = _grade_indices(arr[present])
        rows = np.nonzero(present)[0]
        counts = np.zeros((arr.shape[0], _N_GRADES), dtype=np.int64)
        np.add.at(counts, (rows, grades), 1)
        return counts
    # Ragged lists: flattened once (a loop per unit took 27 s for 200,000 units).
    lengths = np.fromiter((len(unit) for unit in units), dtype=np.intp, count=len(units))
    flat = np.fromiter(
        (np.nan if v is None else v for unit in units for v in unit),
        dtype=np.float64,
        count=int(lengths.sum()),
    )
    rows = np.repeat(np.arange(len(units)), lengths)
    present = ~np.isnan(flat)
    counts = np.zeros((len(units), _N_GRADES), dtype=np.int64)
    np.add.at(counts, (rows[present], _grade_indices(flat[present])), 1)
    return counts


def krippendorff_alpha_ordinal(units) -> tuple[float, int]:
    """Krippendorff's alpha (ordinal metric, grades -1..4) and the number of pairable units.

    ``units`` is either a list with one entry per unit (a unit = one
    (query, document) pair), each entry being the list of grades it received
    (``None``/``nan`` allowed for missing, lists may be ragged), or a
    ``(n_units, n_raters)`` float array with ``nan`` for missing ratings.
    Only units with 2+ ratings are pairable and counted in ``n_units``.

    Returns ``(alpha, n_units)``; alpha is ``nan`` when undefined (see the
    module docstring).  Note the ``krippendorff`` package takes the transposed
    layout (raters x units).
    """
    return alpha_from_counts(_value_counts(units))


def alpha_from_counts(counts: np.ndarray) -> tuple[float, int]:
    """krippendorff_alpha_ordinal from the (n_units, 6) matrix of how many raters gave grade g (column
    g + 1) to each unit."""
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    n_units = int(np.count_nonzero(pairable))
    if n_units == 0:
        return math.nan, 0
    counts = counts[pairable].astype(np.float64)
    m_u = m_u[pairable].astype(np.float64)

    # Coincidence matrix o[c, k] = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1).
    weighted = counts / (m_u - 1.0)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=0)
    n_total = n_c.sum()

    # Ordinal metric: delta[c, k] = (sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2.
    cum = np.concatenate(([0.0], np.cumsum(n_c)))
    lo = np.minimum.outer(np.arange(_N_GRADES), np.arange(_N_GRADES))
    hi = np.maximum.outer(np.arange(_N_GRADES), np.arange(_N_GRADES))
    delta = (cum[hi + 1] - cum[lo] - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2

    expected = (np.outer(n_c, n_c) - np.diag(n_c)) / (n_total - 1.0)
    d_observed = float((o * delta).sum())
    d_expected = float((expected * delta).sum())
    if d_expected == 0.0:
        return math.nan, n_units
    return 1.0 - d_observed / d_expected, n_units


def cohen_kappa_quadratic(a: Sequence[float], b: Sequence[float]) -> float:
    """Quadratic-weighted Cohen's kappa between two raters over the same items (grades -1..4).

    Equal to ``sklearn.metrics.cohen_kappa_score(a, b, weights="quadratic",
    labels=[-1, 0, 1, 2, 3, 4])``.  Returns ``nan`` when undefined: no items, or
    both raters gave one and the same grade to every item.
    """
    a_arr = np.asarray(a, dtype=np.float64).ravel()
    b_arr = np.asarray(b, dtype=np.float64).ravel()
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must have the same length ({a_arr.size} != {b_arr.size})")
    if np.any(np.isnan(a_arr)) or np.any(np.isnan(b_arr)):
        raise ValueError("ratings must not contain NaN")
    if a_arr.size == 0:
        return math.nan
    ga = _grade_indices(a_arr)
    gb = _grade_indices(b_arr)
    confusion = np.bincount(ga * _N_GRADES + gb, minlength=_N_GRADES * _N_GRADES)
    confusion = confusion.reshape(_N_GRADES, _N_GRADES).astype(np.float64)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / confusion.sum()
    grades = np.arange(_N_GRADES, dtype=np.float64)
    weights = (grades[:, None] - grades[None, :]) ** 2
    denominator = float((weights * expected).sum())
    if denominator == 0.0:
        return math.nan
    return 1.0 - float((weights * confusion).sum()) / denominator


def _ordered(keys) -> list:
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:  # mixed, unorderable rater ids: fall back to a stable textual order
        return sorted(keys, key=lambda k: (type(k).__name__, str(k)))


def pairwise_kappas(
    ratings: Mapping[Hashable, Mapping[Hashable, float]],
) -> list[tuple[Hashable, Hashable, float, int]]:
    """Quadratic-weighted kappa for every pair of raters with at least 2 common items.

    ``ratings`` maps item key -> {rater: grade}.  Returns
    ``[(rater_a, rater_b, kappa, n_common_items), ...]`` with rater_a < rater_b
    (raters sorted), pairs in lexicographic order.  kappa may be ``nan`` (see
    :func:`cohen_kappa_quadratic`).  ``None``/``nan`` grades are treated as
    missing.
    """
    raters = _ordered({r for by_rater in ratings.values() for r in by_rater})
    column = {r: i for i, r in enumerate(raters)}
    matrix = np.full((len(ratings), len(raters)), np.nan)
    for row, by_rater in enumerate(ratings.values()):
        for rater, grade in by_rater.items():
            if grade is not None:
                matrix[row, column[rater]] = grade
    present = ~np.isnan(matrix)
    result = []
    for i, j in itertools.combinations(range(len(raters)), 2):
        both = present[:, i] & present[:, j]
        n_common = int(np.count_nonzero(both))
        if n_common < 2:
            continue
        kappa = cohen_kappa_quadratic(matrix[both, i], matrix[both, j])
        result.append((raters[i], raters[j], kappa, n_common))
    return result


def kappas_of_raters(
    pair: np.ndarray, rater: np.ndarray, grade: np.ndarray
) -> list[tuple[int, int, float, int]]:
    """pairwise_kappas of ratings given as parallel arrays (one grade per (pair, rater)): the same
    [(rater_a, rater_b, kappa, n_common)], rater_a < rater_b, for every two raters with 2+ common pairs."""
    raters = np.unique(rater)
    graded = []
    for r in raters:
        mine = rater == r
        order = np.argsort(pair[mine], kind="stable")
        graded.append((pair[mine][order], grade[mine][order]))
    result = []
    for i, j in itertools.combinations(range(len(raters)), 2):
        (pa, ga), (pb, gb) = graded[i], graded[j]
        _, ia, ib = np.intersect1d(pa, pb, assume_unique=True, return_indices=True)
        if len(ia) < 2:
            continue
        result.append((int(raters[i]), int(raters[j]), cohen_kappa_quadratic(ga[ia], gb[ib]), len(ia)))
    return result

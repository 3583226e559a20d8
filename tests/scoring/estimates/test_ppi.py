"""The prediction-powered estimate of scoring.ppi against a hand-worked example, and its behaviour at
the edges (no sample, one sampled query, a perfect judge, a biased judge)."""

import math

import numpy as np
import pytest

from scoring import ppi


def test_hand_worked_example():
    # N = 4 queries with the model's values; n = 2 sampled queries with the humans' and the model's.
    model_all = [0.2, 0.4, 0.6, 0.8]
    human, model = [0.6, 0.9], [0.4, 0.8]
    e = ppi.estimate(model_all, human, model)
    # naive = 0.5; residuals 0.2 and 0.1, their mean 0.15: theta = 0.65.
    assert e.naive == pytest.approx(0.5, abs=1e-12)
    assert e.rectifier == pytest.approx(0.15, abs=1e-12)
    assert e.estimate == pytest.approx(0.65, abs=1e-12)
    # var_N(m_M) = (0.09 + 0.01 + 0.01 + 0.09) / 3 = 0.0666..., / 4 = 0.016666...
    # var_n(residual) = (0.05^2 + 0.05^2) / 1 = 0.005, / 2 = 0.0025
    half = 1.959964 * math.sqrt(0.2 / 3 / 4 + 0.005 / 2)
    assert half == pytest.approx(0.2713447, abs=1e-6)
    assert e.ci_low == pytest.approx(0.65 - half, abs=1e-12)
    assert e.ci_high == pytest.approx(0.65 + half, abs=1e-12)
    assert (e.human_queries, e.queries) == (2, 4)


def test_a_biased_judge_is_corrected_and_the_naive_mean_is_not():
    rng = np.random.default_rng(3)
    truth = rng.uniform(0, 1, 2000)
    model = np.clip(truth + 0.2 + rng.normal(0, 0.05, 2000), 0, 1.5)  # lenient by 0.2
    sample = rng.choice(2000, 200, replace=False)
    e = ppi.estimate(model, truth[sample], model[sample])
    assert abs(e.naive - truth.mean()) > 0.15
    assert e.ci_low <= truth.mean() <= e.ci_high
    assert abs(e.estimate - truth.mean()) < 0.02


def test_coverage_over_many_samples_is_about_95_percent():
    rng = np.random.default_rng(11)
    truth = rng.beta(2, 5, 3000)
    model = np.clip(0.7 * truth + 0.25 + rng.normal(0, 0.1, 3000), 0, 1)
    covered = 0
    for _ in range(400):
        sample = rng.choice(3000, 60, replace=False)
        e = ppi.estimate(model, truth[sample], model[sample])
        covered += e.ci_low <= truth.mean() <= e.ci_high
    assert 0.9 <= covered / 400 <= 0.99


def test_edges():
    e = ppi.estimate([0.5, 0.7], [], [])
    assert math.isnan(e.estimate) and e.naive == pytest.approx(0.6)
    one = ppi.estimate([0.5, 0.7], [1.0], [0.5])
    assert one.estimate == pytest.approx(1.1) and not one.has_interval
    perfect = ppi.estimate([0.1, 0.3, 0.5], [0.1, 0.5], [0.1, 0.5])
    assert perfect.estimate == pytest.approx(0.3) and perfect.rectifier == 0
    with pytest.raises(ValueError):
        ppi.estimate([], [], [])
    with pytest.raises(ValueError):
        ppi.estimate([0.1], [0.1, 0.2], [0.1])


def test_ppi_plus_plus_never_much_wider_and_equal_to_the_human_mean_for_a_useless_model():
    rng = np.random.default_rng(5)
    truth = rng.uniform(0, 1, 1000)
    useless = rng.uniform(0, 1, 1000)  # independent of the truth
    sample = rng.choice(1000, 100, replace=False)
    plain = ppi.estimate(useless, truth[sample], useless[sample])
    tuned = ppi.ppi_plus_plus(useless, truth[sample], useless[sample])
    assert tuned.half_width <= plain.half_width * 1.01
    good = np.clip(truth + rng.normal(0, 0.02, 1000), 0, 1)
    tuned_good = ppi.ppi_plus_plus(good, truth[sample], good[sample])
    assert (
        tuned_good.half_width
        < 0.5 * ppi.estimate(truth[sample], truth[sample], truth[sample]).half_width + 0.05
    )

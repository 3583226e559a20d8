"""Prediction-powered inference (PPI) for a mean over queries: many model grades, a few human ones.
Pure numpy, no Django.

Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference", Science 382 (2023);
applied to IR evaluation by Oosterhuis, Jagerman, Qin, Wang & Bendersky, "Reliable confidence intervals
for information retrieval evaluation using generative A.I.", KDD 2024 (arXiv 2407.02464).

A pool has N queries. For a measure m of one configuration (say nDCG@10):

* m_M(q): the measure computed from the model judge's grades alone (a pair the judge did not grade is
  unjudged), for every query q of the pool; a query the configuration did not answer counts 0.
* m_H(q): the measure computed from the humans' combined grades, for the n queries of the human sample:
  drawn uniformly at random by the app and graded completely by humans.

The estimate corrects the model's mean by its average error on the sample (the "rectifier"):

    θ = mean_N(m_M) + mean_n(m_H − m_M)

and its 95 % confidence interval, with sample variances (ddof = 1), is

    θ ± 1.959964 · sqrt(var_N(m_M) / N + var_n(m_H − m_M) / n).

For the difference between two configurations A and B, d(q) = m_A(q) − m_B(q) takes the place of m
(both from the model's grades over N, both from the humans' over n). The interval is valid whatever
the judge's bias, because the sample is random: a hand-picked set would break it. With n < 2 (or
N < 2) the variance is undefined and no interval is given.

PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453) tunes a weight λ on the model's part,
θ_λ = λ·mean_N(m_M) + mean_n(m_H − λ·m_M), which never widens the interval much and narrows it when the
model is good; it is given beside the plain estimate (``ppi_plus_plus``), clearly named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z_95 = 1.959964


@dataclass(frozen=True)
class Estimate:
    estimate: float
    ci_low: float  # nan without an interval (fewer than two sampled or total queries)
    ci_high: float
    naive: float  # the model-only mean over the N queries
    human_queries: int  # n
    queries: int  # N
    rectifier: float  # mean_n(m_H - m_M): how far off the model is on the sample, on average

    @property
    def has_interval(self) -> bool:
        return not math.isnan(self.ci_low)

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1)) if len(x) >= 2 else math.nan


def estimate(
    model_all: np.ndarray, human_sample: np.ndarray, model_sample: np.ndarray, z: float = Z_95
) -> Estimate:
    """The PPI estimate of a mean. model_all: m_M over all N queries; human_sample and model_sample:
    m_H and m_M over the n sampled queries (the same queries, in the same order)."""
    model_all = np.asarray(model_all, dtype=np.float64)
    human_sample = np.asarray(human_sample, dtype=np.float64)
    model_sample = np.asarray(model_sample, dtype=np.float64)
    if human_sample.shape != model_sample.shape:
        raise ValueError("the human and model values of the sample must be parallel")
    big_n, n = len(model_all), len(human_sample)
    if big_n == 0:
        raise ValueError("no query to estimate over")
    naive = float(model_all.mean())
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, naive, 0, big_n, math.nan)
    residual = human_sample - model_sample
    rectifier = float(residual.mean())
    theta = naive + rectifier
    spread = _var(model_all) / big_n + _var(residual) / n
    if math.isnan(spread):
        return Estimate(theta, math.nan, math.nan, naive, n, big_n, rectifier)
    half = z * math.sqrt(spread)
    return Estimate(theta, theta - half, theta + half, naive, n, big_n, rectifier)


def ppi_plus_plus(
    model_all: np.ndarray, human_sample: np.ndarray, model_sample: np.ndarray, z: float = Z_95
) -> Estimate:
    """PPI++ with the variance-minimising λ (clipped to [0, 1]) for a mean:
    λ = cov_n(m_H, m_M) / ((1 + n/N) · var_N+n(m_M)). λ = 1 is plain PPI, λ = 0 the humans' sample mean."""
    model_all = np.asarray(model_all, dtype=np.float64)
    human_sample = np.asarray(human_sample, dtype=np.float64)
    model_sample = np.asarray(model_sample, dtype=np.float64)
    big_n, n = len(model_all), len(human_sample)
    if n < 2 or big_n < 2:
        return estimate(model_all, human_sample, model_sample, z)
    pooled = np.concatenate([model_all, model_sample])
    var_m = float(np.var(pooled, ddof=1))
    cov = float(np.cov(human_sample, model_sample, ddof=1)[0, 1])
    lam = 0.0 if var_m == 0 else min(1.0, max(0.0, cov / ((1 + n / big_n) * var_m)))
    naive = float(model_all.mean())
    residual = human_sample - lam * model_sample
    theta = lam * naive + float(residual.mean())
    half = z * math.sqrt(lam * lam * _var(model_all) / big_n + _var(residual) / n)
    return Estimate(theta, theta - half, theta + half, naive, n, big_n, float(residual.mean()))

"""The gate's decision, from the stored per-query scores of two configurations' current runs.

Queries: every query of the pool that has stored scores (a row exists for every run and every graded
query, scoring.models), the union of both runs' rows; a query missing from a run, or not ranked by it,
counts 0. So each mean is the configuration's leaderboard and `export_scores` figure, and the paired
test runs over the same queries for both sides.

Tests (scoring.stats, the compare page's): `t` is the two-sided paired t-test (equal to
scipy.stats.ttest_rel), `randomization` the paired sign-flip test (10,000 flips, fixed seed).
A measure FAILS when the candidate's mean is lower than the baseline's by more than `max_drop` AND
p < alpha; a drop that is not significant, or significant but within `max_drop`, passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from urllib.parse import urlencode

import numpy as np
from django.urls import reverse

from judgments.models import Pool, Query, Run, SearchConfiguration

from .. import stats
from ..comparison import current_runs, run_scores
from ..flavours import DEFAULT_FLAVOUR, FLAVOURS
from ..links import absolute
from ..models import MEAN_FIELDS
from . import reports
from .measures import resolve

TESTS = ("t", "randomization")
DEFAULT_MEASURES = ("ndcg@10",)
DEFAULT_ALPHA = 0.05
LOSERS = 5  # queries listed per measure: those the candidate lost most on


class GateError(ValueError):
    """The gate cannot be evaluated (unknown pool, configuration, measure or flavour, a bad alpha, the
    baseline given as candidate, a configuration without a scored run); one line says which."""


@dataclass(frozen=True)
class Loser:
    query_id: str
    baseline: float
    candidate: float

    @property
    def diff(self) -> float:
        return self.candidate - self.baseline


@dataclass(frozen=True)
class MeasureResult:
    measure: str
    baseline: float  # mean over the gate's queries
    candidate: float
    p: float  # two-sided; nan with fewer than 2 queries (never significant)
    passed: bool
    wins: int
    ties: int
    losses: int
    losers: tuple[Loser, ...]

    @property
    def diff(self) -> float:
        return self.candidate - self.baseline

    def as_dict(self) -> dict:
        return {
            "measure": self.measure,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "diff": self.diff,
            "p": None if math.isnan(self.p) else self.p,
            "passed": self.passed,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "lost_most": [
                {"query": x.query_id, "baseline": x.baseline, "candidate": x.candidate, "diff": x.diff}
                for x in self.losers
            ],
        }


@dataclass
class GateResult:
    pool: Pool
    baseline: SearchConfiguration
    candidate: SearchConfiguration
    baseline_run: Run
    candidate_run: Run
    flavour: str
    test: str
    alpha: float
    max_drop: float
    queries: int
    measures: list[MeasureResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(m.passed for m in self.measures)

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"

    @property
    def failed(self) -> list[MeasureResult]:
        return [m for m in self.measures if not m.passed]


def check_options(alpha, max_drop, test: str, flavour: str | None) -> tuple[float, float, str, str]:
    """(alpha, max_drop, test, flavour) checked; GateError naming the bad one."""
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise GateError(f"--alpha must be a number between 0 and 1, not {alpha!r}") from None
    if not 0.0 < alpha < 1.0:
        raise GateError(f"--alpha must be strictly between 0 and 1, not {alpha:g}")
    try:
        max_drop = float(max_drop)
    except (TypeError, ValueError):
        raise GateError(f"--max-drop must be a number, not {max_drop!r}") from None
    if not max_drop >= 0.0 or math.isinf(max_drop):
        raise GateError(f"--max-drop must be a number of at least 0, not {max_drop:g}")
    if test not in TESTS:
        raise GateError(f"--test must be one of {', '.join(TESTS)}, not {test!r}")
    flavour = flavour or DEFAULT_FLAVOUR
    if flavour not in FLAVOURS:
        raise GateError(f"Unknown flavour {flavour!r}; one of {', '.join(FLAVOURS)}.")
    return alpha, max_drop, test, flavour


def find_configuration(pool: Pool, name: str, role: str) -> SearchConfiguration:
    found = pool.configurations.filter(name=name).first()
    if found is None:
        names = ", ".join(pool.configurations.order_by("name").values_list("name", flat=True)) or "none"
        raise GateError(f"Pool {pool.name} has no {role} configuration named {name!r} (it has: {names}).")
    return found


def evaluate_inputs(
    pool: Pool, baseline: str, candidate: str, measures=DEFAULT_MEASURES
) -> tuple[list[str], SearchConfiguration, SearchConfiguration]:
    """(stored measure names, baseline, candidate); GateError for an unknown measure or configuration,
    or the baseline given as the candidate."""
    try:
        names = resolve(list(measures) or DEFAULT_MEASURES, tuple(MEAN_FIELDS))
    except ValueError as exc:
        raise GateError(str(exc)) from None
    if baseline == candidate:
        raise GateError(f"The baseline and the candidate are the same configuration ({baseline!r}).")
    return (
        names,
        find_configuration(pool, baseline, "baseline"),
        find_configuration(pool, candidate, "candidate"),
    )


def evaluate(
    pool: Pool,
    baseline: str,
    candidate: str,
    *,
    measures=DEFAULT_MEASURES,
    flavour: str | None = None,
    alpha=DEFAULT_ALPHA,
    max_drop=0.0,
    test: str = "t",
) -> GateResult:
    """Gate `candidate`'s current run against `baseline`'s (see the module doc); GateError on bad input."""
    alpha, max_drop, test, flavour = check_options(alpha, max_drop, test, flavour)
    names, base, cand = evaluate_inputs(pool, baseline, candidate, measures)
    runs = current_runs([base, cand])
    for configuration in (base, cand):
        if configuration.pk not in runs:
            raise GateError(f"Configuration {configuration.name} has no run yet.")
    run_a, run_b = runs[base.pk], runs[cand.pk]
    scores = run_scores([run_a.pk, run_b.pk], flavour, names)
    sa, sb = scores[run_a.pk], scores[run_b.pk]
    for configuration, side in ((base, sa), (cand, sb)):
        if len(side.query_ids) == 0:
            raise GateError(
                f"The current run of {configuration.name} has no stored {flavour} scores yet "
                f"(is anything graded? run manage.py score --pool {pool.name})."
            )
    query_keys = np.union1d(sa.query_ids, sb.query_ids)
    a = _spread(sa, query_keys)
    b = _spread(sb, query_keys)
    if np.isnan(a).any() or np.isnan(b).any():
        unscored = [n for i, n in enumerate(names) if np.isnan(a[:, i]).any() or np.isnan(b[:, i]).any()]
        raise GateError(
            f"{', '.join(unscored)} not computed yet for these runs: run manage.py score --pool {pool.name}."
        )
    pvalues = _pvalues(a, b, test)
    external = dict(Query.objects.filter(pk__in=query_keys.tolist()).values_list("pk", "external_id"))
    result = GateResult(pool, base, cand, run_a, run_b, flavour, test, alpha, max_drop, len(query_keys))
    for i, name in enumerate(names):
        col_a, col_b = a[:, i], b[:, i]
        mean_a, mean_b = float(col_a.mean()), float(col_b.mean())
        p = float(pvalues[i])
        significant = not math.isnan(p) and p < alpha
        passed = not (mean_a - mean_b > max_drop and significant)
        diffs = col_b - col_a
        order = np.argsort(diffs, kind="stable")[:LOSERS]
        losers = tuple(
            Loser(external[int(query_keys[j])], float(col_a[j]), float(col_b[j]))
            for j in order
            if diffs[j] < 0
        )
        wins, ties, losses = stats.wins_ties_losses(col_a, col_b)
        result.measures.append(MeasureResult(name, mean_a, mean_b, p, passed, wins, ties, losses, losers))
    return result


def _spread(scores, query_keys: np.ndarray) -> np.ndarray:
    """(len(query_keys), metrics) values, 0 for a query the run has no row for."""
    values = np.zeros((len(query_keys), scores.values.shape[1]))
    values[np.searchsorted(query_keys, scores.query_ids)] = scores.values
    return values


def _pvalues(a: np.ndarray, b: np.ndarray, test: str) -> np.ndarray:
    if test == "randomization":
        if len(a) == 0:
            return np.full(a.shape[1], math.nan)
        return stats.randomization_pvalues(b - a, n_resamples=stats.N_RESAMPLES, seed=stats.SEED)
    return np.array([stats.paired_t_test(a[:, i], b[:, i])[1] for i in range(a.shape[1])])


def compare_link(result: GateResult) -> str:
    """The compare page of the two configurations, on the gate's first measure and flavour."""
    query = urlencode(
        [
            ("c", result.baseline.name),
            ("c", result.candidate.name),
            ("metric", result.measures[0].measure if result.measures else "ndcg@10"),
            ("flavour", result.flavour),
        ]
    )
    return absolute(f"{reverse('scoring:compare', args=[result.pool.name])}?{query}")


def notify(result: GateResult, link: str) -> None:
    """A failed gate tells the pool's webhooks (`gate.failed`); a passing one says nothing."""
    if result.passed:
        return
    from ..webhooks import events

    events.safely(events.gate_failed, reports.summary(result, link), result.pool, result.candidate)

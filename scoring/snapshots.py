"""The snapshot kinds (judgments.snapshots: stored, computed by a task when the pool changed) of the heavy
statistics, registered by dotted path when the app registry is ready (ScoringConfig.ready: nothing heavy
is imported until a snapshot is computed), and turned back into what their pages show.

- "agreement" (key ""): the pool's agreement between raters, judgments.rating.adjudication;
- "trust" (key: the judge's id): a model judge against the humans, scoring.trust.judge_trust;
- "estimates" (key: "judge id|measure|flavour"): prediction-powered estimates, scoring.estimates, with
  the difference of every two configurations.

Each stored value is the direct computation's figures as JSON (nan stored as null); `trust_from` and
`estimates_from` rebuild the objects the pages use, reading the few rows they name (the far pairs shown,
the configurations) as they are now.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from judgments import snapshots
from judgments.models import ModelJudge, Pair, Pool, SearchConfiguration
from judgments.rating import adjudication

from . import ppi
from . import trust as trust_module
from .estimates import Estimated, EstimateError, estimates
from .flavours import DEFAULT_FLAVOUR

AGREEMENT, TRUST, ESTIMATES = "agreement", "trust", "estimates"
DEFAULT_MEASURE = "ndcg@10"


def agreement_value(pool: Pool, key: str) -> dict:
    return adjudication.agreement_value(pool)


def _judges(pool: Pool):
    return ModelJudge.objects.filter(pool=pool, archived_at__isnull=True).order_by("pk")


def judge_keys(pool: Pool) -> list[str]:
    return [str(pk) for pk in _judges(pool).values_list("pk", flat=True)]


def estimate_key(judge: ModelJudge, measure: str, flavour: str) -> str:
    return f"{judge.pk}|{measure}|{flavour}"


def estimate_keys(pool: Pool) -> list[str]:
    return [f"{pk}|{DEFAULT_MEASURE}|{DEFAULT_FLAVOUR}" for pk in _judges(pool).values_list("pk", flat=True)]


def _judge(pool: Pool, pk: str) -> ModelJudge | None:
    return ModelJudge.objects.select_related("user", "pool").filter(pool=pool, pk=int(pk)).first()


# --- Trust ----------------------------------------------------------------------------------------------


def trust_value(pool: Pool, key: str) -> dict | None:
    """The trust page's figures of judge `key` (None: no such judge any more)."""
    judge = _judge(pool, key)
    if judge is None:
        return None
    t = trust_module.judge_trust(judge)
    d = t.decisions
    return {
        "n_graded": t.n_graded,
        "n_cant": t.n_cant,
        "n_pairs": t.n_pairs,
        "exact": t.exact,
        "within_one": t.within_one,
        "kappa": t.kappa,
        "alpha": t.alpha,
        "alpha_humans": t.alpha_humans,
        "n_alpha_humans": t.n_alpha_humans,
        "mean_gap": t.mean_gap,
        "confusion": t.confusion,
        "far": [[f.pair.pk, f.judge_grade, f.judge_reason, f.human_grades, f.human_grade] for f in t.far],
        "n_far": t.n_far,
        "n_far_unsent": t.n_far_unsent,
        "decisions": None
        if d is None
        else {
            "placings": [[p.configuration.pk, p.run_id, p.human, p.judge] for p in d.placings],
            "n_queries": d.n_queries,
            "flavour": d.flavour,
            "metric": d.metric,
        },
    }


def trust_from(judge: ModelJudge, value: dict) -> trust_module.Trust:
    """The Trust of a stored value: its figures, with the far pairs and configurations read now."""
    n = snapshots.number
    t = trust_module.Trust(
        judge=judge,
        n_graded=value["n_graded"],
        n_cant=value["n_cant"],
        n_pairs=value["n_pairs"],
        exact=n(value["exact"]),
        within_one=n(value["within_one"]),
        kappa=n(value["kappa"]),
        alpha=n(value["alpha"]),
        alpha_humans=n(value["alpha_humans"]),
        n_alpha_humans=value["n_alpha_humans"],
        mean_gap=n(value["mean_gap"]),
        confusion=value["confusion"],
        n_far=value["n_far"],
        n_far_unsent=value["n_far_unsent"],
    )
    far = value["far"]
    pairs = Pair.objects.select_related("query", "document", "adjudication_request").in_bulk(
        [row[0] for row in far]
    )
    t.far = [
        trust_module.FarPair(
            pairs[pk], grade, reason, humans, n(human), hasattr(pairs[pk], "adjudication_request")
        )
        for pk, grade, reason, humans, human in far
        if pk in pairs
    ]
    d = value["decisions"]
    if d is not None:
        configurations = SearchConfiguration.objects.in_bulk([row[0] for row in d["placings"]])
        placings = [
            trust_module.Placing(configurations[c], run, n(human), n(judged))
            for c, run, human, judged in d["placings"]
            if c in configurations
        ]
        decided = trust_module.decided(placings, d["n_queries"])
        decided.flavour, decided.metric = d["flavour"], d["metric"]
        t.decisions = decided
    return t


# --- Estimates ------------------------------------------------------------------------------------------

_FIELDS = ("estimate", "ci_low", "ci_high", "naive", "human_queries", "queries", "rectifier")


def _packed(e: ppi.Estimate) -> list:
    return [getattr(e, f) for f in _FIELDS]


def _unpacked(values: list) -> ppi.Estimate:
    n = snapshots.number
    e, low, high, naive, humans, queries, rectifier = values
    return ppi.Estimate(n(e), n(low), n(high), n(naive), humans, queries, n(rectifier))


def _negated(e: ppi.Estimate) -> ppi.Estimate:
    """The estimate of −m from that of m (ppi.estimate is odd in its inputs: exact, not rounded)."""
    return ppi.Estimate(
        -e.estimate, -e.ci_high, -e.ci_low, -e.naive, e.human_queries, e.queries, -e.rectifier
    )


def estimates_value(pool: Pool, key: str) -> dict | None:
    """The estimates of judge|measure|flavour `key` (None: no such judge any more; {"error": why} when
    they cannot be made), with the difference of every two configurations."""
    pk, measure, flavour = key.split("|")
    judge = _judge(pool, pk)
    if judge is None:
        return None
    try:
        table = estimates(pool, judge, measure, flavour)
    except EstimateError as error:
        return {"error": str(error)}
    differences = {}
    for i, j in itertools.combinations(range(len(table.rows)), 2):
        a, b = table.rows[i], table.rows[j]
        differences[f"{a.run_id}:{b.run_id}"] = _packed(table.difference(i, j))
    return {
        "measure": table.measure,
        "flavour": table.flavour,
        "n_sample": table.n_sample,
        "n_queries": table.n_queries,
        "rows": [
            [r.configuration.pk, r.run_id, _packed(r.estimate), _packed(r.plus_plus)] for r in table.rows
        ],
        "differences": differences,
    }


@dataclass(frozen=True)
class StoredEstimates:
    """What the estimates page shows of one judge: as scoring.estimates.Estimates, from a stored value."""

    judge: ModelJudge
    measure: str
    flavour: str
    rows: list[Estimated]
    n_sample: int
    n_queries: int
    differences: dict

    def difference(self, a: int, b: int) -> ppi.Estimate:
        ra, rb = self.rows[a].run_id, self.rows[b].run_id
        if f"{ra}:{rb}" in self.differences:
            return _unpacked(self.differences[f"{ra}:{rb}"])
        return _negated(_unpacked(self.differences[f"{rb}:{ra}"]))


def estimates_from(judge: ModelJudge, value: dict, configurations: dict) -> StoredEstimates:
    """The estimates of a stored value (not an error); `configurations`: {pk: SearchConfiguration}."""
    rows = [
        Estimated(configurations[c], run, _unpacked(e), _unpacked(pp))
        for c, run, e, pp in value["rows"]
        if c in configurations
    ]
    return StoredEstimates(
        judge,
        value["measure"],
        value["flavour"],
        rows,
        value["n_sample"],
        value["n_queries"],
        value["differences"],
    )


def configurations_of(values) -> dict:
    """{pk: SearchConfiguration} of every configuration the stored estimates name, in one statement."""
    pks = {row[0] for value in values if value and "rows" in value for row in value["rows"]}
    return SearchConfiguration.objects.in_bulk(sorted(pks))

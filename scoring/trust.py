"""How far to trust a model judge: the judge against the human raters on the pairs both graded, and
whether its grades would change which configuration wins. Admins only.

The reference is the humans' grade of a pair: the human raters' grades (other model judges left out,
can't judge is no grade) combined by the pool's rule, ignoring final grades (the trust page measures
the judge against raters; an admin's final grade may itself have been settled with the judge's view).
Agreement compares the judge's grade with that reference rounded as the exports round it (half up; a
negative one, a distractor to scoring, -1: judgments.scale.rounded_grade):
exact agreement, the share within one grade, quadratic-weighted Cohen's κ and Krippendorff's α
(ordinal, two coders), computed by judgments.rating.agreement, the code of the agreement page; the
humans' own α on the same pairs (where two or more humans graded) is the yardstick beside it.

Effect on decisions: every configuration's current run is scored in memory (scoring.metrics, NDCG@10
in the default flavour) twice over the same pairs and queries: with the humans' grades, and with the
judge's grades. A query the run did not rank counts 0, as on the leaderboard. Kendall's τ-b between
the two lists of means says how far the orderings agree; the configuration pairs whose order flips are
listed. Pairs where the judge and the humans' grade are `FAR` or more apart can be sent to adjudication.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from django.db import connection

from judgments.judges.examples import example_pair_ids
from judgments.models import CombineRule, ModelJudge, Pair, Pool, Run
from judgments.pgcopy.rows import read_columns
from judgments.rating import agreement
from judgments.scale import rounded_grade

from . import metrics
from .cells import Batch, read_rankings
from .grades import NO_GRADE, Grades, combine_grades, model_raters

FAR = 2  # grades apart: a pair worth an admin's look
HEADLINE = "ndcg@10"
FEW_PAIRS = 30  # below this, the figures say little
SHOWN_FAR = 50
# The verdict's thresholds (docs/judges.md states them): quadratic-weighted κ below KAPPA_CHANCE is
# "no better than chance"; a judge is trusted from KAPPA_TRUST (Krippendorff's "tentative conclusions"
# bound), when its α with the humans is at most ALPHA_MARGIN below the humans' own α and no pair of
# configurations changes order with its grades.
KAPPA_CHANCE = 0.2
KAPPA_TRUST = 0.67
ALPHA_MARGIN = 0.05


def kendall_tau_b(x, y) -> float:
    """Kendall's τ-b of two equally long sequences (ties in either count as in scipy.stats.kendalltau);
    nan with fewer than two items or when either is constant."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    if len(x) < 2:
        return math.nan
    upper = np.triu_indices(len(x), 1)
    dx = np.sign(x[:, None] - x[None, :])[upper]
    dy = np.sign(y[:, None] - y[None, :])[upper]
    pairs = len(dx)
    denominator = math.sqrt(
        float(pairs - np.count_nonzero(dx == 0)) * float(pairs - np.count_nonzero(dy == 0))
    )
    return float((dx * dy).sum() / denominator) if denominator else math.nan


@dataclass
class FarPair:
    pair: Pair
    judge_grade: int
    judge_reason: str
    human_grades: list[int]
    human_grade: float
    sent: bool

    @property
    def gap(self) -> float:
        return self.judge_grade - self.human_grade


@dataclass
class Placing:
    configuration: object
    run_id: int
    human: float  # mean NDCG@10 with the humans' grades
    judge: float  # ... with the judge's grades
    human_rank: int = 0
    judge_rank: int = 0


@dataclass
class Decisions:
    placings: list[Placing]  # by the humans' mean, best first
    tau: float  # Kendall's τ-b between the two lists of means (nan below 2 configurations)
    flips: list[tuple[Placing, Placing]]  # (better by humans, better by the judge)
    n_queries: int
    flavour: str = metrics.DEFAULT_FLAVOUR
    metric: str = HEADLINE


@dataclass
class Trust:
    judge: ModelJudge
    n_graded: int  # the judge's grades in the pool
    n_cant: int  # its can't-judge answers
    n_pairs: int  # pairs both the judge and humans graded
    exact: float = math.nan
    within_one: float = math.nan
    kappa: float = math.nan
    alpha: float = math.nan
    alpha_humans: float = math.nan  # the humans among themselves on these pairs
    n_alpha_humans: int = 0
    mean_gap: float = math.nan  # judge minus humans, on average (> 0: the judge is lenient)
    confusion: list[list[int]] = field(default_factory=list)  # [human grade][judge grade]
    far: list[FarPair] = field(default_factory=list)
    n_far: int = 0
    n_far_unsent: int = 0
    decisions: Decisions | None = None

    @property
    def few(self) -> bool:
        return self.n_pairs < FEW_PAIRS


@dataclass(frozen=True)
class Verdict:
    trusted: bool
    text: str


def _n(value: float) -> str:
    """Two decimals with a real minus sign, as the page prints figures."""
    return f"{value:.2f}".replace("-", "−")


def verdict(trust: Trust, *, probed=(), circular=()) -> Verdict | None:
    """The page's answer to "Can we trust this judge?" in one sentence (thresholds above); None when the
    judge has graded no pair a human graded (the page says so instead). `probed`: the gullibility probes'
    results per kind (one failing more than probes.FAIL_RATE is a reason); `circular`: configurations
    using the judge's own model (circularity.circular_configurations), each a reason."""
    if not trust.n_pairs:
        return None
    if trust.few:
        return Verdict(
            False,
            f"Not yet: only {trust.n_pairs} pair{'s' if trust.n_pairs != 1 else ''} both graded; judge at "
            f"least {FEW_PAIRS} (better a few hundred) human-graded pairs before deciding.",
        )
    kappa, alpha, humans = trust.kappa, trust.alpha, trust.alpha_humans
    problems = []
    if math.isnan(kappa):
        problems.append("its agreement with the humans cannot be measured (the grades do not vary)")
    elif kappa < KAPPA_CHANCE:
        problems.append(f"agrees with the humans no better than chance (κ {_n(kappa)})")
    elif kappa < KAPPA_TRUST:
        problems.append(f"agrees with the humans only in part (κ {_n(kappa)}, below {KAPPA_TRUST:.2f})")
    elif not math.isnan(alpha) and not math.isnan(humans) and alpha < humans - ALPHA_MARGIN:
        problems.append(
            f"agrees with the humans less than they agree with each other "
            f"(α {_n(alpha)} against the humans' own {_n(humans)})"
        )
    d = trust.decisions
    if d is not None and d.flips:
        winner = next(p for p in d.placings if p.human_rank == 1)
        n = len(d.flips)
        if winner.judge_rank != 1:
            problems.append(f"would change the winner (τ {_n(d.tau)})")
        else:
            problems.append(f"would reorder {n} configuration pair{'s' if n != 1 else ''} (τ {_n(d.tau)})")
    fooled = [f"{r.kind} {r.tried - r.passed} of {r.tried}" for r in probed if r.alarming]
    if fooled:
        problems.append(f"can be fooled (probes failed: {', '.join(fooled)})")
    names = sorted({c["configuration"].name for c in circular})
    if names:
        problems.append(f"would grade its own model's output ({', '.join(names)})")
    if problems:
        return Verdict(False, "Not yet: " + " and ".join(problems) + ".")
    if math.isnan(humans):
        against = "no pair has two human grades to set beside it"
    elif alpha >= humans:
        against = f"above the humans' own α {_n(humans)}"
    else:
        against = f"α {_n(alpha)}, close to the humans' own {_n(humans)}"
    if d is None or len(d.placings) < 2:
        decided = "no two configurations to set in order yet"
    else:
        decided = f"no configuration pair flips (τ {_n(d.tau)})"
    return Verdict(True, f"Yes: κ {_n(kappa)}, {against}, and {decided}.")


# --- Gathering ------------------------------------------------------------------------------------------


def _graded_rows(pool: Pool) -> tuple[np.ndarray, ...]:
    """(pair, query, doc, rater, grade) of every grade (not can't judge) in the pool, read as arrays by
    binary COPY (row by row took 22 s for 1.2M grades)."""
    with connection.cursor() as cursor:
        columns = read_columns(
            cursor,
            """
            SELECT array_agg(j.pair_id::int8), array_agg(p.query_id::int8), array_agg(p.document_id::int8),
                   array_agg(j.rater_id::int8), array_agg(j.grade::int8)
            FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id
            WHERE p.pool_id = %s AND NOT j.cant_judge
            """,
            [pool.pk],
            [">i8"] * 5,
        )
    return tuple(column.astype(np.int64) for column in columns)


@dataclass
class _Compared:
    """The pairs both the judge and humans graded, ordered by (query, doc): the judge's grade and the
    humans' combined grade of each, and every human grade by pair."""

    pair: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    judge: np.ndarray  # int
    humans: np.ndarray  # float: combined by the pool's rule
    human_grades: dict[int, list[int]]


def _compare(judge: ModelJudge) -> _Compared:
    pool = judge.pool
    pair, query, doc, rater, grade = _graded_rows(pool)
    with connection.cursor() as cursor:
        models = model_raters(cursor)
    is_judge, human = rater == judge.user_id, ~np.isin(rater, models)
    # The pairs both graded, as a table indexed by pair id (np.intersect1d hashed 1.2M ids for 8 s).
    in_common = np.zeros(int(pair.max()) + 1 if len(pair) else 0, dtype=bool)
    in_common[pair[is_judge]] = True
    graded_by_humans = np.zeros_like(in_common)
    graded_by_humans[pair[human]] = True
    in_common &= graded_by_humans
    # Pairs shown to the judge as examples in its prompt do not measure it.
    shown = np.asarray(sorted(example_pair_ids(judge)), dtype=np.int64)
    in_common[shown[shown < len(in_common)]] = False
    both = in_common[pair] if len(pair) else np.zeros(0, dtype=bool)
    rows = human & both
    combined = combine_grades(
        pair[rows],
        query[rows],
        doc[rows],
        np.full(int(rows.sum()), NO_GRADE),
        grade[rows],
        rule=CombineRule(pool.combine_rule),
    )
    by_key = {
        (int(q), int(d)): g for q, d, g in zip(combined.query, combined.doc, combined.grade, strict=True)
    }
    take = is_judge & both
    order = np.lexsort((doc[take], query[take]))
    j_query, j_doc = query[take][order], doc[take][order]
    human_grades: dict[int, list[int]] = {}
    for p, g in zip(pair[rows], grade[rows], strict=True):
        human_grades.setdefault(int(p), []).append(int(g))
    return _Compared(
        pair[take][order],
        j_query,
        j_doc,
        grade[take][order],
        np.array([by_key[(int(q), int(d))] for q, d in zip(j_query, j_doc, strict=True)], dtype=np.float64),
        human_grades,
    )


def judge_trust(judge: ModelJudge) -> Trust:
    """Every figure of the trust page for `judge` (see the module docstring)."""
    pool = judge.pool
    mine = judge.user.judgments.filter(pair__pool=pool)
    trust = Trust(
        judge=judge,
        n_graded=mine.filter(cant_judge=False).count(),
        n_cant=mine.filter(cant_judge=True).count(),
        n_pairs=0,
    )
    c = _compare(judge)
    trust.n_pairs = len(c.pair)
    if not len(c.pair):
        return trust
    # Rounded as the exports round: half up, and a negative combined grade (a distractor) -1.
    h_int = np.array([rounded_grade(g) for g in c.humans.tolist()], dtype=np.int64)
    trust.exact = float(np.mean(c.judge == h_int))
    trust.within_one = float(np.mean(np.abs(c.judge - h_int) <= 1))
    trust.mean_gap = float(np.mean(c.judge - c.humans))
    trust.kappa = agreement.cohen_kappa_quadratic(h_int, c.judge)
    trust.alpha, _ = agreement.krippendorff_alpha_ordinal(
        np.column_stack([h_int, c.judge]).astype(np.float64)
    )
    # Rows: the humans' grade; columns: the judge's; -1 (distractor) first when the pool has that grade.
    low, n = pool.grades[0], len(pool.grades)
    trust.confusion = np.bincount((h_int - low) * n + c.judge - low, minlength=n * n).reshape(n, n).tolist()
    units = [grades for grades in c.human_grades.values() if len(grades) >= 2]
    if units:
        trust.alpha_humans, trust.n_alpha_humans = agreement.krippendorff_alpha_ordinal(units)

    gap = np.abs(c.judge - c.humans)
    far = np.flatnonzero(gap >= FAR)
    far = far[np.argsort(-gap[far], kind="stable")]
    far_ids = [int(c.pair[i]) for i in far]
    sent = set(
        Pair.objects.filter(pk__in=far_ids, adjudication_request__isnull=False).values_list("pk", flat=True)
    )
    settled = set(Pair.objects.filter(pk__in=far_ids, final_grade__isnull=False).values_list("pk", flat=True))
    trust.n_far = len(far_ids)
    trust.n_far_unsent = len([p for p in far_ids if p not in sent and p not in settled])
    shown = far[:SHOWN_FAR]
    pairs = Pair.objects.select_related("query", "document").in_bulk([int(c.pair[i]) for i in shown])
    notes = dict(judge.user.judgments.filter(pair__in=list(pairs)).values_list("pair_id", "note"))
    trust.far = [
        FarPair(
            pairs[int(c.pair[i])],
            int(c.judge[i]),
            notes.get(int(c.pair[i]), ""),
            sorted(c.human_grades[int(c.pair[i])]),
            float(c.humans[i]),
            int(c.pair[i]) in sent,
        )
        for i in shown
    ]
    trust.decisions = _decisions(
        pool, Grades(c.query, c.doc, c.humans), Grades(c.query, c.doc, c.judge.astype(np.float64))
    )
    return trust


def far_pairs(judge: ModelJudge) -> dict[int, str]:
    """{pair pk: why} of the unsettled pairs where the judge and the humans are FAR or more apart."""
    c = _compare(judge)
    far = np.flatnonzero(np.abs(c.judge - c.humans) >= FAR)
    ids = [int(c.pair[i]) for i in far]
    settled = set(Pair.objects.filter(pk__in=ids, final_grade__isnull=False).values_list("pk", flat=True))
    name = judge.user.username
    return {
        int(c.pair[i]): f"{name} gave {int(c.judge[i])}, the humans {c.humans[i]:g}"
        for i in far
        if int(c.pair[i]) not in settled
    }


def _decisions(pool: Pool, humans: Grades, judged: Grades) -> Decisions | None:
    """Mean NDCG@10 of every current run with either grade set, over the same pairs and queries."""
    runs = list(
        Run.objects.filter(configuration__pool=pool, configuration__archived_at__isnull=True)
        .current()
        .select_related("configuration")
    )
    if not runs:
        return None
    queries = np.unique(humans.query)
    with connection.cursor() as cursor:
        run_of, rank_query, docs = read_rankings(cursor, [r.pk for r in runs], Batch(), queries.tolist())
    order = np.argsort(rank_query, kind="stable")
    run_of, rank_query, docs = run_of[order], rank_query[order], docs[order]
    flavour = metrics.FLAVOURS[metrics.DEFAULT_FLAVOUR]
    placings = []
    scored = {}
    for name, grades in (("human", humans), ("judge", judged)):
        if len(rank_query):
            values = metrics.score(rank_query, docs, grades.query, grades.doc, grades.grade, flavour)[
                HEADLINE
            ]
        else:
            values = np.zeros(0)
        scored[name] = values
    for run in runs:
        mask = run_of == run.pk
        means = {name: float(values[mask].sum() / len(queries)) for name, values in scored.items()}
        placings.append(Placing(run.configuration, run.pk, means["human"], means["judge"]))
    return decided(placings, len(queries))


def decided(placings: list[Placing], n_queries: int) -> Decisions:
    """Rank `placings` both ways and list the configuration pairs that flip (the Decisions of them)."""
    placings.sort(key=lambda p: (-p.human, p.configuration.name))
    for rank, placing in enumerate(placings, start=1):
        placing.human_rank = rank
    for rank, placing in enumerate(sorted(placings, key=lambda p: (-p.judge, p.configuration.name)), start=1):
        placing.judge_rank = rank
    flips = [
        (a, b) if a.human > b.human else (b, a)
        for i, a in enumerate(placings)
        for b in placings[i + 1 :]
        if (a.human - b.human) * (a.judge - b.judge) < 0
    ]
    tau = kendall_tau_b([p.human for p in placings], [p.judge for p in placings])
    return Decisions(placings, tau, flips, n_queries)


# --- Pages ----------------------------------------------------------------------------------------------

"""Would the winner change with another assessor? The leaderboard by each rater and judge alone.

Voorhees, "Variations in relevance judgments and the measurement of retrieval effectiveness" (IPM 2000):
system rankings should survive a change of assessor. For every human rater and model judge with at
least `MIN_GRADES` grades in the pool, every configuration's current run is scored (NDCG@10 in the
default flavour, in memory, scoring.estimates.per_query) with that assessor's grades alone, over the
queries that assessor graded (a query the run did not answer counts 0). The humans' combined grades,
over the queries any human graded, give the reference leaderboard. Kendall's τ-b between every two
orderings (scoring.trust.kendall_tau_b) says how far they agree; the winner of each is named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Count

from judgments.models import Judgment, ModelJudge, Pool, Run

from .estimates import per_query
from .flavours import DEFAULT_FLAVOUR
from .grades import Grades, human_grades, rater_grades
from .trust import kendall_tau_b

MIN_GRADES = 30
MEASURE = "ndcg@10"


@dataclass(frozen=True)
class Board:
    name: str
    kind: str  # "humans" (combined), "rater" or "judge"
    n_grades: int
    n_queries: int
    means: list[float]  # per configuration, in Assessors.configurations order

    @property
    def order(self) -> list[int]:
        return sorted(range(len(self.means)), key=lambda i: -self.means[i])


@dataclass(frozen=True)
class Assessors:
    configurations: list  # SearchConfiguration, by the humans' mean
    boards: list[Board]  # the humans' first
    taus: list[list[float]]  # boards x boards

    def winner(self, board: Board):
        return self.configurations[board.order[0]] if self.configurations else None


def _board(name, kind, grades: Grades, run_ids, n_grades) -> Board:
    queries = np.unique(grades.query)
    values = per_query(run_ids, queries, grades, MEASURE, DEFAULT_FLAVOUR)
    means = values.mean(axis=1).tolist() if len(queries) else [0.0] * len(run_ids)
    return Board(name, kind, n_grades, len(queries), means)


def _humans_board(pool: Pool, run_ids: list[int], judges: set[int]) -> Board:
    human_queries = (
        Judgment.objects.filter(pair__pool=pool, cant_judge=False)
        .exclude(rater_id__in=judges)
        .values_list("pair__query_id", flat=True)
        .distinct()
    )
    combined = human_grades(pool, sorted(human_queries))
    return _board("humans (combined)", "humans", combined, run_ids, len(combined))


def humans_top(pool: Pool, n: int = 5) -> list[tuple]:
    """The top `n` (configuration, mean NDCG@10) by the humans' combined grades alone."""
    runs = list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))
    judges = set(ModelJudge.objects.filter(pool=pool).values_list("user_id", flat=True))
    board = _humans_board(pool, [r.pk for r in runs], judges)
    return [(runs[i].configuration, board.means[i]) for i in board.order[:n]]


def assessor_boards(pool: Pool) -> Assessors:
    runs = list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))
    run_ids = [r.pk for r in runs]
    counts = dict(
        Judgment.objects.filter(pair__pool=pool, cant_judge=False)
        .values_list("rater_id")
        .annotate(n=Count("pk"))
        .values_list("rater_id", "n")
    )
    judges = set(ModelJudge.objects.filter(pool=pool).values_list("user_id", flat=True))
    names = dict(get_user_model().objects.filter(pk__in=list(counts)).values_list("pk", "username"))
    boards = [_humans_board(pool, run_ids, judges)]
    for user_id in sorted(counts, key=lambda u: (u in judges, names.get(u, ""))):
        if counts[user_id] < MIN_GRADES:
            continue
        kind = "judge" if user_id in judges else "rater"
        boards.append(
            _board(
                names.get(user_id, str(user_id)), kind, rater_grades(pool, user_id), run_ids, counts[user_id]
            )
        )
    reference = boards[0].means
    order = sorted(range(len(runs)), key=lambda i: (-reference[i], runs[i].configuration.name))
    configurations = [runs[i].configuration for i in order]
    boards = [Board(b.name, b.kind, b.n_grades, b.n_queries, [b.means[i] for i in order]) for b in boards]
    taus = [[kendall_tau_b(a.means, b.means) if len(runs) >= 2 else math.nan for b in boards] for a in boards]
    return Assessors(configurations, boards, taus)

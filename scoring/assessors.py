"""Would the winner change with another assessor? The leaderboard by each rater and judge alone.

Voorhees, "Variations in relevance judgments and the measurement of retrieval effectiveness" (IPM 2000):
system rankings should survive a change of assessor. For every human rater and model judge with at
least `MIN_GRADES` grades in the pool, every configuration's current run is scored (NDCG@10 in the
default flavour) with that assessor's grades alone, over the queries that assessor graded (a query the
run did not answer counts 0). The humans' combined grades, over the queries any human graded, give the
reference leaderboard. Kendall's τ-b between every two orderings (scoring.trust.kendall_tau_b) says how
far they agree; the winner of each is named.

One pass (`assessor_boards`): the pool's pairs and every grade in it are read once (`PoolGrades`), each
assessor's grades picked out in numpy; the current runs' rankings are read once, a slice of queries at a
time, and only their first `DEPTH` documents (NDCG@10 with unjudged documents counting 0 looks no
deeper; the ideal DCG comes from the grades), and every board scores the slice. On the realistic pool
(1.2M grades, 50 runs x 5,000 queries) that is seconds, not the minute that reading the rankings once per
assessor took; still too slow for a page, so the page shows the stored snapshot ("assessors",
judgments.snapshots) that a task recomputes when the pool changed: `snapshot_value` / `from_snapshot`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from judgments.models import ModelJudge, Pool, Run, SearchConfiguration
from judgments.pgcopy.rows import read_columns

from . import metrics
from .flavours import DEFAULT_FLAVOUR, FLAVOURS
from .grades import NO_GRADE, WORK_MEM, Grades, combine_grades, model_raters, read_pool_pairs
from .trust import kendall_tau_b

MIN_GRADES = 30
MEASURE = "ndcg@10"
DEPTH = 10  # the ranks MEASURE reads in DEFAULT_FLAVOUR (unjudged documents count 0, nothing condensed)
RANKINGS_PER_READ = 500_000  # rankings read (and scored) at a time: DEPTH int64 each, 40 MB
HUMANS = "humans (combined)"


@dataclass(frozen=True)
class Board:
    name: str
    kind: str  # "humans" (combined), "rater" or "judge"
    n_grades: int
    n_queries: int
    means: list[float]  # per configuration, in Assessors.configurations order
    user_id: int | None = None  # the rater's or judge's account; None for the humans' combined board

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


# --- Reading: every grade of the pool once ----------------------------------------------------------------


@dataclass(frozen=True)
class PoolGrades:
    """A pool's pairs (sorted by id) and its grades (can't judge left out), one entry per grade with the
    index of its pair: what every board is picked out of."""

    query: np.ndarray  # per pair
    doc: np.ndarray
    final: np.ndarray  # int16, NO_GRADE: no final grade
    at: np.ndarray  # per grade: its pair's index
    rater: np.ndarray
    grade: np.ndarray
    excluded: np.ndarray  # bool

    def of_rater(self, rater_id: int) -> Grades:
        """One rater's own grades, sorted by query and document (as scoring.grades.rater_grades)."""
        at = self.at[self.rater == rater_id]
        query, doc = self.query[at], self.doc[at]
        order = np.lexsort((doc, query))
        return Grades(query[order], doc[order], self.grade[self.rater == rater_id][order].astype(np.float64))

    def humans(self, models: np.ndarray, rule: str) -> tuple[Grades, np.ndarray]:
        """The humans' combined grades by `rule` (a final grade wins, excluded grades and the models' do
        not count) over the queries a human graded, and those queries (excluded grades count there)."""
        human = ~np.isin(self.rater, models)
        queries = np.unique(self.query[self.at[human]])
        counted = human & ~self.excluded
        final_only = np.ones(len(self.query), dtype=bool)
        final_only[self.at[counted]] = False
        final_only &= self.final > NO_GRADE
        rows = np.concatenate([self.at[counted], np.flatnonzero(final_only)])
        grade = np.concatenate(
            [self.grade[counted], np.full(int(final_only.sum()), NO_GRADE, dtype=self.grade.dtype)]
        )
        combined = combine_grades(
            rows, self.query[rows], self.doc[rows], self.final[rows], grade, rule=rule
        )  # pair indexes as pair keys: they are unique per pair, as the ids are
        keep = np.isin(combined.query, queries)
        return Grades(combined.query[keep], combined.doc[keep], combined.grade[keep]), queries


def read_pool_grades(cursor, pool_id: int) -> PoolGrades:
    """Every pair and grade of the pool in two statements (judgments of the pairs' id range, matched in
    numpy, as scoring.grades reads a whole pool)."""
    pair, query, doc, final = read_pool_pairs(cursor, pool_id)
    order = np.argsort(pair)
    pair, query, doc, final = pair[order], query[order], doc[order], final[order]
    empty = np.zeros(0, np.int64)
    if not len(pair):
        return PoolGrades(query, doc, final, empty, empty, empty.astype(np.int16), empty.astype(bool))
    low, high = int(pair[0]), int(pair[-1])
    if high - low + 1 <= 2 * len(pair):
        where, params = "j.pair_id BETWEEN %s AND %s", [low, high]
    else:
        where, params = "j.pair_id IN (SELECT id FROM judgments_pair WHERE pool_id = %s)", [pool_id]
    judged, rater, grade, excluded = read_columns(
        cursor,
        "SELECT array_agg(j.pair_id), array_agg(j.rater_id::int8), array_agg(j.grade),"
        f" array_agg(j.excluded::int::int2) FROM judgments_judgment j WHERE {where} AND NOT j.cant_judge",
        params,
        [">i8", ">i8", ">i2", ">i2"],
    )
    at = np.minimum(np.searchsorted(pair, judged), len(pair) - 1)
    mine = pair[at] == judged  # the id range may hold other pools' pairs
    return PoolGrades(
        query, doc, final, at[mine], rater[mine].astype(np.int64), grade[mine], excluded[mine] > 0
    )


_TOP = f"""
    SELECT array_agg(run_id::int8), array_agg(query_id::int8),
           array_agg(CASE WHEN cardinality(doc_ids) >= {DEPTH} THEN doc_ids[1:{DEPTH}]
                     ELSE doc_ids || array_fill(-1::bigint, ARRAY[{DEPTH} - cardinality(doc_ids)]) END)
    FROM judgments_ranking WHERE run_id = ANY(%s) AND query_id >= %s AND query_id <= %s
"""


def _slices(queries: np.ndarray, n_runs: int) -> list[tuple[int, int]]:
    """(first, last) query pks of slices of `queries` (sorted) of about RANKINGS_PER_READ rankings."""
    if not len(queries):
        return []
    step = max(1, RANKINGS_PER_READ // max(n_runs, 1))
    return [
        (int(queries[i]), int(queries[min(i + step, len(queries)) - 1])) for i in range(0, len(queries), step)
    ]


# --- The boards -------------------------------------------------------------------------------------------


@dataclass
class _Scored:
    name: str
    kind: str
    user_id: int | None
    grades: Grades
    n_grades: int
    queries: np.ndarray
    sums: np.ndarray


def _score_boards(cursor, run_ids: list[int], boards: list[_Scored]) -> None:
    """Add every board's MEASURE of every run, summed over the board's queries, into board.sums."""
    if not run_ids or not boards:
        return
    row_of = {run: i for i, run in enumerate(run_ids)}
    queries = np.unique(np.concatenate([b.queries for b in boards]))
    flavour = FLAVOURS[DEFAULT_FLAVOUR]
    for first, last in _slices(queries, len(run_ids)):
        run, query, docs = read_columns(cursor, _TOP, [run_ids, first, last], [">i8", ">i8", ">i8"])
        docs = docs.reshape(-1, DEPTH)
        rows = np.array([row_of[int(r)] for r in np.unique(run)], dtype=np.int64)
        run_row = rows[np.searchsorted(np.unique(run), run)] if len(run) else run
        for board in boards:
            ranked = np.isin(query, board.queries)
            if not ranked.any():
                continue
            graded = board.grades.between(first, last + 1)
            scored = metrics.score(
                query[ranked], docs[ranked], graded.query, graded.doc, graded.grade, flavour
            )[MEASURE]
            board.sums += np.bincount(run_row[ranked], weights=scored, minlength=len(run_ids))


def _boards(pool: Pool, runs: list) -> list[Board]:
    """The humans' board, then every assessor's with MIN_GRADES grades."""
    run_ids = [r.pk for r in runs]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('work_mem', %s, true)", [WORK_MEM])
        read = read_pool_grades(cursor, pool.pk)
        models = model_raters(cursor)
        combined, human_queries = read.humans(models, pool.combine_rule)
        boards = [
            _Scored(HUMANS, "humans", None, combined, len(combined), human_queries, np.zeros(len(runs)))
        ]
        judges = set(ModelJudge.objects.filter(pool=pool).values_list("user_id", flat=True))
        raters, counts = np.unique(read.rater, return_counts=True)
        names = dict(get_user_model().objects.filter(pk__in=raters.tolist()).values_list("pk", "username"))
        for user_id in sorted(raters.tolist(), key=lambda u: (u in judges, names.get(u, ""))):
            n = int(counts[np.searchsorted(raters, user_id)])
            if n < MIN_GRADES:
                continue
            grades = read.of_rater(user_id)
            boards.append(
                _Scored(
                    names.get(user_id, str(user_id)),
                    "judge" if user_id in judges else "rater",
                    user_id,
                    grades,
                    n,
                    np.unique(grades.query),
                    np.zeros(len(runs)),
                )
            )
        _score_boards(cursor, run_ids, boards)
    return [
        Board(
            b.name,
            b.kind,
            b.n_grades,
            len(b.queries),
            (b.sums / len(b.queries)).tolist() if len(b.queries) else [0.0] * len(runs),
            b.user_id,
        )
        for b in boards
    ]


def _current_runs(pool: Pool) -> list:
    return list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))


def _taus(boards: list[Board], n_runs: int) -> list[list[float]]:
    return [[kendall_tau_b(a.means, b.means) if n_runs >= 2 else math.nan for b in boards] for a in boards]


def assessor_boards(pool: Pool) -> Assessors:
    """Every board of the pool (see the module docstring), computed now."""
    runs = _current_runs(pool)
    boards = _boards(pool, runs)
    reference = boards[0].means
    order = sorted(range(len(runs)), key=lambda i: (-reference[i], runs[i].configuration.name))
    configurations = [runs[i].configuration for i in order]
    boards = [
        Board(b.name, b.kind, b.n_grades, b.n_queries, [b.means[i] for i in order], b.user_id) for b in boards
    ]
    return Assessors(configurations, boards, _taus(boards, len(runs)))


# --- The stored snapshot ("assessors", judgments.snapshots) -------------------------------------------------


def snapshot_value(pool: Pool, key: str = "") -> dict:
    """assessor_boards(pool) as JSON: configurations and accounts by primary key (named when shown)."""
    result = assessor_boards(pool)
    return {
        "configurations": [c.pk for c in result.configurations],
        "boards": [[b.kind, b.user_id, b.n_grades, b.n_queries, b.means] for b in result.boards],
        "taus": result.taus,
    }


def from_snapshot(value: dict) -> Assessors:
    """The Assessors of a stored value, with the configurations and the accounts' names read now (two
    statements); a configuration deleted since is left out."""
    found = SearchConfiguration.objects.in_bulk(value["configurations"])
    users = [b[1] for b in value["boards"] if b[1] is not None]
    names = dict(get_user_model().objects.filter(pk__in=users).values_list("pk", "username"))
    keep = [i for i, pk in enumerate(value["configurations"]) if pk in found]

    def number(v) -> float:
        return math.nan if v is None else float(v)

    boards = [
        Board(
            HUMANS if user_id is None else names.get(user_id, str(user_id)),
            kind,
            n_grades,
            n_queries,
            [number(means[i]) for i in keep],
            user_id,
        )
        for kind, user_id, n_grades, n_queries, means in value["boards"]
    ]
    taus = [[number(t) for t in row] for row in value["taus"]]
    return Assessors([found[value["configurations"][i]] for i in keep], boards, taus)

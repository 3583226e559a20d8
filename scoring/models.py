"""Stored scores, kept current incrementally.

`CellScore` is what is written: one row per (run, query) holding every metric of every flavour. A row
exists for every run and every query of its pool that has at least one grade, whether or not the run
ranked that query (has_ranking=False rows score 0, as `trec_eval -c`). Only NDCG depends on all three
choices of a flavour; P, recall, MRR and AP depend only on what happens to unjudged documents (kept as
0, or removed: the `c_` columns), and judged@k on none of them, so each value is stored once.

`QueryScore` is what is read: a database view (migration 0002) with one row per (run, query, flavour)
and the flavour's metrics under their plain names (ndcg_10, p_10, ...). Readers filter on `flavor`,
and PostgreSQL keeps only that flavour's branch of the view. A configuration's mean is a plain AVG over
its current run's rows, which the leaderboard reads; nothing recomputes on page load.

Why one wide row: a full recompute writes 4x fewer rows (250,000 instead of 1,000,000 for 50 runs x
5,000 queries) and about half the bytes, and the rows carry no foreign-key constraint: PostgreSQL
checks those row by row at commit, which took 8.5 s for 1,000,000 rows (`make bench`). Run and query
deletions still remove their scores: Django's CASCADE for ORM deletes, and statement-level triggers on
the run and query tables for anything else (migration 0002).
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from judgments.models import Query, Run

from .flavours import FLAVOURS

FLAVOUR_CHOICES = [
    ("exp", "exp: gain 2^g−1, discount log2(i+1), unjudged = 0"),
    ("trec", "trec: gain g, discount log2(i+1), unjudged = 0 (trec_eval -c)"),
    ("jk", "jk: gain g, Järvelin–Kekäläinen discount, unjudged = 0"),
    ("judged", "judged: gain g, discount log2(i+1), unjudged removed (trec_eval -c -J)"),
]

# metric name (as in exports and the API) -> column
METRIC_FIELDS = {
    "ndcg@3": "ndcg_3",
    "ndcg@5": "ndcg_5",
    "ndcg@10": "ndcg_10",
    "ndcg@100": "ndcg_100",
    "p@3": "p_3",
    "p@5": "p_5",
    "p@10": "p_10",
    "p@100": "p_100",
    "recall@3": "recall_3",
    "recall@5": "recall_5",
    "recall@10": "recall_10",
    "recall@100": "recall_100",
    "mrr": "mrr",
    "ap": "ap",
}
JUDGED_FIELDS = {
    "judged@3": "judged_3",
    "judged@5": "judged_5",
    "judged@10": "judged_10",
    "judged@100": "judged_100",
}

# UDCG (scoring.udcg): one value per (run, query), the same in every flavour (it depends on none).
UDCG_FIELDS = {
    "udcg@3": "udcg_3",
    "udcg@5": "udcg_5",
    "udcg@10": "udcg_10",
    "udcg@100": "udcg_100",
}

# Every metric averaged over all of a run's rows (leaderboards, exports, the API), by name.
MEAN_FIELDS = {**METRIC_FIELDS, **UDCG_FIELDS}


# Metrics that depend only on what happens to unjudged documents: stored as is ("zero": they stay with
# gain 0) and with a "c_" prefix ("drop": the condensed list of trec_eval -J).
MODE_FIELDS = tuple(column for column in METRIC_FIELDS.values() if not column.startswith("ndcg_"))
CONDENSED_PREFIX = "c_"


def cell_column(flavour: str, column: str) -> str:
    """The CellScore column holding `column` (a QueryScore metric column) of `flavour`."""
    if column.startswith("ndcg_"):
        return f"{flavour}_{column}"
    if column in MODE_FIELDS and FLAVOURS[flavour].unjudged == "drop":
        return CONDENSED_PREFIX + column
    return column


class CellScore(models.Model):
    """Every score of one (run, query): written by scoring.services only; read through QueryScore."""

    # No foreign-key constraint and no index of their own: the unique (run, query) index serves both.
    run = models.ForeignKey(Run, models.CASCADE, db_constraint=False, db_index=False, related_name="+")
    query = models.ForeignKey(Query, models.CASCADE, db_constraint=False, db_index=False, related_name="+")
    has_ranking = models.BooleanField(help_text="False: the run has no ranking for this query; it scores 0")
    has_relevant = models.BooleanField(help_text="False: no judged document of this query is relevant")
    judged_3 = models.FloatField()
    judged_5 = models.FloatField()
    judged_10 = models.FloatField()
    judged_100 = models.FloatField()
    # unjudged documents kept with gain 0 (flavours exp, trec, jk)
    p_3 = models.FloatField()
    p_5 = models.FloatField()
    p_10 = models.FloatField()
    p_100 = models.FloatField()
    recall_3 = models.FloatField()
    recall_5 = models.FloatField()
    recall_10 = models.FloatField()
    recall_100 = models.FloatField()
    mrr = models.FloatField()
    ap = models.FloatField()
    # unjudged documents removed (flavour judged, trec_eval -J)
    c_p_3 = models.FloatField()
    c_p_5 = models.FloatField()
    c_p_10 = models.FloatField()
    c_p_100 = models.FloatField()
    c_recall_3 = models.FloatField()
    c_recall_5 = models.FloatField()
    c_recall_10 = models.FloatField()
    c_recall_100 = models.FloatField()
    c_mrr = models.FloatField()
    c_ap = models.FloatField()
    exp_ndcg_3 = models.FloatField()
    exp_ndcg_5 = models.FloatField()
    exp_ndcg_10 = models.FloatField()
    exp_ndcg_100 = models.FloatField()
    trec_ndcg_3 = models.FloatField()
    trec_ndcg_5 = models.FloatField()
    trec_ndcg_10 = models.FloatField()
    trec_ndcg_100 = models.FloatField()
    jk_ndcg_3 = models.FloatField()
    jk_ndcg_5 = models.FloatField()
    jk_ndcg_10 = models.FloatField()
    jk_ndcg_100 = models.FloatField()
    judged_ndcg_3 = models.FloatField()
    judged_ndcg_5 = models.FloatField()
    judged_ndcg_10 = models.FloatField()
    judged_ndcg_100 = models.FloatField()
    # UDCG, the same in every flavour; NaN in rows stored before migration 0003 until they are rescored.
    udcg_3 = models.FloatField()
    udcg_5 = models.FloatField()
    udcg_10 = models.FloatField()
    udcg_100 = models.FloatField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "query"], name="one_score_per_run_query")]

    def __str__(self) -> str:
        return f"run {self.run_id} query {self.query_id} exp ndcg@10={self.exp_ndcg_10:.4f}"


# The value columns of a CellScore row after run and query, in table order: has_ranking, has_relevant,
# then the metrics (what scoring.services and bench_compare write by binary COPY).
CELL_VALUE_COLUMNS: tuple[str, ...] = tuple(
    f.column
    for f in CellScore._meta.concrete_fields
    if isinstance(f, (models.BooleanField, models.FloatField))
)


class QueryScoreQuerySet(models.QuerySet):
    def current(self):
        """Scores of each configuration's newest run."""
        return self.filter(run__in=Run.objects.current())

    def flavour(self, name: str):
        return self.filter(flavor=name)


class QueryScore(models.Model):
    """One (run, query, flavour): a read-only view over CellScore (see the module docstring).
    id = CellScore id * 4 + the flavour's position in FLAVOUR_CHOICES."""

    id = models.BigIntegerField(primary_key=True)
    run = models.ForeignKey(Run, models.DO_NOTHING, db_constraint=False, related_name="scores")
    query = models.ForeignKey(Query, models.DO_NOTHING, db_constraint=False, related_name="scores")
    flavor = models.CharField(max_length=10, choices=FLAVOUR_CHOICES)
    has_ranking = models.BooleanField(help_text="False: the run has no ranking for this query; it scores 0")
    has_relevant = models.BooleanField(help_text="False: no judged document of this query is relevant")
    ndcg_3 = models.FloatField()
    ndcg_5 = models.FloatField()
    ndcg_10 = models.FloatField()
    ndcg_100 = models.FloatField()
    p_3 = models.FloatField()
    p_5 = models.FloatField()
    p_10 = models.FloatField()
    p_100 = models.FloatField()
    recall_3 = models.FloatField()
    recall_5 = models.FloatField()
    recall_10 = models.FloatField()
    recall_100 = models.FloatField()
    mrr = models.FloatField()
    ap = models.FloatField()
    judged_3 = models.FloatField()
    judged_5 = models.FloatField()
    judged_10 = models.FloatField()
    judged_100 = models.FloatField()
    udcg_3 = models.FloatField()
    udcg_5 = models.FloatField()
    udcg_10 = models.FloatField()
    udcg_100 = models.FloatField()
    updated_at = models.DateTimeField()

    objects = QueryScoreQuerySet.as_manager()

    class Meta:
        managed = False
        db_table = "scoring_queryscore"

    def __str__(self) -> str:
        return f"run {self.run_id} query {self.query_id} [{self.flavor}] ndcg@10={self.ndcg_10:.4f}"


class PoolGrades(models.Model):
    """The combined grades a pool's scores were last computed from, kept so that scoring a new run
    reads 5,000 rows of arrays instead of every judgment of the pool (1,200,000 rows took 1.0-1.3 s,
    most of a new run's scoring). One `QueryGrades` row per graded query, written by scoring.services
    under the pool's scoring lock whenever it reads grades from the judgments: all of them on a full
    recompute (or a new run), those of the changed queries after a grade change. This row says under
    which combine rule, grade source and model raters they were combined, and the newest judgment
    history id then: when any of these differs now (any judgment changed anywhere since, the history
    logs every change), a new run's scoring reads the judgments and writes the cache again. A final
    grade set without the grades_changed signal is not seen until the next full recompute."""

    pool = models.OneToOneField(
        "judgments.Pool", models.CASCADE, primary_key=True, db_constraint=False, related_name="+"
    )
    combine_rule = models.CharField(max_length=10)
    grade_source = models.CharField(max_length=10)
    model_raters = ArrayField(models.BigIntegerField(), default=list, blank=True)
    history_mark = models.BigIntegerField(
        help_text="the newest judgment history id when the grades were read"
    )
    written_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"grades of pool {self.pool_id} ({self.combine_rule}, {self.grade_source})"


class QueryGrades(models.Model):
    """One graded query's combined grades (see PoolGrades): document keys and grades, in parallel."""

    pool = models.ForeignKey(
        "judgments.Pool", models.CASCADE, db_constraint=False, db_index=False, related_name="+"
    )
    query = models.ForeignKey(Query, models.CASCADE, db_constraint=False, db_index=False, related_name="+")
    doc_ids = ArrayField(models.BigIntegerField())
    grades = ArrayField(models.FloatField())

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "query"], name="one_grade_row_per_query")]

    def __str__(self) -> str:
        return f"grades of query {self.query_id}: {len(self.grades)} documents"


class PoolMeasures(models.Model):
    """A pool's own measure set, named in ir_measures syntax (scoring.measures.names), canonical names in
    the order chosen. A pool without this row has today's fixed set (the flavoured metrics of CellScore),
    so existing pools, pages and exports do not change. Written by scoring.measure_sets only, under the
    pool's scoring lock, together with a re-score of MeasureScore."""

    pool = models.OneToOneField(
        "judgments.Pool", models.CASCADE, primary_key=True, db_constraint=False, related_name="+"
    )
    names = ArrayField(models.CharField(max_length=300))
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"measures of pool {self.pool_id}: {', '.join(self.names)}"


class MeasureScore(models.Model):
    """Every measure of a pool's measure set for one (run, query): `values` in the order of
    scoring.measures.compute.columns(the set) (each measure, then each RBP residual). Rows exist for the
    same (run, graded query) cells as CellScore; a run without a ranking for the query scores 0 (RBP's
    residual 1). One row of an array rather than a row per measure: 14 measures x 250,000 cells would be
    3,500,000 rows of ~40 bytes of overhead each (see docs/measures.md for the figures)."""

    run = models.ForeignKey(Run, models.CASCADE, db_constraint=False, db_index=False, related_name="+")
    query = models.ForeignKey(Query, models.CASCADE, db_constraint=False, db_index=False, related_name="+")
    has_ranking = models.BooleanField(help_text="False: the run has no ranking for this query; it scores 0")
    values = ArrayField(models.FloatField())

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "query"], name="one_measure_row_per_run_query")]

    def __str__(self) -> str:
        return f"run {self.run_id} query {self.query_id}: {len(self.values)} values"


class RunTotals(models.Model):
    """Sums of one run's CellScore rows, kept by triggers in the transaction that writes the rows
    (scoring.totals): what every mean of the fixed set is read from. sums and nans follow
    scoring.totals.CELL_COLUMNS; mark: the sequence number of the last change."""

    run = models.OneToOneField(
        Run, models.DO_NOTHING, primary_key=True, db_constraint=False, related_name="+"
    )  # the triggers drop the row with the run's last score row
    n = models.BigIntegerField()
    n_unranked = models.BigIntegerField()
    n_no_relevant = models.BigIntegerField()
    sums = ArrayField(models.FloatField())
    nans = ArrayField(models.FloatField())
    mark = models.BigIntegerField()

    def __str__(self) -> str:
        return f"totals of run {self.run_id}: {self.n} rows"


class MeasureTotals(models.Model):
    """Sums of one run's MeasureScore rows (a pool's own measure set), kept as RunTotals is: sums and nans
    in the order of the set's columns (scoring.measures.compute.columns)."""

    run = models.OneToOneField(
        Run, models.DO_NOTHING, primary_key=True, db_constraint=False, related_name="+"
    )
    n = models.BigIntegerField()
    n_unranked = models.BigIntegerField()
    sums = ArrayField(models.FloatField())
    nans = ArrayField(models.FloatField())
    mark = models.BigIntegerField()

    def __str__(self) -> str:
        return f"measure totals of run {self.run_id}: {self.n} rows"


class PoolStability(models.Model):
    """How settled a pool's leaderboard was when last measured (scoring.stability): the ordering of its
    configurations, when that ordering last changed (counted in grades), the expected Kendall tau and
    judged@10 of every configuration. Written after grades change (pools that stop when settled, and
    small pools) and whenever the leaderboard or `manage.py stability` measures it."""

    pool = models.OneToOneField(
        "judgments.Pool", models.CASCADE, primary_key=True, db_constraint=False, related_name="+"
    )
    measure = models.CharField(max_length=20)
    ordering = models.JSONField(default=list, help_text="configuration ids, best first")
    grades = models.BigIntegerField(default=0, help_text="grades in the pool when measured")
    grades_at_change = models.BigIntegerField(default=0, help_text="grades when the ordering last changed")
    expected_tau = models.FloatField(default=0.0)
    judged = models.JSONField(default=dict, help_text="configuration id -> judged@10")
    settled = models.BooleanField(default=False)
    queries = models.IntegerField(default=0, help_text="queries the bootstrap ran over")
    problems = models.JSONField(default=list, help_text="why it has not settled")
    basis = models.JSONField(
        default=dict, help_text="run id -> mark of the current runs' totals measured (scoring.totals)"
    )
    measured_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"stability of pool {self.pool_id}: tau {self.expected_tau:.3f}, settled {self.settled}"


# The pool's webhooks live in their own package; imported here so the scoring app registers them.
from .webhooks.models import Webhook, WebhookDelivery  # noqa: E402, F401

"""Search configurations, the runs teams submit for them and the runs' rankings."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Exists, F, Func, OuterRef, Q

from .capture import Schedule
from .documents import Query
from .pools import NO_WHITESPACE_SQL, Pool, Team, no_whitespace

# Foreign keys with db_index=False are served by a composite index that starts with them (its name in the
# comment): a second index would only cost every bulk insert (migration 0012).


class SearchConfiguration(models.Model):
    """A ranker setting a team submits runs for (BM25 k1=1.2, a vector model, a reranker, ...)."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="configurations")
    team = models.ForeignKey(Team, models.PROTECT, related_name="configurations")
    name = models.CharField(max_length=100, validators=[no_whitespace])
    description = models.TextField(blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Live capture (judgments/capture): how often `manage.py capture_due` captures a run from the
    # configuration's endpoint, and when a capture last started (scheduled or not).
    capture_schedule = models.CharField(max_length=10, choices=Schedule, default=Schedule.NONE)
    last_capture_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="archived: hidden from lists, kept with its history for exports"
    )
    # The language model the configuration reranks or generates with, if any: a model judge of the same
    # model (or family) would grade its own output, and the trust page and leaderboard warn of it.
    model_name = models.CharField(
        "model used", max_length=200, blank=True, help_text="The model it reranks or generates with, if any."
    )

    class Meta:
        ordering = ["pool", "name"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "name"], name="configuration_name_unique_in_pool"),
            models.CheckConstraint(
                condition=Q(name__regex=NO_WHITESPACE_SQL), name="configuration_name_no_whitespace"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def current_run(self):
        return self.runs.order_by("-id").first()

    @property
    def endpoint(self):
        """The current (newest) version of the configuration's search endpoint, or None."""
        return self.endpoints.order_by("-version").first()


class RunQuerySet(models.QuerySet):
    def current(self):
        """The newest run of each configuration: the one that is scored on leaderboards."""
        newer = Run.objects.filter(configuration=OuterRef("configuration"), id__gt=OuterRef("id"))
        return self.exclude(Exists(newer))

    def ranking_any_of(self, documents):
        """The runs one of whose rankings holds one of `documents` (rankings keep document keys in an
        array, with no foreign key: such a document must stay, or the run's exports would fail)."""
        keys = [d.pk for d in documents]
        pools = {d.pool_id for d in documents}
        return self.filter(configuration__pool__in=pools, rankings__doc_ids__overlap=keys).distinct()


class Run(models.Model):
    class Source(models.TextChoices):
        UPLOAD = "upload", "Web upload"
        API = "api", "API"
        FILE = "file", "TREC file (command line)"
        DEMO = "demo", "Demo data"
        ENDPOINT = "endpoint", "Captured from the search endpoint"

    configuration = models.ForeignKey(SearchConfiguration, models.CASCADE, related_name="runs")
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    source = models.CharField(max_length=10, choices=Source)
    tag = models.CharField(max_length=200, blank=True, help_text="run tag from the TREC file, or a label")
    filename = models.CharField(max_length=255, blank=True)
    # Captured runs: the exact endpoint version (definition and template) they were captured with.
    endpoint = models.ForeignKey(
        "judgments.SearchEndpoint", models.SET_NULL, null=True, blank=True, related_name="runs"
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["configuration", "-id"]

    def __str__(self) -> str:
        return f"{self.configuration.name} run {self.id} ({self.created_at:%Y-%m-%d %H:%M})"


class ArrayHasNoDuplicates(Func):
    """SQL function (migrations 0001 and 0003): true when an array of keys has no repeated element."""

    function = "jl_array_has_no_duplicates"
    output_field = models.BooleanField()


class Ranking(models.Model):
    """One query's ranked documents in one run: one row with an array of document keys.

    One row per (run, query) rather than per ranked entry: 25 million entries are 250,000 rows,
    which read back ~20x faster than 25 million rows (see docs/performance.md).
    """

    run = models.ForeignKey(
        Run, models.CASCADE, related_name="rankings", db_index=False
    )  # one_ranking_per_...
    query = models.ForeignKey(
        Query, models.CASCADE, related_name="rankings", db_index=False
    )  # ranking_query_idx
    doc_ids = ArrayField(models.BigIntegerField(), help_text="Document primary keys, best first.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "query"], name="one_ranking_per_run_and_query"),
            models.CheckConstraint(
                condition=ArrayHasNoDuplicates(F("doc_ids")), name="ranking_no_duplicate_documents"
            ),
            models.CheckConstraint(condition=Q(doc_ids__len__gte=1), name="ranking_not_empty"),
        ]
        indexes = [models.Index(fields=["query"], name="ranking_query_idx")]

    def __str__(self) -> str:
        return f"run {self.run_id} query {self.query_id}: {len(self.doc_ids)} documents"

"""The domain: pools of queries and documents, raters' judgments, teams, configurations and runs.

Rules that must never break (grade range, one judgment per rater and pair, no duplicate document in
a ranking, ids without whitespace) are database constraints, so no code path can get around them.
"""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Count, Exists, F, Func, OuterRef, Q

EXTERNAL_ID_MAX = 200
no_whitespace = RegexValidator(
    r"^\S+$", "Ids may not be empty or contain whitespace (qrels and run files are whitespace-separated)."
)
NO_WHITESPACE_SQL = r"^\S+$"


class Grade(models.IntegerChoices):
    NOT_RELEVANT = 0, "Not relevant"
    MARGINAL = 1, "Marginal"
    RELEVANT = 2, "Relevant"
    HIGHLY_RELEVANT = 3, "Highly relevant"
    PERFECT = 4, "Perfect"


def default_grade_scale() -> list[dict]:
    descriptions = {
        0: "The document does not help with the information need at all.",
        1: "Touches the topic but barely helps; the searcher would keep looking.",
        2: "Answers part of the need; useful.",
        3: "Answers the need well; the searcher would be satisfied.",
        4: "The ideal result for this query; exactly what was wanted.",
    }
    return [{"grade": g.value, "label": g.label, "description": descriptions[g.value]} for g in Grade]


class CombineRule(models.TextChoices):
    MEAN = "mean", "Mean of the raters' grades"
    MEDIAN = "median", "Median of the raters' grades"
    MAJORITY = "majority", "Most frequent grade (ties: the lower)"
    MIN = "min", "Lowest grade (strict)"
    MAX = "max", "Highest grade (lenient)"


class QueueAccess(models.TextChoices):
    """Who may send documents to the raters' queue (beyond building it: admins always may)."""

    ADMINS = "admins", "Admins only"
    ENGINEERS = "engineers", "Admins and the pool's engineers (their configurations' unjudged top k)"


class Pool(models.Model):
    """One shared evaluation campaign: its queries, documents, raters and the configurations scored on it."""

    name = models.CharField(max_length=100, unique=True, validators=[no_whitespace])
    description = models.TextField(blank=True)
    guidelines = models.TextField(blank=True, help_text="Markdown shown to raters.")
    grade_scale = models.JSONField(
        default=default_grade_scale, help_text="Label and description per grade 0–4."
    )
    raters_per_pair = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    combine_rule = models.CharField(max_length=10, choices=CombineRule, default=CombineRule.MEAN)
    share_rankings = models.BooleanField(
        default=False,
        help_text="Engineers see every team's rankings (documents and order), not only their own teams'. "
        "Scores are shared either way.",
    )
    queue_access = models.CharField(
        "who may queue documents", max_length=10, choices=QueueAccess, default=QueueAccess.ADMINS
    )
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="pools", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(raters_per_pair__gte=1), name="pool_raters_per_pair_positive"),
            models.CheckConstraint(
                condition=Q(name__regex=NO_WHITESPACE_SQL), name="pool_name_no_whitespace"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def grade_label(self, grade: int) -> str:
        for entry in self.grade_scale:
            if entry.get("grade") == grade:
                return entry.get("label", str(grade))
        return Grade(grade).label


class Query(models.Model):
    pool = models.ForeignKey(Pool, models.CASCADE, related_name="queries")
    external_id = models.CharField("query id", max_length=EXTERNAL_ID_MAX, validators=[no_whitespace])
    text = models.TextField(blank=True)
    information_need = models.TextField(blank=True, help_text="What the searcher wants; raters see it.")

    class Meta:
        verbose_name_plural = "queries"
        ordering = ["pool", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "external_id"], name="query_id_unique_in_pool"),
            models.CheckConstraint(
                condition=Q(external_id__regex=NO_WHITESPACE_SQL), name="query_id_no_whitespace"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.text[:60]}"


class DocumentQuerySet(models.QuerySet):
    def with_content(self):
        return self.exclude(title="", body="")

    def without_content(self):
        return self.filter(title="", body="")


class Document(models.Model):
    pool = models.ForeignKey(Pool, models.CASCADE, related_name="documents")
    external_id = models.CharField("document id", max_length=EXTERNAL_ID_MAX, validators=[no_whitespace])
    title = models.TextField(blank=True)
    body = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    extra = models.JSONField(default=dict, blank=True)

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "external_id"], name="document_id_unique_in_pool"),
            models.CheckConstraint(
                condition=Q(external_id__regex=NO_WHITESPACE_SQL), name="document_id_no_whitespace"
            ),
            # Rankings' no-duplicate check sorts keys as int4 (migration 0003).
            models.CheckConstraint(condition=Q(id__lt=2**31), name="document_key_fits_int4"),
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def has_content(self) -> bool:
        return bool(self.title or self.body)


class PairQuerySet(models.QuerySet):
    def in_pool(self, pool):
        return self.filter(pool=pool)

    def with_grade_count(self):
        return self.annotate(grade_count=Count("judgments", filter=Q(judgments__cant_judge=False)))

    def queued(self):
        return self.filter(queued_at__isnull=False)

    def awaiting_grade_from(self, rater):
        """Pairs this rater has not graded (or marked can't judge) yet."""
        mine = Judgment.objects.filter(pair=OuterRef("pk"), rater=rater)
        return self.exclude(Exists(mine))


class Pair(models.Model):
    """A (query, document) of a pool: what raters grade, what the queue holds, what an admin adjudicates."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="pairs")
    query = models.ForeignKey(Query, models.CASCADE, related_name="pairs")
    document = models.ForeignKey(Document, models.CASCADE, related_name="pairs")
    # The judging queue: queued_at set = waiting for grades; priority: higher is served first.
    queued_at = models.DateTimeField(null=True, blank=True)
    priority = models.IntegerField(default=0)
    # A rater holds a pair while grading it, so two raters are not served the same pair.
    held_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    held_until = models.DateTimeField(null=True, blank=True)
    # Adjudication: an admin's final grade wins over the combined raters' grades.
    final_grade = models.PositiveSmallIntegerField(choices=Grade, null=True, blank=True)
    final_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    final_at = models.DateTimeField(null=True, blank=True)

    objects = PairQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="pair_unique"),
            models.CheckConstraint(condition=Q(final_grade__lte=4), name="pair_final_grade_at_most_4"),
        ]
        indexes = [
            models.Index(fields=["pool", "queued_at"], name="pair_queue_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.query.external_id} / {self.document.external_id}"


class JudgmentQuerySet(models.QuerySet):
    def in_pool(self, pool):
        return self.filter(pair__pool=pool)

    def graded(self):
        return self.filter(cant_judge=False)

    def by(self, rater):
        return self.filter(rater=rater)


class Judgment(models.Model):
    """One rater's grade of one pair. Changes are logged by a database trigger into JudgmentChange."""

    pair = models.ForeignKey(Pair, models.CASCADE, related_name="judgments")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, models.PROTECT, related_name="judgments")
    grade = models.PositiveSmallIntegerField(choices=Grade, null=True, blank=True)
    cant_judge = models.BooleanField(default=False)
    cant_judge_reason = models.TextField(blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = JudgmentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "rater"], name="one_judgment_per_rater_and_pair"),
            models.CheckConstraint(
                condition=Q(grade__gte=0, grade__lte=4) | Q(grade__isnull=True), name="grade_between_0_and_4"
            ),
            # A grade, or "can't judge" with a reason: never both, never neither.
            models.CheckConstraint(
                condition=(
                    Q(cant_judge=False, grade__isnull=False)
                    | Q(cant_judge=True, grade__isnull=True) & ~Q(cant_judge_reason="")
                ),
                name="grade_xor_cant_judge_with_reason",
            ),
        ]
        indexes = [models.Index(fields=["rater", "-updated_at"], name="judgment_rater_recent_idx")]

    def __str__(self) -> str:
        value = "can't judge" if self.cant_judge else str(self.grade)
        return f"{self.pair} by {self.rater}: {value}"


class JudgmentChange(models.Model):
    """History of every insert, change and delete of a judgment, written by a trigger (see migration)."""

    class Action(models.TextChoices):
        CREATED = "created"
        CHANGED = "changed"
        DELETED = "deleted"

    judgment_id_ref = models.BigIntegerField(
        db_index=True, help_text="id of the judgment (kept after it is deleted)"
    )
    pair = models.ForeignKey(Pair, models.CASCADE, related_name="judgment_changes")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, models.PROTECT, related_name="+")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    changed_at = models.DateTimeField()
    action = models.CharField(max_length=10, choices=Action)
    old_grade = models.SmallIntegerField(null=True, blank=True)
    new_grade = models.SmallIntegerField(null=True, blank=True)
    old_cant_judge = models.BooleanField(null=True)
    new_cant_judge = models.BooleanField(null=True)
    old_note = models.TextField(blank=True, default="")
    new_note = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.pair_id} by {self.rater_id}: {self.old_grade} → {self.new_grade}"


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SearchConfiguration(models.Model):
    """A ranker setting a team submits runs for (BM25 k1=1.2, a vector model, a reranker, ...)."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="configurations")
    team = models.ForeignKey(Team, models.PROTECT, related_name="configurations")
    name = models.CharField(max_length=100, validators=[no_whitespace])
    description = models.TextField(blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

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


class RunQuerySet(models.QuerySet):
    def current(self):
        """The newest run of each configuration: the one that is scored on leaderboards."""
        newer = Run.objects.filter(configuration=OuterRef("configuration"), id__gt=OuterRef("id"))
        return self.exclude(Exists(newer))


class Run(models.Model):
    class Source(models.TextChoices):
        UPLOAD = "upload", "Web upload"
        API = "api", "API"
        FILE = "file", "TREC file (command line)"
        DEMO = "demo", "Demo data"

    configuration = models.ForeignKey(SearchConfiguration, models.CASCADE, related_name="runs")
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    source = models.CharField(max_length=10, choices=Source)
    tag = models.CharField(max_length=200, blank=True, help_text="run tag from the TREC file, or a label")
    filename = models.CharField(max_length=255, blank=True)

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
    which read back ~20x faster than 25 million rows (see bench/ and README).
    """

    run = models.ForeignKey(Run, models.CASCADE, related_name="rankings")
    query = models.ForeignKey(Query, models.CASCADE, related_name="rankings")
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


class Upload(models.Model):
    """A file uploaded through the web, kept between preview and confirm (the web tier keeps no state)."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="uploads")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="+")
    kind = models.CharField(max_length=30)
    filename = models.CharField(max_length=255)
    content = models.BinaryField()
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} upload {self.filename}"

"""The domain: pools of queries and documents, raters' judgments, teams, configurations and runs.

Rules that must never break (grade range, one judgment per rater and pair, no duplicate document in
a ranking, ids without whitespace) are database constraints, so no code path can get around them.
"""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Count, Exists, F, Func, OuterRef, Q

# The capture wing's models live in their own module and are registered with this app by this import.
from ..capture.models import CaptureJob, Schedule, SearchEndpoint  # noqa: F401

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


# The distractor grade: below 0, a document that looks relevant but misleads (issue 13; UDCG gives it a
# negative utility). Only pools with `distractors_enabled` accept it, on every write path (a trigger of
# migration 0009 refuses it in the database too).
DISTRACTOR = -1
DISTRACTOR_LABEL = "Distractor"
DISTRACTOR_DESCRIPTION = (
    "Looks relevant (same topic, the query's words) but is wrong, outdated or misleading: "
    "worse than no document."
)
GRADE_CHOICES = [(DISTRACTOR, DISTRACTOR_LABEL), *Grade.choices]


def distractor_refused(pool_name: str) -> str:
    """The message every write path gives for a -1 in a pool without the distractor grade."""
    return (
        f"Grade -1 (distractor) is not enabled for pool {pool_name}: an admin can turn the distractor "
        "grade on in the pool's settings."
    )


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


class GradeSource(models.TextChoices):
    """Whose grades make a pool's combined grade (scores, combined-grade exports, agreement)."""

    HUMANS = "humans", "Humans only"
    FILL = "fill", "Humans; a model judge fills pairs no human graded"
    ALL = "all", "Everyone, model judges included"

    @property
    def file_tag(self) -> str:
        """The part of a combined-grade export's file name naming the source ("" for humans only)."""
        return "" if self == GradeSource.HUMANS else f".{self.value}"


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
    queue_access = models.CharField(
        "who may queue documents", max_length=10, choices=QueueAccess, default=QueueAccess.ADMINS
    )
    share_rankings = models.BooleanField(
        default=False,
        help_text="Engineers see every team's rankings (documents and order), not only their own teams'. "
        "Scores are shared either way.",
    )
    grade_source = models.CharField(
        max_length=10,
        choices=GradeSource,
        default=GradeSource.HUMANS,
        help_text="Whose grades the combined grade uses: human raters only, humans with model judges "
        "filling the pairs no human graded, or everyone.",
    )
    distractors_enabled = models.BooleanField(
        "distractor grade",
        default=False,
        help_text="Raters and model judges may grade a document -1, a distractor: it looks relevant but "
        "misleads. UDCG counts it as harmful; NDCG and trec_eval count it as unjudged. Cannot be turned "
        "off while a judgment or final grade uses it.",
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
            if isinstance(entry, dict) and entry.get("grade") == grade:
                return entry.get("label", str(grade))
        return DISTRACTOR_LABEL if grade == DISTRACTOR else Grade(grade).label

    @property
    def grades(self) -> tuple[int, ...]:
        """The grades a judgment of this pool may carry, lowest first: 0..4, and -1 with distractors."""
        return ((DISTRACTOR,) if self.distractors_enabled else ()) + tuple(Grade.values)

    def grade_problem(self, grade) -> str | None:
        """Why `grade` cannot be a grade of this pool (None: it can)."""
        if grade is None or isinstance(grade, bool) or not isinstance(grade, int):
            return f"A grade must be an integer from {self.grades[0]} to 4, not {grade!r}."
        if grade == DISTRACTOR and not self.distractors_enabled:
            return distractor_refused(self.name)
        if grade not in self.grades:
            return f"A grade must be an integer from {self.grades[0]} to 4, not {grade!r}."
        return None


# Foreign keys with db_index=False are served by a composite index that starts with them (its name in the
# comment): a second index would only cost every bulk insert (migration 0012).


class Query(models.Model):
    pool = models.ForeignKey(
        Pool, models.CASCADE, related_name="queries", db_index=False
    )  # query_id_unique_in_pool
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
    pool = models.ForeignKey(
        Pool, models.CASCADE, related_name="documents", db_index=False
    )  # document_id_unique_in_pool
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
        indexes = [
            # The few documents still waiting for content. Scans of a whole queue leave their pairs out
            # with an anti-join on this small index (judgments.rating.grading) instead of reading every
            # document's title and body, which is most of the table (and TOAST for long bodies).
            models.Index(
                fields=["pool", "id"], condition=Q(title="", body=""), name="document_without_content"
            ),
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

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="pairs", db_index=False)  # pair_queue_idx
    query = models.ForeignKey(Query, models.CASCADE, related_name="pairs", db_index=False)  # pair_unique
    document = models.ForeignKey(Document, models.CASCADE, related_name="pairs")
    # The judging queue: queued_at set = waiting for grades; priority: higher is served first.
    queued_at = models.DateTimeField(null=True, blank=True)
    priority = models.IntegerField(default=0)
    # A rater holds a pair while grading it, so two raters are not served the same pair.
    held_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+", db_index=False
    )  # pair_held_by_idx, partial: most pairs are held by no one
    held_until = models.DateTimeField(null=True, blank=True)
    # Adjudication: an admin's final grade wins over the combined raters' grades.
    final_grade = models.SmallIntegerField(choices=GRADE_CHOICES, null=True, blank=True)
    final_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+", db_index=False
    )  # pair_final_by_idx, partial
    final_at = models.DateTimeField(null=True, blank=True)

    objects = PairQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="pair_unique"),
            models.CheckConstraint(
                condition=Q(final_grade__gte=DISTRACTOR, final_grade__lte=4),
                name="pair_final_grade_between_minus_1_and_4",
            ),
        ]
        indexes = [
            models.Index(fields=["pool", "queued_at"], name="pair_queue_idx"),
            models.Index(fields=["held_by"], name="pair_held_by_idx", condition=Q(held_by__isnull=False)),
            models.Index(fields=["final_by"], name="pair_final_by_idx", condition=Q(final_by__isnull=False)),
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

    pair = models.ForeignKey(
        Pair, models.CASCADE, related_name="judgments", db_index=False
    )  # one_judgment_per_...
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, related_name="judgments", db_index=False
    )  # judgment_rater_recent_idx
    grade = models.SmallIntegerField(choices=GRADE_CHOICES, null=True, blank=True)
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
                condition=Q(grade__gte=DISTRACTOR, grade__lte=4) | Q(grade__isnull=True),
                name="grade_between_minus_1_and_4",
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
    # Live capture (judgments/capture): how often `manage.py capture_due` captures a run from the
    # configuration's endpoint, and when a capture last started (scheduled or not).
    capture_schedule = models.CharField(max_length=10, choices=Schedule, default=Schedule.NONE)
    last_capture_at = models.DateTimeField(null=True, blank=True)

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
    which read back ~20x faster than 25 million rows (see bench/ and README).
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


class Upload(models.Model):
    """A file uploaded through the web, kept between preview and confirm (the web tier keeps no state).
    Its content is in `parts` (judgments.exchange.uploads writes and reads them)."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="uploads")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="+")
    kind = models.CharField(max_length=30)
    filename = models.CharField(max_length=255)
    size = models.BigIntegerField(default=0)  # bytes
    lines = models.BigIntegerField(default=0)  # a last line without its newline counts
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} upload {self.filename}"


class UploadPart(models.Model):
    """A piece of an upload's file, in order: no process holds a whole file to store or read it."""

    upload = models.ForeignKey(Upload, models.CASCADE, related_name="parts")
    number = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["upload", "number"], name="one_upload_part_per_number")
        ]

    def __str__(self) -> str:
        return f"part {self.number} of upload {self.upload_id}"


# --- Model judges (LLM raters) -------------------------------------------------------------------------

env_var_name = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]*$",
    "The name of an environment variable: letters, digits and _, not a digit first.",
)


def default_judge_system() -> str:
    from judgments.judges.prompt import DEFAULT_SYSTEM

    return DEFAULT_SYSTEM


def default_judge_user() -> str:
    from judgments.judges.prompt import DEFAULT_USER

    return DEFAULT_USER


class ModelJudgeQuerySet(models.QuerySet):
    def rater_ids(self) -> list[int]:
        """User ids of every model judge: their judgments are a model's, not a human's."""
        return list(self.values_list("user_id", flat=True))


class ModelJudge(models.Model):
    """A language model that grades a pool's pairs like a rater: its user account (which cannot log in)
    holds its judgments, which are ordinary judgments. The API key is never stored: only the NAME of
    the environment variable that holds it on the server running the judge."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, models.CASCADE, related_name="model_judge")
    pool = models.ForeignKey(Pool, models.CASCADE, related_name="judges")
    base_url = models.URLField(
        "base URL",
        max_length=500,
        help_text="The OpenAI-compatible API's base, usually ending in /v1 (…/chat/completions is added).",
    )
    model = models.CharField(
        max_length=200, help_text="The model name the server knows (gpt-4o-mini, llama3.1:8b…)."
    )
    api_key_env = models.CharField(
        "API key variable",
        max_length=100,
        blank=True,
        validators=[env_var_name],
        help_text="The NAME of the environment variable holding the API key (e.g. OPENAI_API_KEY); "
        "empty for servers that need none (Ollama, llama.cpp).",
    )
    temperature = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    max_tokens = models.PositiveIntegerField(
        default=400,
        validators=[MinValueValidator(16), MaxValueValidator(32_000)],
        help_text="The most tokens the model may answer with (reasoning models need more).",
    )
    prompt_system = models.TextField("system message", default=default_judge_system)
    prompt_user = models.TextField("user message", default=default_judge_user)
    max_body_chars = models.PositiveIntegerField(
        "body length",
        default=4000,
        validators=[MinValueValidator(100), MaxValueValidator(200_000)],
        help_text="The document body is cut to this many characters.",
    )
    concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(64)], help_text="Calls at once."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ModelJudgeQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "user__username"]
        constraints = [
            models.CheckConstraint(condition=Q(concurrency__gte=1), name="judge_concurrency_positive"),
            models.CheckConstraint(
                condition=Q(api_key_env="") | Q(api_key_env__regex=r"^[A-Za-z_][A-Za-z0-9_]*$"),
                name="judge_api_key_env_is_a_name",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"

    @property
    def name(self) -> str:
        return self.user.username


class JudgeRun(models.Model):
    """One judging run of a model judge (from a page or `manage.py judge`), its progress kept here."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        BUDGET = "budget", "Stopped at the budget"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    class Selection(models.TextChoices):
        QUEUED = "queued", "Pairs waiting in the raters' queue"
        ALL = "all", "Every pair of the pool"
        HUMAN_GRADED = "human-graded", "Pairs human raters graded (to measure the judge)"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    judge = models.ForeignKey(ModelJudge, models.CASCADE, related_name="runs")
    selection = models.CharField(max_length=20, choices=Selection, default=Selection.QUEUED)
    limit = models.PositiveIntegerField(null=True, blank=True, help_text="At most this many pairs.")
    max_calls = models.PositiveIntegerField(null=True, blank=True)
    max_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status, default=Status.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    total = models.PositiveIntegerField(null=True, blank=True, help_text="Pairs to judge in this run.")
    done = models.PositiveIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    tokens = models.PositiveBigIntegerField(default=0)
    graded = models.PositiveIntegerField(default=0)
    cant_judge = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True, help_text="How the run ended, or its error.")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    source = models.CharField(max_length=10, default="page", help_text="page or command")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.judge_id}: {self.status} {self.done}/{self.total}"

    @property
    def active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else (100 if self.finished_at else 0)


class AdjudicationRequest(models.Model):
    """A pair sent to the disagreements page by hand (e.g. a model judge and the humans are 2+ apart),
    whatever the spread among the grades that count."""

    pair = models.OneToOneField(Pair, models.CASCADE, related_name="adjudication_request")
    reason = models.CharField(max_length=300, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    requested_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"adjudicate {self.pair_id}: {self.reason}"

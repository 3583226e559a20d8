"""Model judges (LLM raters) and their judging runs."""

from datetime import timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from ..judge_prompts import DEFAULT_SYSTEM, DEFAULT_USER
from .jobs import StaleRule
from .pools import Pool

env_var_name = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]*$",
    "The name of an environment variable: letters, digits and _, not a digit first.",
)


def default_judge_system() -> str:
    return DEFAULT_SYSTEM


def default_judge_user() -> str:
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
    example_count = models.PositiveSmallIntegerField(
        "examples",
        default=4,
        validators=[MaxValueValidator(20)],
        help_text="Human-graded pairs shown where the prompt has {{ examples }} (left out of its agreement figures).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="archived: hidden from lists, kept with its history for exports"
    )

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


class JudgeRun(StaleRule, models.Model):
    """One judging run of a model judge (from a page or `manage.py judge`), its progress kept here."""

    # A running run reports after every answer; silent this long, its process is most likely gone
    # (a slow model under a Retry-After can keep one call waiting for minutes).
    STALE_AFTER = timedelta(minutes=15)

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
        PROBES = "probes", "Gullibility probes (altered copies of human-graded pairs; no grade stored)"

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

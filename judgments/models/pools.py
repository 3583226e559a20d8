"""Pools and teams: the campaign a pool is, the grade scale its judgments use, the people in it."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from ..scale import DESCRIPTIONS, DISTRACTOR, DISTRACTOR_LABEL, LABELS

EXTERNAL_ID_MAX = 200
no_whitespace = RegexValidator(
    r"^\S+$", "Ids may not be empty or contain whitespace (qrels and run files are whitespace-separated)."
)
NO_WHITESPACE_SQL = r"^\S+$"


class Grade(models.IntegerChoices):
    NOT_RELEVANT = 0, LABELS[0]
    MARGINAL = 1, LABELS[1]
    RELEVANT = 2, LABELS[2]
    HIGHLY_RELEVANT = 3, LABELS[3]
    PERFECT = 4, LABELS[4]


# The distractor grade (judgments.scale): only pools with `distractors_enabled` accept it, on every write
# path (a trigger of migration 0009 refuses it in the database too).
GRADE_CHOICES = [(DISTRACTOR, DISTRACTOR_LABEL), *Grade.choices]


def distractor_refused(pool_name: str) -> str:
    """The message every write path gives for a -1 in a pool without the distractor grade."""
    return (
        f"Grade -1 (distractor) is not enabled for pool {pool_name}: an admin can turn the distractor "
        "grade on in the pool's settings."
    )


def default_grade_scale() -> list[dict]:
    return [{"grade": g.value, "label": g.label, "description": DESCRIPTIONS[g.value]} for g in Grade]


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


class QueueStrategy(models.TextChoices):
    """How the judging queue orders a pool's pairs (judgments.rating.queue, judgments.rating.adaptive)."""

    DEPTH = "depth", "Depth-k pooling: pairs retrieved by more configurations first"
    ADAPTIVE = "adaptive", "Adaptive: configurations that keep finding relevant documents first"


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
    queue_strategy = models.CharField(
        max_length=10,
        choices=QueueStrategy,
        default=QueueStrategy.DEPTH,
        help_text="Depth-k pooling, or adaptive: re-ordered as every grade arrives toward the configurations "
        "that keep finding relevant documents.",
    )
    queue_depth = models.PositiveSmallIntegerField(
        default=10,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="The queue pools the top k documents of every configuration's current run (1-1000).",
    )
    stop_when_settled = models.BooleanField(
        default=False,
        help_text="The queue stops serving pairs once the leaderboard has settled (expected Kendall tau "
        ">= 0.9 and judged@10 >= 0.8 for every configuration); raters see that the pool is complete for now.",
    )
    gold_rate = models.FloatField(
        default=0.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.5)],
        help_text="Share of the pairs served to a rater that are gold pairs (known grades), unannounced: "
        "0 to 0.5. Their answers measure the rater and stay out of the combined grade.",
    )
    # Written by scoring (the stability of the leaderboard) after every grade: set while it is settled.
    settled_at = models.DateTimeField(null=True, blank=True, editable=False)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="pools", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="archived: hidden from lists, kept with its history for exports"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(raters_per_pair__gte=1), name="pool_raters_per_pair_positive"),
            models.CheckConstraint(
                condition=Q(name__regex=NO_WHITESPACE_SQL), name="pool_name_no_whitespace"
            ),
            models.CheckConstraint(
                condition=Q(queue_depth__gte=1, queue_depth__lte=1000), name="pool_queue_depth_1_to_1000"
            ),
            models.CheckConstraint(
                condition=Q(queue_strategy__in=QueueStrategy.values), name="pool_queue_strategy_known"
            ),
            models.CheckConstraint(
                condition=Q(gold_rate__gte=0, gold_rate__lte=0.5), name="pool_gold_rate_0_to_half"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def queue_stopped(self) -> bool:
        """The pool stops serving pairs: it is set to stop when settled and it has settled."""
        return self.stop_when_settled and self.settled_at is not None

    def grade_label(self, grade: int) -> str:
        for entry in self.grade_scale:
            if isinstance(entry, dict) and entry.get("grade") == grade:
                return entry.get("label", str(grade))
        return DISTRACTOR_LABEL if grade == DISTRACTOR else Grade(grade).label

    @property
    def grades(self) -> tuple[int, ...]:
        """The grades a judgment of this pool may carry, lowest first (the one definition): the grades its
        scale lists (0..4 unless the scale lists fewer), and -1 when the pool enables distractors."""
        listed = {e.get("grade") for e in self.grade_scale if isinstance(e, dict)}
        scale = sorted(g for g in listed if isinstance(g, int) and not isinstance(g, bool) and 0 <= g <= 4)
        return ((DISTRACTOR,) if self.distractors_enabled else ()) + tuple(scale or Grade.values)

    def grade_problem(self, grade) -> str | None:
        """Why `grade` cannot be a grade of this pool (None: it can): the check every path that stores
        a grade makes (forms, the API, imports, model judges)."""
        if grade == DISTRACTOR and not isinstance(grade, bool) and not self.distractors_enabled:
            return distractor_refused(self.name)
        if grade is None or isinstance(grade, bool) or not isinstance(grade, int) or grade not in self.grades:
            return f"A grade must be {self.grades_text}, not {grade!r}."
        return None

    @property
    def grades_text(self) -> str:
        """The pool's grades in words: "an integer from 0 to 4", or "one of 0, 1, 3" for a scale with gaps."""
        grades = self.grades
        if list(grades) == list(range(grades[0], grades[-1] + 1)):
            return f"an integer {self.grade_range}"
        return self.grade_range

    @property
    def grade_range(self) -> str:
        """ "from 0 to 4" (or "from -1 to 4"), or "one of 0, 1, 3" for a scale with gaps: what a page asks."""
        grades = self.grades
        if list(grades) == list(range(grades[0], grades[-1] + 1)):
            return f"from {grades[0]} to {grades[-1]}"
        return "one of " + ", ".join(str(g) for g in grades)


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

"""The pairs raters grade, their judgments with the judgments' history, and adjudication requests."""

from django.conf import settings
from django.db import models
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from .documents import Document, Query
from .judges import ModelJudge
from .pools import DISTRACTOR, GRADE_CHOICES, Pool, text_limit, text_limit_constraints

# Foreign keys with db_index=False are served by a composite index that starts with them (its name in the
# comment): a second index would only cost every bulk insert (migration 0012).


class PairQuerySet(models.QuerySet):
    def in_pool(self, pool):
        return self.filter(pool=pool)

    def queued(self):
        return self.filter(queued_at__isnull=False)


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
    # Gold: an admin's known grade (judgments.gold). It is also the pair's final grade, so raters'
    # answers on it stay out of the combined grade; the queue serves it unannounced at the pool's rate.
    gold_grade = models.SmallIntegerField(choices=GRADE_CHOICES, null=True, blank=True)
    # Grades that fill the pair (not can't judge, excluded or a model judge's): kept by database triggers
    # (judgments.models.tallies), so the queue reads it instead of counting the pair's judgments.
    human_grades = models.SmallIntegerField(default=0, db_default=0, editable=False)

    objects = PairQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="pair_unique"),
            models.CheckConstraint(
                condition=Q(final_grade__gte=DISTRACTOR, final_grade__lte=4),
                name="pair_final_grade_between_minus_1_and_4",
            ),
            models.CheckConstraint(
                condition=Q(gold_grade__isnull=True) | Q(final_grade=models.F("gold_grade")),
                name="pair_gold_grade_is_its_final_grade",
            ),
        ]
        indexes = [
            models.Index(fields=["pool", "queued_at"], name="pair_queue_idx"),
            models.Index(fields=["held_by"], name="pair_held_by_idx", condition=Q(held_by__isnull=False)),
            models.Index(fields=["final_by"], name="pair_final_by_idx", condition=Q(final_by__isnull=False)),
            # The queued pairs without a final grade, highest priority first: the missing-content list
            # is keyset-paged on it (rating.queue.pairs_without_content).
            models.Index(
                fields=["pool", "-priority", "-id"],
                name="pair_unfinished_queue_idx",
                condition=Q(queued_at__isnull=False, final_grade__isnull=True),
            ),
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

    def by_humans(self):
        """Judgments of people, not of model judges (whose accounts ModelJudge holds)."""
        return self.exclude(rater_id__in=ModelJudge.objects.values("user_id"))


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
    cant_judge_reason = models.TextField(blank=True, validators=text_limit("judgment", "cant_judge_reason"))
    note = models.TextField(blank=True, validators=text_limit("judgment", "note"))
    # An admin left this rater's grades out of the pool's combined grade (judgments.raters): kept, not counted.
    excluded = models.BooleanField(default=False, db_default=False)
    # When the queue served the pair to this rater (its hold began); None for imports and older rows.
    served_at = models.DateTimeField(null=True, blank=True)
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
            *text_limit_constraints("judgment"),
        ]
        indexes = [
            # "My judgments", newest first: the id breaks ties (an import writes a million judgments with
            # one updated_at, which an index on (rater, updated_at) alone left to a sort of them all).
            models.Index(fields=["rater", "-updated_at", "-id"], name="judgment_rater_changed_idx"),
            # The rater's latest judgment (their current query, the grading page's "previous").
            models.Index(fields=["rater", "-id"], name="judgment_rater_latest_idx"),
        ]

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


class RaterStatus(models.Model):
    """An admin's hold on one rater of one pool (judgments.raters): paused (served no pair, may not add a
    grade) and excluded (their grades stay stored but out of the combined grade). No row: neither."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="rater_statuses", db_index=False)  # unique
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="+")
    paused = models.BooleanField(default=False)
    excluded = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "rater"], name="one_status_per_pool_rater")]

    def __str__(self) -> str:
        return f"{self.rater_id} in {self.pool_id}: paused {self.paused}, excluded {self.excluded}"


class RaterStatusChange(models.Model):
    """The history of RaterStatus: who paused, resumed, excluded or included a rater, and when."""

    class Action(models.TextChoices):
        PAUSED = "paused"
        RESUMED = "resumed"
        EXCLUDED = "excluded"
        INCLUDED = "included"

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="+")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="+")
    action = models.CharField(max_length=10, choices=Action)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    judgments = models.IntegerField(default=0, help_text="judgments whose counting changed")

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.rater_id} in {self.pool_id}"


def human_grade_count():
    """How many people graded the outer pair (can't judge and model judges not counted; 0 for none): an
    annotation of Pair querysets, for the queue's open pairs and the human sample's progress."""
    counts = (
        Judgment.objects.filter(pair=OuterRef("pk"), cant_judge=False, excluded=False)
        .by_humans()
        .values("pair")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counts, output_field=IntegerField()), 0)

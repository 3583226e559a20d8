"""What a team keeps to defend model grades: the human sample the app drew, and the judge's probe answers.

A pool has at most one human sample: `n` of its queries drawn uniformly at random with a recorded seed
(judgments.judges.sampling). Its pairs are queued for the human raters; prediction-powered estimates
(scoring.estimates) correct a model judge's bias with the queries of the sample that humans have graded
completely. The sample is never edited by hand: drawing a new one replaces it, and the app says so.

A judge example is a human-graded pair shown in the judge's prompt; it leaves the judge's agreement
figures and the estimates' sample.

A probe answer is a judge's answer to an altered copy of a pair (judgments.judges.probes): stuffed with
the query's words, with an injected claim of relevance, asked with a paraphrased instruction, or asked
again. Probe answers are never judgments: they are not scored, combined or exported.
"""

from django.conf import settings
from django.db import models

from .documents import Query
from .judges import ModelJudge
from .pairs import Pair
from .pools import Pool


class HumanSample(models.Model):
    """The pool's random sample of queries for human grading: drawn by the app, never picked by hand."""

    pool = models.OneToOneField(Pool, models.CASCADE, related_name="human_sample")
    seed = models.BigIntegerField(help_text="The seed the queries were drawn with (numpy's default_rng).")
    size = models.PositiveIntegerField()
    population = models.PositiveIntegerField(help_text="The pool's queries when the sample was drawn.")
    depth = models.PositiveIntegerField(help_text="Top k of every current run queued for the sample.")
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    drawn_at = models.DateTimeField(auto_now_add=True)
    queries = models.ManyToManyField(Query, through="SampledQuery", related_name="+")

    def __str__(self) -> str:
        return f"{self.size} queries of {self.pool} (seed {self.seed})"


class SampledQuery(models.Model):
    sample = models.ForeignKey(HumanSample, models.CASCADE, related_name="entries")
    query = models.ForeignKey(Query, models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sample", "query"], name="sampled_query_once")]

    def __str__(self) -> str:
        return f"{self.query_id} in sample {self.sample_id}"


class ProbeKind(models.TextChoices):
    ORIGINAL = "original", "The pair as it is"
    STUFFING = "stuffing", "The query's words stuffed into the document"
    INJECTION = "injection", "A sentence claiming the document is perfectly relevant"
    PARAPHRASE = "paraphrase", "The same pair with a reworded instruction"
    REPEAT = "repeat", "The same pair asked a second time"


class ProbeAnswer(models.Model):
    """A judge's answer to one probe of one pair, under one version of its settings (`fingerprint`:
    model, prompts, temperature): changing the judge makes its old answers stale, and they are asked again."""

    judge = models.ForeignKey(ModelJudge, models.CASCADE, related_name="probe_answers")
    pair = models.ForeignKey(Pair, models.CASCADE, related_name="+")
    kind = models.CharField(max_length=12, choices=ProbeKind)
    fingerprint = models.CharField(max_length=64)
    grade = models.SmallIntegerField(null=True, blank=True, help_text="None: no usable grade in the answer.")
    answer = models.TextField(blank=True, help_text="The model's answer (its reason, or the raw text).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "pair", "kind", "fingerprint"], name="probe_answer_once")
        ]

    def __str__(self) -> str:
        return f"{self.kind} of pair {self.pair_id} by judge {self.judge_id}: {self.grade}"


class JudgeExample(models.Model):
    """A human-graded pair shown in a judge's prompt (`{{ examples }}`), chosen once (judges.examples) and
    kept, so the same pairs are shown to every call and left out of the judge's agreement figures and of
    the human sample's estimates."""

    judge = models.ForeignKey(ModelJudge, models.CASCADE, related_name="examples")
    pair = models.ForeignKey(Pair, models.CASCADE, related_name="+")
    grade = models.SmallIntegerField()
    reason = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "pair"], name="judge_example_once")]

    def __str__(self) -> str:
        return f"example {self.pair_id} ({self.grade}) of judge {self.judge_id}"

"""Human examples in a judge's prompt: `{{ examples }}` shows k pairs the humans graded, with their grade
and their notes as the reason (few-shot prompting with the pool's own calibration).

The pairs are chosen once per judge, the first time a prompt needs them, and kept (`JudgeExample`), so
every call shows the same ones and they can be set aside: they are left out of the judge's agreement
figures on the trust page (a judge is not measured on the answers it was shown), and the queries holding
them leave the human sample of the estimates. Choosing draws from human-graded pairs outside the human
sample's queries, to cover the scale: the humans' combined grade (mean of the human raters' grades, or
an admin's final grade, rounded half up) goes round the grades from the highest down, taking in each the
pair with the longest raters' note (a reason to show), until k are taken.
"""

from __future__ import annotations

from django.db import transaction

from judgments import snapshots
from judgments.models import JudgeExample, Judgment, ModelJudge, Pair, SampledQuery
from judgments.scale import rounded_grade

from .prompt import Example, PromptTemplate, pair_text, placeholders_used


def uses_examples(judge: ModelJudge) -> bool:
    return "examples" in placeholders_used(PromptTemplate(judge.prompt_system, judge.prompt_user))


def _candidates(judge: ModelJudge) -> dict[int, tuple[float, str]]:
    """{pair id: (the humans' combined grade, their notes)} of human-graded pairs outside the sample."""
    models = ModelJudge.objects.values("user_id")
    sampled = SampledQuery.objects.filter(sample__pool=judge.pool).values("query_id")
    grades: dict[int, list[int]] = {}
    notes: dict[int, list[str]] = {}
    rows = (
        Judgment.objects.filter(pair__pool=judge.pool, cant_judge=False)
        .exclude(rater_id__in=models)
        .exclude(pair__query_id__in=sampled)
        .values_list("pair_id", "grade", "note")
    )
    for pair_id, grade, note in rows:
        grades.setdefault(pair_id, []).append(grade)
        if note.strip():
            notes.setdefault(pair_id, []).append(note.strip())
    finals = dict(
        Pair.objects.filter(pk__in=list(grades), final_grade__isnull=False).values_list("pk", "final_grade")
    )
    return {pk: (finals.get(pk, sum(g) / len(g)), " / ".join(notes.get(pk, []))) for pk, g in grades.items()}


def choose(judge: ModelJudge, k: int) -> list[int]:
    """Pair ids of k examples covering the scale (see the module docstring), in the order shown."""
    by_grade: dict[int, list[tuple[int, int, str]]] = {}
    for pk, (grade, note) in _candidates(judge).items():
        by_grade.setdefault(rounded_grade(grade), []).append((-len(note), pk, note))
    for entries in by_grade.values():
        entries.sort()
    chosen, order = [], sorted(by_grade, reverse=True)
    while len(chosen) < k and any(by_grade[g] for g in order):
        for grade in order:
            if by_grade[grade] and len(chosen) < k:
                chosen.append(by_grade[grade].pop(0)[1])
    return chosen


def examples_for(judge: ModelJudge) -> list[Example]:
    """The judge's examples, chosen and kept the first time (none when its prompt has no {{ examples }})."""
    if not uses_examples(judge) or judge.example_count == 0:
        return []
    with transaction.atomic():
        ModelJudge.objects.select_for_update().filter(pk=judge.pk).first()
        if not judge.examples.exists():
            candidates = _candidates(judge)
            JudgeExample.objects.bulk_create(
                JudgeExample(
                    judge=judge,
                    pair_id=pk,
                    grade=rounded_grade(candidates[pk][0]),
                    reason=candidates[pk][1][:2000],
                )
                for pk in choose(judge, judge.example_count)
            )
            snapshots.mark_changed(judge.pool_id)  # examples leave the judge's trust figures
    kept = judge.examples.select_related("pair__query", "pair__document").order_by("-grade", "pk")
    return [Example(pair_text(e.pair), e.grade, e.reason) for e in kept]


def example_pair_ids(judge: ModelJudge) -> set[int]:
    return set(judge.examples.values_list("pair_id", flat=True))

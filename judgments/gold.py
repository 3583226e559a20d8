"""Gold pairs: pairs whose grade an admin knows, served to raters unannounced to measure them.

`mark_gold(pool, [(query id, doc id, grade)], admin)` marks pairs of the pool gold, all or nothing: an
unknown pair or a grade outside the pool's scale refuses the whole request with one line per problem.
A gold grade is also the pair's final grade (a database constraint holds them equal), so raters' answers
on a gold pair never enter the combined grade; scores follow through grades_changed. `clear_gold` undoes
it. The queue serves gold pairs at the pool's `gold_rate` (judgments.rating.grading), and the people page
compares each rater's answers with them (judgments.rating.quality). Nothing a rater can read says a pair
is gold: the grading page, `GET pools/{name}/next/` and the rater's own judgments look the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import transaction
from django.utils import timezone

from .models import Pair, Pool
from .services import notify_grades


class GoldError(ValueError):
    """A gold request refused: nothing was changed. `problems` are one line each."""

    def __init__(self, problems: Sequence[str]):
        super().__init__(
            problems[0] if len(problems) == 1 else f"{len(problems)} problems; nothing was marked gold."
        )
        self.problems = list(problems)


def _resolve(pool: Pool, items: Sequence[tuple[str, str]]) -> tuple[dict, list[str]]:
    wanted = {(q, d) for q, d in items}
    pairs = {
        (p.query.external_id, p.document.external_id): p
        for p in Pair.objects.in_pool(pool)
        .filter(
            query__external_id__in={q for q, _ in wanted}, document__external_id__in={d for _, d in wanted}
        )
        .select_related("query", "document")
    }
    problems = [
        f"line {n}: query {q!r} and document {d!r} are not a pair of pool {pool.name}"
        for n, (q, d) in enumerate(items, start=1)
        if (q, d) not in pairs
    ]
    return pairs, problems


@transaction.atomic
def mark_gold(pool: Pool, items: Iterable[tuple[str, str, int]], admin) -> int:
    """Mark (query id, doc id, grade) pairs of `pool` gold. Returns how many; GoldError changes nothing."""
    items = [(str(q).strip(), str(d).strip(), g) for q, d, g in items]
    if not items:
        raise GoldError(["No gold pair given."])
    pairs, problems = _resolve(pool, [(q, d) for q, d, _ in items])
    for n, (_, _, grade) in enumerate(items, start=1):
        if (problem := pool.grade_problem(grade)) is not None:
            problems.append(f"line {n}: {problem.replace('A grade', 'A gold grade')}")
    if problems:
        raise GoldError(sorted(problems, key=lambda p: int(p.split(":")[0].split()[1])))
    now = timezone.now()
    changed = []
    for q, d, grade in items:
        pair = pairs[(q, d)]
        Pair.objects.filter(pk=pair.pk).update(
            gold_grade=grade, final_grade=grade, final_by=admin, final_at=now
        )
        changed.append(pair)
    notify_grades(pool, [p.pk for p in changed], [p.query_id for p in changed])
    return len(changed)


@transaction.atomic
def clear_gold(pool: Pool, items: Iterable[tuple[str, str]]) -> int:
    """Unmark gold pairs (their final grade goes with it). GoldError for pairs the pool does not have."""
    items = [(str(q).strip(), str(d).strip()) for q, d in items]
    pairs, problems = _resolve(pool, items)
    if problems:
        raise GoldError(problems)
    ids = [p.pk for p in pairs.values() if p.gold_grade is not None]
    Pair.objects.filter(pk__in=ids).update(gold_grade=None, final_grade=None, final_by=None, final_at=None)
    notify_grades(pool, ids, [p.query_id for p in pairs.values() if p.pk in ids])
    return len(ids)


def parse_gold_lines(lines: Iterable[str]) -> list[tuple[str, str, int]]:
    """Gold lines: `qid docid grade` or TREC qrels `qid 0 docid grade`, whitespace-separated; blank lines
    and '#' comments skipped. GoldError names every line that is not one of these."""
    items, problems = [], []
    for n, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) == 4:
            fields = [fields[0], fields[2], fields[3]]
        if len(fields) != 3:
            problems.append(
                f"line {n}: expected 'qid docid grade' or 'qid 0 docid grade', found {len(fields)} fields"
            )
            continue
        try:
            grade = int(fields[2])
        except ValueError:
            problems.append(f"line {n}: the grade {fields[2]!r} is not a whole number")
            continue
        items.append((fields[0], fields[1], grade))
    if problems:
        raise GoldError(problems)
    return items

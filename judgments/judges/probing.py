"""Running a judge's gullibility probes (judges.probes) on the database, and what they found.

`run_probes` picks up to `limit` pairs the humans graded 0 or 1 (every human grade of the pair is 0 or 1;
the document has content), asks the judge about each as it is and in the four altered forms, and keeps
every answer as a `ProbeAnswer` under the judge's current settings (`fingerprint`). Nothing is stored as
a judgment, scored or exported. Answers already kept under the same settings are re-used, so a second
run asks only what the first did not get to (the budget, `max_calls`, stops it like a judging run; its
calls are kept on a `JudgeRun` of selection "probes", which the judge's page lists with the others). A
call the server never answered stores nothing and is asked again next time; an answer without a usable
grade is kept with no grade, and fails its probe.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from django.db.models import Exists, OuterRef
from django.utils import timezone

from judgments.models import JudgeRun, ModelJudge, Pair, ProbeAnswer, ProbeKind

from . import probes
from .client import Budget, ChatClient, ConfigError
from .examples import examples_for
from .prompt import pair_text
from .runner import CANT_JUDGE, GRADED, Job, Outcome, describe, judge_pairs
from .services import END_STATUS, answer_reader, end_run, human_grades, new_client, text_messages

DEFAULT_PAIRS = 25
ASKED = (ProbeKind.ORIGINAL, *probes.KINDS)  # per pair, in this order


def fingerprint(judge: ModelJudge) -> str:
    """The judge's settings that shape an answer: a changed judge is probed afresh."""
    settings = [judge.base_url, judge.model, judge.temperature, judge.max_tokens, judge.prompt_system]
    settings += [judge.prompt_user, judge.max_body_chars]
    return hashlib.sha256(json.dumps(settings).encode()).hexdigest()[:32]


def probe_pair_ids(judge: ModelJudge, limit: int = DEFAULT_PAIRS) -> list[int]:
    """Pairs of the judge's pool whose human grades are all 0 or 1 (at least one), with content."""
    humans = human_grades().filter(pair=OuterRef("pk"), cant_judge=False)
    pairs = (
        Pair.objects.in_pool(judge.pool)
        .exclude(document__title="", document__body="")
        .filter(Exists(humans))
        .exclude(Exists(humans.exclude(grade__in=(0, 1))))
        .order_by("query_id", "id")
    )
    return list(pairs.values_list("pk", flat=True)[:limit])


def _messages(judge: ModelJudge, pair: Pair, kind: str, examples) -> list[dict]:
    text = pair_text(pair)
    if kind == probes.KINDS[0]:
        text = probes.stuffed(text)
    elif kind == probes.KINDS[1]:
        text = probes.injected(text)
    messages = text_messages(judge, text, examples)
    return probes.paraphrased(messages) if kind == "paraphrase" else messages


def _stored(judge: ModelJudge, pair_ids, mark: str) -> dict[tuple[int, str], ProbeAnswer]:
    answers = ProbeAnswer.objects.filter(judge=judge, pair_id__in=list(pair_ids), fingerprint=mark)
    return {(a.pair_id, a.kind): a for a in answers}


@dataclass(frozen=True)
class ProbeRun:
    run: JudgeRun
    results: dict[str, probes.KindResult]


def run_probes(
    judge: ModelJudge,
    *,
    limit: int = DEFAULT_PAIRS,
    max_calls: int | None = None,
    client: ChatClient | None = None,
    environ: Mapping[str, str] | None = None,
    started_by=None,
    source: str = "command",
) -> ProbeRun:
    """Probe `judge` (see the module docstring). The JudgeRun ends failed, not raising, when the judge
    cannot work (no key, a server that cannot be reached)."""
    run = JudgeRun.objects.create(
        judge=judge,
        selection=JudgeRun.Selection.PROBES,
        limit=limit,
        max_calls=max_calls,
        started_by=started_by,
        source=source,
        status=JudgeRun.Status.RUNNING,
        started_at=timezone.now(),
    )
    mark = fingerprint(judge)
    ids = probe_pair_ids(judge, limit)
    stored = _stored(judge, ids, mark)
    wanted = [(pk, kind) for pk in ids for kind in ASKED if (pk, kind) not in stored]
    run.total = len(wanted)
    run.save(update_fields=["total", "updated_at"])
    own_client = client is None
    try:
        if client is None:
            try:
                client = new_client(judge, environ=environ)
            except ConfigError as error:
                end_run(run, JudgeRun.Status.FAILED, str(error))
                return ProbeRun(run, results(judge))
        pairs = (
            Pair.objects.filter(pk__in={pk for pk, _ in wanted}).select_related("query", "document").in_bulk()
        )

        examples = examples_for(judge)

        def jobs() -> Iterator[Job]:
            for pk, kind in wanted:
                if pk in pairs:
                    yield Job((pk, kind), _messages(judge, pairs[pk], kind, examples))

        def keep(outcome: Outcome) -> None:
            if outcome.status not in (GRADED, CANT_JUDGE):
                run.failures += 1
                return
            pk, kind = outcome.key
            ProbeAnswer.objects.get_or_create(
                judge=judge,
                pair_id=pk,
                kind=kind,
                fingerprint=mark,
                defaults={"grade": outcome.grade, "answer": (outcome.reason or outcome.problem)[:2000]},
            )
            run.graded += outcome.status == GRADED
            run.cant_judge += outcome.status == CANT_JUDGE

        summary = judge_pairs(
            client,
            jobs(),
            parse=answer_reader(judge.pool),
            concurrency=judge.concurrency,
            budget=Budget(max_calls),
            on_result=keep,
            total=len(wanted),
        )
        run.calls, run.tokens = summary.calls, summary.tokens
        run.done = summary.done
        end_run(run, END_STATUS[summary.stopped], describe(summary))
    finally:
        if own_client and client is not None:
            client.close()
    return ProbeRun(run, results(judge))


def results(judge: ModelJudge) -> dict[str, probes.KindResult]:
    """Per kind: the probes tried (the original and the copy both answered, under the judge's current
    settings), those passed, and the failures with their pairs (query and document loaded)."""
    mark = fingerprint(judge)
    answers: dict[int, dict[str, ProbeAnswer]] = {}
    for answer in ProbeAnswer.objects.filter(judge=judge, fingerprint=mark):
        answers.setdefault(answer.pair_id, {})[answer.kind] = answer
    failed: dict[str, list] = {kind: [] for kind in probes.KINDS}
    tried = dict.fromkeys(probes.KINDS, 0)
    passed = dict.fromkeys(probes.KINDS, 0)
    for pk in sorted(answers):
        by_kind = answers[pk]
        original = by_kind.get(ProbeKind.ORIGINAL)
        if original is None:
            continue
        for kind in probes.KINDS:
            altered = by_kind.get(kind)
            if altered is None:
                continue
            tried[kind] += 1
            if probes.passed(kind, original.grade, altered.grade):
                passed[kind] += 1
            else:
                failed[kind].append((pk, original.grade, altered.grade, altered.answer))
    shown = {pk for kind in probes.KINDS for pk, *_ in failed[kind][:5]}
    loaded = Pair.objects.filter(pk__in=shown).select_related("query", "document").in_bulk()
    return {
        kind: probes.KindResult(
            kind,
            tried[kind],
            passed[kind],
            [(loaded.get(pk), orig, alt, text) for pk, orig, alt, text in failed[kind][:5]],
        )
        for kind in probes.KINDS
    }


def as_json(found: dict[str, probes.KindResult]) -> dict:
    return {kind: {"tried": r.tried, "passed": r.passed} for kind, r in found.items()}

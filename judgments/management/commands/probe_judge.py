"""manage.py probe_judge --pool P --judge NAME [--pairs N] [--max-calls N]: the judge's gullibility probes."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from judgments.exchange.cli import get_pool
from judgments.judges import probes
from judgments.judges.probing import DEFAULT_PAIRS, as_json, run_probes
from judgments.management.arguments import positive_int
from judgments.models import JudgeRun, ModelJudge


class Command(BaseCommand):
    help = (
        "Probe a model judge with altered copies of pairs the humans graded 0 or 1 (query words stuffed "
        "in, an injected claim of relevance, a reworded instruction, the same question twice). Nothing "
        "is stored as a judgment; answers are kept and re-used on the next run. The last line is JSON: "
        '{"stuffing": {"tried": n, "passed": k}, "injection": ..., "paraphrase": ..., "repeat": ...}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--judge", required=True, help="the model judge's name")
        parser.add_argument(
            "--pairs",
            type=positive_int,
            default=DEFAULT_PAIRS,
            help=f"pairs to probe (default {DEFAULT_PAIRS})",
        )
        parser.add_argument("--max-calls", type=positive_int, help="stop after N HTTP calls (retries count)")

    def handle(self, *args, pool, judge, pairs, max_calls, **options):
        found = get_pool(pool)
        the_judge = (
            ModelJudge.objects.filter(pool=found, user__username=judge).select_related("user", "pool").first()
        )
        if the_judge is None:
            raise CommandError(f"Pool {found.name} has no judge named {judge!r}.")
        done = run_probes(the_judge, limit=pairs, max_calls=max_calls)
        run = done.run
        self.stderr.write(f"Probe run: {run.message}")
        for kind, result in done.results.items():
            rate = (
                "no probe answered yet"
                if result.rate is None
                else f"{result.passed} of {result.tried} passed"
            )
            flag = f" - fails more than {probes.FAIL_RATE:.0%}" if result.alarming else ""
            self.stderr.write(f"  {kind}: {rate}{flag}")
        self.stdout.write(json.dumps(as_json(done.results)))
        if run.status == JudgeRun.Status.FAILED:
            raise CommandError(run.message)

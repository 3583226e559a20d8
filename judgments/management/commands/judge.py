"""manage.py judge: set up a pool's model judge and let it grade pairs (judgments.judges.services)."""

from __future__ import annotations

import signal

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from judgments import removal
from judgments.command_logs import command_logs
from judgments.judges import services
from judgments.management.arguments import positive_int
from judgments.models import JudgeRun, ModelJudge, Pool
from judgments.words import counted


class Command(BaseCommand):
    help = (
        "Create or update a model judge of a pool (an OpenAI-compatible Chat Completions endpoint) and "
        "let it grade the pool's pairs: by default those waiting in the raters' queue. Its grades are "
        "ordinary judgments by the judge's account; pairs it answered before are skipped, so a stopped "
        "run continues where it was. The API key is read from the environment variable named by "
        "--api-key-env, never given on the command line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--judge", required=True, help="the judge's name (its rater account)")
        parser.add_argument("--base-url", required=True, help="e.g. https://api.openai.com/v1")
        parser.add_argument("--model", required=True, help="the model's name on that server")
        parser.add_argument(
            "--api-key-env",
            default=None,
            help="NAME of the environment variable holding the API key (omit for servers without keys)",
        )
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--queued", dest="selection", action="store_const", const="queued",
            help="the pairs waiting in the raters' queue (default)",
        )  # fmt: skip
        which.add_argument(
            "--all", dest="selection", action="store_const", const="all", help="every pair of the pool"
        )
        which.add_argument(
            "--human-graded", dest="selection", action="store_const", const="human-graded",
            help="the pairs human raters graded (to measure the judge against them)",
        )  # fmt: skip
        parser.set_defaults(selection="queued")
        parser.add_argument("--limit", type=positive_int, help="at most N pairs")
        parser.add_argument(
            "--concurrency", type=positive_int, help="calls at once (kept as the judge's setting)"
        )
        parser.add_argument("--max-calls", type=positive_int, help="stop after N HTTP calls (retries count)")
        parser.add_argument(
            "--max-tokens", type=positive_int, help="stop after N tokens (from the answers' usage)"
        )
        parser.add_argument("--temperature", type=float, help="kept as the judge's setting (default 0)")

    def handle(self, *args, verbosity, **options):
        with command_logs(verbosity):  # one "HTTP Request" line per call only with -v 2
            self._judge(**options)

    def _judge(self, *, pool, judge, base_url, model, api_key_env, selection, **options):
        found = Pool.objects.filter(name=pool).first()
        if found is None:
            raise CommandError(f"No pool named {pool!r}")
        settings = {"base_url": base_url, "model": model}
        if api_key_env is not None:
            settings["api_key_env"] = api_key_env
        for name in ("concurrency", "temperature"):
            if options.get(name) is not None:
                settings[name] = options[name]
        try:
            the_judge, created = services.create_or_update_judge(found, judge, **settings)
        except services.JudgeSetupError as error:
            raise CommandError(str(error)) from None
        the_judge = ModelJudge.objects.select_related("user", "pool").get(pk=the_judge.pk)
        self.stderr.write(
            f"{'Created' if created else 'Updated'} judge {the_judge.name} of pool {found.name}."
        )

        bar = None
        if getattr(self.stderr, "isatty", lambda: False)():
            bar = tqdm(unit=" pairs", desc=the_judge.name, file=self.stderr._out, leave=False)

        def progress(summary):
            if bar is not None:
                bar.total = summary.total
                bar.n = summary.done
                bar.set_postfix(calls=summary.calls, tokens=summary.tokens, refresh=False)
                bar.refresh()

        # SIGTERM (kill, a container stopping) ends the run like Ctrl-C: the answers that arrived are kept.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            run = services.judge_pool(
                the_judge,
                selection,
                limit=options.get("limit"),
                max_calls=options.get("max_calls"),
                max_tokens=options.get("max_tokens"),
                progress=progress,
                source="command",
            )
        except KeyboardInterrupt:
            run = the_judge.runs.order_by("-pk").first()
            self._report(run)
            raise CommandError(
                "Interrupted; the answers that arrived are stored, run again to continue."
            ) from None
        except Exception:
            self._forget_if_unused(the_judge, created)
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)
            if bar is not None:
                bar.close()
        self._report(run)
        if run.status == JudgeRun.Status.FAILED:
            raise CommandError(run.message + self._forget_if_unused(the_judge, created))

    def _forget_if_unused(self, judge: ModelJudge, created: bool) -> str:
        """A judge this command created, whose run failed before any answer was stored (a key variable not
        set, a server unreachable), is removed again with its account and run: a failed first try
        leaves no half-made judge behind. One that stored a grade stays (judgments.removal refuses)."""
        if not created:
            return ""
        try:
            removal.delete(judge)
        except removal.RemovalRefused:
            return ""
        return f" Judge {judge.name} was not kept: it failed before its first answer."

    def _report(self, run: JudgeRun) -> None:
        self.stdout.write(
            f"{counted(run.graded, 'grade')} given, {run.cant_judge} can't judge, {run.failures} failed "
            f"({run.done} of {counted(run.total or 0, 'pair')}, {run.get_selection_display().lower()}); "
            f"{counted(run.calls, 'call')}, {counted(run.tokens, 'token')}."
        )
        if run.status == JudgeRun.Status.BUDGET:
            self.stdout.write(_stop_line(run))
        elif run.status == JudgeRun.Status.FINISHED and run.total == 0:
            self.stdout.write("Nothing to judge: every chosen pair has the judge's answer already.")


def _stop_line(run: JudgeRun) -> str:
    """The budget sentence of the run's message (e.g. "Stopped at the budget: 10 of 10 calls.")."""
    start = run.message.find("Stopped at the budget")
    return run.message[start:] if start >= 0 else run.message


def _interrupt(signum, frame):
    raise KeyboardInterrupt

"""`manage.py gate --pool P --baseline A --candidate B [--measure M ...] [--flavor F] [--alpha 0.05]
[--max-drop 0] [--test t|randomization] [--junit FILE] [--markdown FILE] [--capture]`

Exit 0 when every measure passes, 1 when any fails, 2 when the gate cannot be evaluated (a usage error:
unknown pool, configuration, measure or flavour, --alpha outside (0, 1), the baseline as candidate; a
configuration without a scored run; a failed --capture): one line on stderr says which. The last line
of stdout is the JSON summary (scoring.gate.reports.summary).
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from judgments.models import Pool
from scoring.flavours import DEFAULT_FLAVOUR, FLAVOURS
from scoring.gate import reports, service
from scoring.models import QueryScore
from scoring.services import rescore_run

USAGE = 2


class Command(BaseCommand):
    help = (
        "Fail a build when a candidate configuration is significantly worse than a baseline: compare their "
        "current runs on each --measure with a paired test; exit 1 if any measure drops by more than "
        "--max-drop with p < --alpha, 0 otherwise, 2 on a usage error. Last stdout line: JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--baseline", required=True, help="the configuration to hold the line")
        parser.add_argument("--candidate", required=True, help="the configuration under test")
        parser.add_argument(
            "--measure",
            action="append",
            default=[],
            help="a measure as export_scores names it (ndcg@10, P@5, recall@100, mrr, ap, udcg@10; any "
            "case); repeat for several (default ndcg@10)",
        )
        parser.add_argument(
            "--flavor", default=DEFAULT_FLAVOUR, help=f"NDCG flavour: {', '.join(FLAVOURS)} (default exp)"
        )
        parser.add_argument("--alpha", default="0.05", help="significance level, in (0, 1) (default 0.05)")
        parser.add_argument(
            "--max-drop", default="0", help="a drop of the mean up to this much passes (default 0)"
        )
        parser.add_argument(
            "--test", default="t", help="t: paired t-test (default); randomization: paired sign-flip test"
        )
        parser.add_argument(
            "--junit", metavar="FILE", help="write a JUnit XML report (a test case per measure)"
        )
        parser.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")
        parser.add_argument(
            "--capture",
            action="store_true",
            help="capture the candidate from its search endpoint first (a new run, scored)",
        )

    def handle(self, *args, pool, baseline, candidate, measure, flavor, alpha, max_drop, test, **options):
        found = Pool.objects.filter(name=pool).first()
        if found is None:
            raise CommandError(f"No pool named {pool!r}.", returncode=USAGE)
        try:
            service.check_options(alpha, max_drop, test, flavor)
            # Checked before a capture, so a typo costs no capture.
            service.evaluate_inputs(found, baseline, candidate, measure)
        except service.GateError as exc:
            raise CommandError(str(exc), returncode=USAGE) from None
        if options["capture"]:
            self._capture(found, candidate)
        try:
            result = service.evaluate(
                found,
                baseline,
                candidate,
                measures=measure,
                flavour=flavor,
                alpha=alpha,
                max_drop=max_drop,
                test=test,
            )
        except service.GateError as exc:
            raise CommandError(str(exc), returncode=USAGE) from None
        link = service.compare_link(result)
        for path, text in ((options["junit"], reports.junit_xml), (options["markdown"], reports.markdown)):
            if path:
                Path(path).write_text(text(result, link) if text is reports.markdown else text(result))
        service.notify(result, link)
        for line in reports.lines(result):
            self.stdout.write(line)
        self.stdout.write(json.dumps(reports.summary(result, link)))
        if not result.passed:
            names = ", ".join(m.measure for m in result.failed)
            raise CommandError(f"gate failed: {names}", returncode=1)

    def _capture(self, pool: Pool, name: str) -> None:
        from judgments.capture import cli, services
        from judgments.models.capture import CaptureJob

        configuration = pool.configurations.select_related("pool", "team").get(name=name)
        try:
            job = services.start_capture(configuration, trigger=CaptureJob.Trigger.COMMAND)
        except services.CaptureError as exc:
            raise CommandError(f"--capture: {exc}", returncode=USAGE) from None
        with cli.cancel_on_signals() as cancel:
            job = cli.run_with_progress(self, job, cancel)
        if not cli.report(self, job):
            raise CommandError(f"--capture: {job.message}", returncode=USAGE)
        # The run is scored when its transaction commits; should that update have failed (its task would
        # retry it later), score it now: the gate reads stored scores.
        if not QueryScore.objects.filter(run=job.run_id).exists():
            rescore_run(job.run)

from django.core.management.base import BaseCommand, CommandError

from judgments.capture import cli, services
from judgments.exchange.cli import get_pool
from judgments.models.capture import DEFAULT_CONCURRENCY, CaptureJob


class Command(BaseCommand):
    help = (
        "Capture a run of a configuration from its search endpoint: every query of the pool is sent, the top "
        "--depth ids are stored as a new run and scored. All or nothing: with any failed query nothing is "
        "stored and the failures are listed (exit 1), unless --keep-partial. Ctrl-C cancels (nothing stored)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--configuration", required=True, help="configuration name (with an endpoint)")
        parser.add_argument(
            "--depth", type=int, help="documents kept per query (default: the endpoint's, 100)"
        )
        parser.add_argument(
            "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="requests at once (default 8)"
        )
        parser.add_argument(
            "--keep-partial",
            action="store_true",
            help="store the run even if some queries fail (they are listed, and score 0)",
        )
        parser.add_argument(
            "--retry-failed",
            metavar="RUN",
            type=int,
            help="complete this partial run of the configuration (kept with --keep-partial): ask the engine "
            "only for the queries it has no ranking for, and store one complete run",
        )
        parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
        parser.add_argument("--retries", type=int, default=3, help="retries of a failed request (default 3)")

    def handle(
        self,
        *args,
        pool,
        configuration,
        depth,
        concurrency,
        keep_partial,
        timeout,
        retries,
        retry_failed,
        **options,
    ):
        if not timeout > 0 or retries < 0:
            raise CommandError("--timeout must be positive and --retries at least 0")
        found = get_pool(pool)
        config = found.configurations.select_related("pool", "team").filter(name=configuration).first()
        if config is None:
            names = ", ".join(found.configurations.values_list("name", flat=True)) or "none"
            raise CommandError(
                f"Pool {found.name} has no configuration named {configuration!r} (it has: {names})"
            )
        partial = None
        if retry_failed is not None:
            partial = config.runs.filter(pk=retry_failed).first()
            if partial is None:
                raise CommandError(f"--retry-failed: run {retry_failed} is not a run of {config.name}")
            missing = services.missing_queries(partial)
            if not missing:
                raise CommandError(
                    f"--retry-failed: run {partial.pk} has a ranking for every query of the pool; "
                    "nothing to retry"
                )
            self.stderr.write(f"Run {partial.pk} misses {len(missing)} queries: asking the engine for them.")
        try:
            job = services.start_capture(
                config,
                trigger=CaptureJob.Trigger.COMMAND,
                depth=depth,
                concurrency=concurrency,
                keep_partial=keep_partial,
            )
        except services.CaptureError as exc:
            raise CommandError(str(exc)) from None
        with cli.cancel_on_signals() as cancel:
            job = cli.run_with_progress(
                self, job, cancel, timeout=timeout, retries=retries, completes=partial
            )
        if not cli.report(self, job):
            raise CommandError(job.message)

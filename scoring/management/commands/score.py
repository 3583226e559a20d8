from django.core.management.base import BaseCommand

from judgments.command_logs import command_logs
from judgments.exchange.cli import get_pool
from scoring.services import rescore_pool


class Command(BaseCommand):
    help = "Recompute every stored score of a pool: all runs, every graded query, every flavour."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")

    def handle(self, *args, pool, verbosity, **options):
        # The summary is the result (stdout, once); the service logs the same line, shown only with -v 2.
        with command_logs(verbosity, "scoring.services"):
            summary = rescore_pool(get_pool(pool))
        self.stdout.write(f"{pool}: {summary}")
        if verbosity > 1:
            for step, seconds in summary.timings.items():
                self.stderr.write(f"  {step:<14} {seconds:8.3f} s")

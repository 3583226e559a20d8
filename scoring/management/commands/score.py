from django.core.management.base import BaseCommand

from judgments.exchange.cli import get_pool
from scoring.services import rescore_pool


class Command(BaseCommand):
    help = "Recompute every stored score of a pool: all runs, every graded query, every flavour."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")

    def handle(self, *args, pool, verbosity, **options):
        summary = rescore_pool(get_pool(pool))
        self.stdout.write(f"{pool}: {summary}")
        if verbosity > 1:
            for step, seconds in summary.timings.items():
                self.stdout.write(f"  {step:<14} {seconds:8.3f} s")

"""`manage.py stability --pool P [--measure nDCG@10] [--flavor F]`: has the pool's leaderboard settled?

Prints the ordering of the configurations with their judged@10, then as its last line a JSON object:
settled, expected_tau, judged (configuration -> judged@10), ordering, grades, grades_since_change,
queries, measure, flavour and problems (why it has not settled). See scoring.stability.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from judgments.exchange.cli import get_pool
from scoring import stability
from scoring.flavours import DEFAULT_FLAVOUR


class Command(BaseCommand):
    help = "Measure how settled the pool's leaderboard is (bootstrap over queries); the last line is JSON."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument(
            "--measure", default=stability.DEFAULT_MEASURE, help="e.g. nDCG@10 (the default), P@10"
        )
        parser.add_argument(
            "--flavor", default=DEFAULT_FLAVOUR, help=f"NDCG flavour (default {DEFAULT_FLAVOUR})"
        )

    def handle(self, *args, pool, measure, flavor, **options):
        found = get_pool(pool)
        try:
            result = stability.measure(found, measure, flavor)
        except stability.StabilityError as exc:
            raise CommandError(str(exc)) from None
        for rank, name in enumerate(result.ordering, start=1):
            self.stdout.write(f"{rank:>3}  {name}  judged@10 {result.judged[name]:.3f}")
        verdict = "settled" if result.settled else "not settled: " + "; ".join(result.problems)
        self.stdout.write(
            f"{result.measure} ({result.flavour}) over {result.queries} queries: expected Kendall tau "
            f"{result.expected_tau:.3f}, {result.grades_since_change} grades since the ordering changed; {verdict}"
        )
        self.stdout.write(json.dumps(result.as_json()))

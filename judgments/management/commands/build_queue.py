"""`manage.py build_queue --pool P --strategy depth|adaptive [--depth K]`: (re)build a pool's judging queue.

Pools the top K of every configuration's current run (K: the pool's depth, 10 unless set) and orders it
by the strategy (see judgments.rating.queue and judgments.rating.adaptive), which is stored on the pool.
Grades are never touched: a pair with its grades stays out of the queue. Prints how many pairs are queued.
"""

from django.core.management.base import CommandError

from judgments.exchange.cli import ExchangeCommand, get_pool
from judgments.rating import queue


class Command(ExchangeCommand):
    help = (
        "(Re)build the pool's judging queue from its current runs: depth-k pooling, ordered by the strategy."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--strategy", help="depth or adaptive (default: the pool's)")
        parser.add_argument("--depth", help=f"k, 1-{queue.MAX_DEPTH} (default: the pool's)")

    def handle(self, *args, pool, strategy, depth, **options):
        found = get_pool(pool)
        k = None
        if depth is not None:
            try:
                k = int(depth)
            except ValueError:
                raise CommandError(f"--depth: {depth!r} is not a whole number.") from None
        try:
            if strategy is not None:
                queue.check_strategy(strategy)
            result = queue.build_queue(found, k, strategy)
        except queue.QueueError as exc:
            option = "--strategy" if "strategy" in str(exc) else "--depth"
            raise CommandError(f"{option}: {exc}") from None
        found.refresh_from_db()
        open_now = queue.open_pairs(found).count()
        self.stdout.write(
            f"{result.queued} pairs queued in pool {found.name} ({found.queue_strategy}, depth "
            f"{found.queue_depth}): {result.newly_queued} new, {open_now} still need grades, "
            f"{result.complete} already have their grades.\n"
        )

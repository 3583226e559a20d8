"""manage.py sample_queries --pool P --size N [--seed S] [--depth K]: the pool's random human sample."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from judgments.exchange.cli import get_pool
from judgments.rating import queue
from judgments.rating.sample import MAX_SEED, SampleError, draw_sample


def _seed(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_SEED:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Draw N of the pool's queries uniformly at random (with a recorded seed) as its human sample for "
        "prediction-powered estimates, queue every pair of those queries for the human raters ahead of "
        "the rest, and print the sampled query ids one per line. A new sample replaces the old one."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--size", required=True, type=int, help="how many queries to sample")
        parser.add_argument(
            "--seed", type=_seed, help=f"0 to {MAX_SEED} (default: a new random seed, recorded)"
        )
        parser.add_argument(
            "--depth",
            type=int,
            default=queue.DEFAULT_DEPTH,
            help=f"queue the top K of every current run for the sampled queries (default {queue.DEFAULT_DEPTH})",
        )

    def handle(self, *args, pool, size, seed, depth, **options):
        found = get_pool(pool)
        try:
            drawn = draw_sample(found, size, seed=seed, depth=depth)
        except (SampleError, queue.QueueError) as error:
            raise CommandError(str(error)) from None
        if drawn.replaced:
            self.stderr.write("The pool's previous human sample is replaced by this one.")
        q = drawn.queued
        self.stderr.write(
            f"Sampled {len(drawn.query_ids)} of {drawn.sample.population} queries of pool {found.name} "
            f"(seed {drawn.sample.seed}); {q.queued} pair{'s' if q.queued != 1 else ''} queued for the "
            f"human raters, {q.complete} already graded."
        )
        for external_id in drawn.query_ids:
            self.stdout.write(external_id)

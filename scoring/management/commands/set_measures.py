"""`manage.py set_measures --pool P MEASURE [MEASURE ...]`: replace the pool's measure set (names in
ir_measures syntax, e.g. nDCG@10 'P(rel=2)@5' ERR@20) and re-score every run with it; prints the canonical
names. `--default` goes back to today's fixed set. A bad name: one line on stderr, exit 1, nothing changed."""

from django.core.management.base import BaseCommand, CommandError

from judgments.exchange.cli import get_pool
from scoring.measure_sets import MeasureError, reset_measures, set_measures


class Command(BaseCommand):
    help = "Replace a pool's measure set (ir_measures names) and re-score it; prints the canonical names."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("measures", nargs="*", metavar="MEASURE", help="e.g. nDCG@10 'P(rel=2)@5' ERR@20")
        parser.add_argument("--default", action="store_true", help="go back to today's fixed set")

    def handle(self, *args, pool, measures, default, **options):
        found = get_pool(pool)
        if default:
            if measures:
                raise CommandError("give either --default or measures, not both")
            reset_measures(found)
            self.stdout.write(f"{pool}: today's fixed set")
            return
        if not measures:
            raise CommandError("give at least one measure, e.g. nDCG@10 'P(rel=2)@5' ERR@20 (or --default)")
        try:
            chosen, summary = set_measures(found, measures)
        except MeasureError as exc:
            raise CommandError(str(exc)) from None
        for measure in chosen:
            self.stdout.write(measure.name)
        if options["verbosity"] > 1:
            self.stderr.write(f"{pool}: {summary}")

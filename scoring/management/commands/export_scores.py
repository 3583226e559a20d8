"""`manage.py export_scores --pool P [--flavor F] [--format jsonl|csv] [--tag T ...] > scores.jsonl`

One row per (configuration, query, metric) of each configuration's current run, then one row per
(configuration, metric) with query "all": the mean over every graded query of the pool (a query the
run has no ranking for counts 0). `judged` is judged@k for a metric cut at k, and null (empty in CSV)
for mrr and ap, which look at the whole ranking. Values are not rounded. The lines are those of
`scoring.exports.score_lines`, which the web and API downloads serve too (here as bytes: PostgreSQL
formats most of them, see score_blocks).

`--tag T` (repeatable): only the queries carrying every tag given (a segment, scoring.segments), and the
"all" means over those queries only. A bad tag, or one no query of the pool carries, exits 1 with one line.
"""

from django.core.management.base import CommandError

from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks
from scoring.exports import SCORE_FORMATS, score_blocks
from scoring.flavours import DEFAULT_FLAVOUR, FLAVOURS


class Command(ExchangeCommand):
    help = (
        "Print the stored scores of each configuration's current run, per query and as means (query 'all')."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument(
            "--flavor",
            "--flavour",
            dest="flavor",
            default=DEFAULT_FLAVOUR,
            choices=[*FLAVOURS, "all"],
            help=f"NDCG flavour (default {DEFAULT_FLAVOUR}; 'all' for every flavour)",
        )
        parser.add_argument("--format", default="jsonl", choices=SCORE_FORMATS, help="output format")
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            help="only the queries with this tag, means over them (repeat: queries with every tag)",
        )

    def handle(self, *args, pool, flavor, format, tag, **options):
        found = get_pool(pool)
        flavours = list(FLAVOURS) if flavor == "all" else [flavor]
        segment = None
        if tag:
            from scoring import segments  # numpy's maths: only an export with --tag pays its start-up

            try:
                segment = segments.export_segment(found, tag)
            except segments.SegmentError as error:
                raise CommandError(f"--{error}") from None
        write_chunks(self, lambda: score_blocks(found, flavours, format, segment=segment), desc="scores")

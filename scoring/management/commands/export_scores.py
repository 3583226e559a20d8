"""`manage.py export_scores --pool P [--flavor F] [--format jsonl|csv] > scores.jsonl`

One row per (configuration, query, metric) of each configuration's current run, then one row per
(configuration, metric) with query "all": the mean over every graded query of the pool (a query the
run has no ranking for counts 0). `judged` is judged@k for a metric cut at k, and null (empty in CSV)
for mrr and ap, which look at the whole ranking. Values are not rounded. The lines are those of
`scoring.exports.score_lines`, which the web and API downloads serve too (here as bytes: PostgreSQL
formats most of them, see score_blocks).
"""

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

    def handle(self, *args, pool, flavor, format, **options):
        found = get_pool(pool)
        flavours = list(FLAVOURS) if flavor == "all" else [flavor]
        write_chunks(self, lambda: score_blocks(found, flavours, format), desc="scores")

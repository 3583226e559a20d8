from judgments.exchange import exports
from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks


class Command(ExchangeCommand):
    help = (
        "Print the pool's judgments: --format csv (Quepid's query,docid,rating with the combined grade), "
        "rater-csv (one column per rater) or jsonl (every judgment and final grade, every field)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--format", required=True, choices=exports.JUDGMENT_FORMATS)
        parser.add_argument(
            "--query-column",
            choices=exports.QUERY_COLUMNS,
            default="text",
            help="csv only: write the query text (Quepid's layout, the default) or the query id",
        )

    def handle(self, *args, pool, format, query_column, **options):
        found = get_pool(pool)
        extra = {"query_column": query_column} if format == "csv" else {}
        write_chunks(self, lambda: exports.judgments_lines(found, format, **extra), desc="judgments")

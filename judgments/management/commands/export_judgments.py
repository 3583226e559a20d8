from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks
from judgments.exchange.exports.files import JUDGMENT_FORMATS, QUERY_COLUMNS, RRE_SHAPES, judgments_lines


class Command(ExchangeCommand):
    help = (
        "Print the pool's judgments: --format csv (Quepid's query,docid,rating with the combined grade), "
        "rater-csv (one column per rater), jsonl (every judgment and final grade, every field), quepid-csv "
        "(Quepid's current export: ratings 3.0, unrated queries as query,,) or rre (RRE's ratings JSON)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--format", required=True, choices=JUDGMENT_FORMATS)
        parser.add_argument(
            "--query-column",
            choices=QUERY_COLUMNS,
            default="text",
            help="csv only: write the query text (Quepid's layout, the default) or the query id",
        )

        parser.add_argument("--index", help="rre only: the index name RRE queries (default: the pool name)")
        parser.add_argument(
            "--rre-shape",
            choices=RRE_SHAPES,
            default="grade",
            help='rre only: relevant documents keyed by grade {"3": [...]} (Quepid imports this; the default) '
            'or by document {"d1": {"gain": 3}} (Quepid\'s export)',
        )
        parser.add_argument(
            "--keep-zero",
            action="store_true",
            help="rre only: list grade-0 documents too (RRE counts them relevant)",
        )

    def handle(self, *args, pool, format, query_column, index, rre_shape, keep_zero, **options):
        found = get_pool(pool)
        extra = {"query_column": query_column} if format == "csv" else {}
        if format == "rre":
            extra = {"index": index, "shape": rre_shape, "keep_zero": keep_zero}
        write_chunks(self, lambda: judgments_lines(found, format, **extra), desc="judgments")

from judgments.exchange import exports
from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks


class Command(ExchangeCommand):
    help = "Print the pool's queries as TSV (qid<TAB>text) or JSON lines with the information need."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--format", choices=exports.QUERY_FORMATS, default="tsv")

    def handle(self, *args, pool, format, **options):
        found = get_pool(pool)
        total = found.queries.count()
        write_chunks(self, lambda: exports.queries_lines(found, format), total=total, desc="queries")

from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks
from judgments.exchange.exports.files import QUERY_FORMATS, queries_lines


class Command(ExchangeCommand):
    help = "Print the pool's queries as TSV (qid<TAB>text) or JSON lines with the information need."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--format", choices=QUERY_FORMATS, default="tsv")

    def handle(self, *args, pool, format, **options):
        found = get_pool(pool)
        total = found.queries.count()
        write_chunks(self, lambda: queries_lines(found, format), total=total, desc="queries")

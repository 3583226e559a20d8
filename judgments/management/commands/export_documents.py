from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks
from judgments.exchange.exports.files import documents_lines


class Command(ExchangeCommand):
    help = 'Print the pool\'s documents as JSON lines {"id", "title", "body", "url", ...extra fields}.'

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")

    def handle(self, *args, pool, **options):
        found = get_pool(pool)
        total = found.documents.count()
        write_chunks(self, lambda: documents_lines(found), total=total, desc="documents")

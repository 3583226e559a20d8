from django.db import transaction

from judgments.exchange.cli import ExchangeCommand, get_pool, input_lines, input_name
from judgments.exchange.cli import format_error as import_failed
from judgments.exchange.imports import import_queries
from judgments.problems import FormatError


class Command(ExchangeCommand):
    help = (
        "Import queries into a pool (created if missing): TSV 'qid<TAB>text' or JSON lines "
        '{"id", "text", "information_need"}. All or nothing.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name (created if missing)")
        parser.add_argument("file", help="queries file, or - for stdin")

    def handle(self, *args, pool, file, **options):
        try:
            with transaction.atomic():
                found = get_pool(pool, create=True)
                summary = import_queries(
                    found, input_lines(self, file, desc="queries")[0], name=input_name(file)
                )
        except FormatError as exc:
            raise import_failed(exc) from None
        self.stdout.write(str(summary))

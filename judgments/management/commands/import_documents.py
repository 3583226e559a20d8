from django.db import transaction

from judgments.exchange.cli import ExchangeCommand, format_error, get_or_create_pool, input_lines
from judgments.exchange.imports.documents import import_documents
from judgments.problems import FormatError


class Command(ExchangeCommand):
    help = (
        'Import documents from JSON lines {"id", "title", "body", "url", ...}: create new ones, replace the '
        "content of existing ones (other keys are kept as extra fields). All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name (created if missing)")
        parser.add_argument("file", help="JSON lines file, or - for stdin")

    def handle(self, *args, pool, file, **options):
        lines, name = input_lines(self, file, desc="documents")
        try:
            # One transaction: a refused file leaves no new pool behind either.
            with transaction.atomic():
                found, created = get_or_create_pool(pool)
                summary = import_documents(found, lines, name=name)
        except FormatError as exc:
            raise format_error(exc) from None
        if created:
            self.stderr.write(f"Created pool {found.name}")
        self.stdout.write(str(summary))

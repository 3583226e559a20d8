from django.core.management.base import CommandError
from django.db import transaction

from judgments.exchange.cli import ExchangeCommand, get_pool, get_user, input_lines, input_name
from judgments.exchange.cli import format_error as import_failed
from judgments.exchange.formats import parse_grade_map
from judgments.exchange.imports import import_qrels
from judgments.problems import FormatError


class Command(ExchangeCommand):
    help = (
        "Import TREC qrels 'qid iter docid grade' into a pool (created if missing) as one rater's judgments. "
        "Grades must be 0-4, or -1 (a distractor) in a pool with the distractor grade, unless --map-grades "
        "maps the others. All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name (created if missing)")
        parser.add_argument(
            "--rater",
            metavar="USERNAME",
            help="existing user the judgments are attributed to (default: a non-login account 'qrels:<file name>')",
        )
        parser.add_argument(
            "--map-grades",
            metavar="SPEC",
            help="translate grades, e.g. --map-grades=-2:0,-1:skip (a target is a grade 0-4, -1 or 'skip'; "
            "write it with '=' when it starts with '-')",
        )
        parser.add_argument("file", help="qrels file, or - for stdin")

    def handle(self, *args, pool, file, rater, map_grades, **options):
        grade_map = None
        if map_grades is not None:
            try:
                grade_map = parse_grade_map(map_grades)
            except ValueError as exc:
                raise CommandError(
                    f"--map-grades: {exc}. Write it as file grade:grade pairs, e.g. --map-grades=-2:0,-1:skip."
                ) from None
        user = None
        if rater is not None:
            user = get_user(
                rater, "--rater", instead=", or leave --rater out for an account named after the file"
            )
        try:
            with transaction.atomic():
                found = get_pool(pool, create=True)
                summary = import_qrels(
                    found,
                    input_lines(self, file, desc="qrels")[0],
                    name=input_name(file),
                    rater=user,
                    grade_map=grade_map,
                )
        except FormatError as exc:
            raise import_failed(exc) from None
        self.stdout.write(str(summary))

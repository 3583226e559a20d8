from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from judgments.exchange.cli import ExchangeCommand, format_error, get_or_create_pool, get_user, input_lines
from judgments.exchange.imports.judgments import FORMATS, import_judgments
from judgments.problems import FormatError


class Command(ExchangeCommand):
    help = (
        "Import judgments: --format csv (Quepid's query,docid,rating; queries matched by id or text), "
        "rater-csv (query_id,doc_id,<rater>... with grades, X = can't judge), jsonl (every field, "
        "timestamps and final grades) or rre (RRE's ratings JSON, either of Quepid's RRE shapes). Missing raters become non-login accounts. All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name (created if missing)")
        parser.add_argument("--format", choices=FORMATS, help="required unless --gold")
        parser.add_argument(
            "--gold",
            action="store_true",
            help="mark pairs of the pool gold with their known grade: lines 'qid docid grade' or TREC qrels",
        )
        parser.add_argument(
            "--rater",
            help="csv only: username the ratings belong to (default: non-login account ratings:<file>)",
        )
        parser.add_argument("--actor", help="username recorded in the judgment history (default: each rater)")
        parser.add_argument("file", help="the file, or - for stdin")

    def _rater(self, username):
        """The --rater account, created without a usable password if missing (inside the import)."""
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        if user is None:
            user = User(**{User.USERNAME_FIELD: username})
            user.set_unusable_password()
            user.save()
        return user

    def handle(self, *args, pool, format, rater, actor, file, gold, **options):
        if gold:
            return self._gold(pool, file, actor)
        if format is None:
            raise CommandError("--format is required (csv, rater-csv, jsonl or rre), unless --gold.")
        if rater and format not in ("csv", "rre"):
            raise CommandError(
                "--rater is for --format csv and rre; the other formats name their raters in the file: leave --rater out."
            )
        actor_user = (
            get_user(actor, "--actor", instead=", or leave --actor out to record each rater")
            if actor
            else None
        )
        lines, name = input_lines(self, file, desc="judgments")
        try:
            # One transaction: a refused file leaves no new pool or rater account behind either.
            with transaction.atomic():
                found, created = get_or_create_pool(pool)
                summary = import_judgments(
                    found,
                    lines,
                    format=format,
                    name=name,
                    rater=self._rater(rater) if rater else None,
                    actor=actor_user,
                )
        except FormatError as exc:
            raise format_error(exc) from None
        if created:
            self.stderr.write(f"Created pool {found.name}")
        self.stdout.write(str(summary))

    def _gold(self, pool, file, actor):
        from judgments import gold
        from judgments.exchange.cli import get_pool

        found = get_pool(pool)
        admin = get_user(actor, "--actor") if actor else None
        lines, _ = input_lines(self, file, desc="gold")
        try:
            marked = gold.mark_gold(found, gold.parse_gold_lines(lines), admin)
        except gold.GoldError as exc:
            raise CommandError("\n".join(exc.problems[:20])) from None
        self.stdout.write(f"Marked {marked} pair(s) of pool {found.name} gold.")

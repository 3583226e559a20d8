from judgments.exchange.cli import ExchangeCommand, get_pool, wants_progress, write_chunks
from judgments.exchange.exports.grades import combined_note, qrels_blocks
from judgments.models import Pair


class Command(ExchangeCommand):
    help = (
        "Print the pool's combined grades as plain TREC qrels (qid 0 docid grade), by query and doc id. "
        "The pool's rule combines raters; a final grade wins; grades are rounded half up unless --exact."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument(
            "--exact", action="store_true", help="print fractional combined grades as they are"
        )

    def handle(self, *args, pool, exact, **options):
        found = get_pool(pool)
        rounding = "exact" if exact else "round"
        progress = wants_progress(self)
        total = Pair.objects.in_pool(found).count() if progress else None
        write_chunks(self, lambda: qrels_blocks(found, rounding=rounding), total=total, desc="qrels")
        if progress:
            self.stderr.write(combined_note(found, rounding))

from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks
from judgments.exchange.exports.grades import ranklib_lines


class Command(ExchangeCommand):
    help = (
        "Print the pool's combined grades as RankLib/LTR label lines (grade qid:N # docid query), with "
        "a # header naming the combining rule, the scale and the query numbers."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--exact", action="store_true", help="fractional combined grades as they are")

    def handle(self, *args, pool, exact, **options):
        found = get_pool(pool)
        write_chunks(
            self, lambda: ranklib_lines(found, rounding="exact" if exact else "round"), desc="ranklib"
        )

from django.core.management.base import CommandError

from judgments.exchange.cli import ExchangeCommand, get_pool, write_chunks
from judgments.exchange.exports.runs import run_chunks
from judgments.models import Run


class Command(ExchangeCommand):
    help = (
        "Print a configuration's run as a TREC run (qid Q0 docid rank score tag; scores strictly decreasing "
        "so trec_eval keeps the stored order). The newest run unless --run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--configuration", required=True, help="configuration name")
        parser.add_argument("--run", type=int, help="run id (default: the configuration's newest run)")

    def handle(self, *args, pool, configuration, run, **options):
        found = get_pool(pool)
        config = found.configurations.filter(name=configuration).first()
        if config is None:
            names = list(found.configurations.order_by("name").values_list("name", flat=True))
            known = f"its configurations are {', '.join(names[:10])}" if names else "it has none yet"
            raise CommandError(
                f"Pool {found.name} has no configuration named {configuration!r}: {known}. "
                "Check --configuration (import_run creates a configuration with its first run)."
            )
        runs = Run.objects.filter(configuration=config).select_related("configuration__pool")
        chosen = runs.filter(pk=run).first() if run else runs.order_by("-id").first()
        if chosen is None:
            ids = list(runs.order_by("-id").values_list("pk", flat=True)[:10])
            if ids:
                raise CommandError(
                    f"Configuration {config.name} has no run {run}: its runs are {', '.join(map(str, ids))}. "
                    "Check --run, or leave it out for the newest run."
                )
            raise CommandError(f"Configuration {config.name} has no run yet: import one with import_run.")
        write_chunks(self, lambda: run_chunks(chosen), total=None, desc="run")

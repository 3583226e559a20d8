from django.core.management.base import CommandError
from django.db import transaction
from django.db.models import Count, F, Func, Sum

from judgments.exchange.cli import ExchangeCommand, check_name, get_pool, input_lines, input_name
from judgments.exchange.cli import format_error as import_failed
from judgments.exchange.imports import import_run
from judgments.models import SearchConfiguration, Team
from judgments.problems import FormatError
from judgments.words import counted

DEFAULT_TEAM = "default"


class Command(ExchangeCommand):
    help = (
        "Import a TREC run 'qid Q0 docid rank score tag' as a new run of a configuration (the pool, the "
        "configuration and its team are created if missing). All or nothing; the run is scored at once."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name (created if missing)")
        parser.add_argument("--configuration", required=True, help="configuration name (created if missing)")
        parser.add_argument(
            "--order",
            choices=["score", "rank"],
            default="score",
            help="score: trec_eval's order (score descending, ties by docid descending; the rank column is "
            "ignored); rank: the rank column (default: score)",
        )
        parser.add_argument(
            "--team",
            help=f"team of a new configuration (created if missing; default {DEFAULT_TEAM!r}); "
            "for an existing configuration it must be its team",
        )
        parser.add_argument("file", help="run file, or - for stdin")

    def handle(self, *args, pool, configuration, order, team, file, **options):
        check_name(configuration, "configuration")
        try:
            with transaction.atomic():
                found = get_pool(pool, create=True)
                config = (
                    SearchConfiguration.objects.filter(pool=found, name=configuration)
                    .select_related("team")
                    .first()
                )
                if config is None:
                    owner, _ = Team.objects.get_or_create(name=team or DEFAULT_TEAM)
                    config = SearchConfiguration.objects.create(pool=found, team=owner, name=configuration)
                elif team is not None and config.team.name != team:
                    raise CommandError(
                        f"Configuration {configuration} belongs to team {config.team.name}, not {team}: leave "
                        f"--team out to add a run to it, or name a new configuration for team {team}."
                    )
                run = import_run(
                    config, input_lines(self, file, desc="run")[0], name=input_name(file), order=order
                )
                queries, entries = run.rankings.aggregate(
                    queries=Count("id"), entries=Sum(Func(F("doc_ids"), function="cardinality"))
                ).values()
        except FormatError as exc:
            raise import_failed(exc) from None
        self.stdout.write(
            f"{input_name(file)}: run {run.pk} of {config.name} (tag {run.tag}): {counted(queries, 'query')}, {counted(entries, 'document')}"
        )

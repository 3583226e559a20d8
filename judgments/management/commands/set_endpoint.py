import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from judgments.capture import services
from judgments.endpoints.engines import AUTH_KINDS, KINDS, EndpointError
from judgments.exchange.cli import check_name, get_pool
from judgments.models import SearchConfiguration, Team
from judgments.models.capture import MAX_DEPTH, Schedule

DEFAULT_TEAM = "default"


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise CommandError(f'--header wants "Name: value", not {text!r}')
    return name.strip(), value.strip()


class Command(BaseCommand):
    help = (
        "Set the search endpoint of a configuration (a new version; earlier versions are kept). Creates the "
        "configuration and its team if missing. Without --template, elasticsearch/opensearch get a "
        "multi_match over title and body with size={{depth}}, solr q={{query}}&rows={{depth}}&fl=id,score. "
        "Secrets: prefer --secret-env NAME (the secret stays in the environment); --secret-stdin stores it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name (must exist)")
        parser.add_argument("--configuration", required=True, help="configuration name (created if missing)")
        parser.add_argument(
            "--team", help=f"team of a new configuration (created if missing; default {DEFAULT_TEAM!r})"
        )
        parser.add_argument("--kind", required=True, choices=KINDS)
        parser.add_argument("--url", required=True, help="e.g. http://localhost:9200/products/_search")
        parser.add_argument("--method", choices=["GET", "POST"], help="default: the kind's (json: POST)")
        parser.add_argument(
            "--template",
            metavar="FILE",
            help="request template file, - for stdin: a JSON body, or URL parameters (solr, json GET); "
            "placeholders {{query}}, {{query_id}}, {{depth}}",
        )
        parser.add_argument("--hits", metavar="PATH", default="", help="path to the list of hits (json)")
        parser.add_argument("--id-field", default="", help="id of a hit: a dotted path or JMESPath")
        parser.add_argument("--score-field", default="", help="score of a hit (optional)")
        parser.add_argument(
            "--header",
            action="append",
            default=[],
            metavar='"Name: value"',
            help="an HTTP header (repeatable)",
        )
        parser.add_argument("--auth", choices=[*AUTH_KINDS, "none"], help="authentication (default: none)")
        parser.add_argument("--user", default="", help="user name (basic auth)")
        parser.add_argument(
            "--secret-env", default="", metavar="NAME", help="environment variable holding the secret"
        )
        parser.add_argument(
            "--secret-stdin", action="store_true", help="read the secret from stdin and store it (write-only)"
        )
        parser.add_argument("--auth-header", default="", help="apikey: send the key in this header")
        parser.add_argument(
            "--depth", type=int, help=f"documents kept per query, 1-{MAX_DEPTH} (default 100)"
        )
        parser.add_argument("--schedule", choices=Schedule.values, help="capture_due's schedule")

    def handle(self, *args, **o):
        check_name(o["configuration"], "configuration")
        if o["team"] is not None:
            check_name(o["team"], "team")
        template = self._template(o["template"])
        secret = None
        if o["secret_stdin"]:
            if o["secret_env"]:
                raise CommandError("give the secret either by --secret-env or by --secret-stdin, not both")
            secret = sys.stdin.readline().strip()
            if not secret:
                raise CommandError("--secret-stdin: stdin gave no secret")
        auth = "" if o["auth"] in (None, "none") else o["auth"]
        try:
            with transaction.atomic():
                pool = get_pool(o["pool"])
                config, created = self._configuration(pool, o["configuration"], o["team"])
                endpoint, changed = services.set_endpoint(
                    config,
                    kind=o["kind"],
                    url=o["url"],
                    method=o["method"] or "",
                    template=template,
                    hits_path=o["hits"],
                    id_field=o["id_field"],
                    score_field=o["score_field"],
                    headers=[_header(h) for h in o["header"]],
                    auth_kind=auth,
                    auth_user=o["user"],
                    auth_secret=secret if auth else "",
                    auth_secret_env=o["secret_env"],
                    auth_header=o["auth_header"],
                    depth=o["depth"],
                )
                if o["schedule"]:
                    services.set_schedule(config, o["schedule"])
        except (EndpointError, services.CaptureError) as exc:
            raise CommandError(f"The endpoint was not stored: {exc}") from None
        if created:
            self.stderr.write(
                f"Created configuration {config.name} (team {config.team.name}) in pool {pool.name}"
            )
        state = "stored" if changed else "unchanged"
        self.stdout.write(f"{pool.name}/{config.name}: endpoint version {endpoint.version} {state}")
        for name, value in endpoint.public().items():
            if value not in ("", [], None):
                text = str(value).replace("\n", "\n    ")
                self.stdout.write(f"  {name}: {text}")
        self.stdout.write(f"  schedule: {config.capture_schedule}")

    def _template(self, path: str | None) -> str:
        if path is None:
            return ""
        if path == "-":
            return sys.stdin.read()
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read the template {path}: {exc}") from None

    def _configuration(self, pool, name: str, team: str | None) -> tuple[SearchConfiguration, bool]:
        config = SearchConfiguration.objects.filter(pool=pool, name=name).select_related("team").first()
        if config is not None:
            if team is not None and config.team.name != team:
                raise CommandError(f"Configuration {name} belongs to team {config.team.name}, not {team}")
            return config, False
        owner, _ = Team.objects.get_or_create(name=team or DEFAULT_TEAM)
        return SearchConfiguration.objects.create(pool=pool, team=owner, name=name), True

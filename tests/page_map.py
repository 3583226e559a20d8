"""Every page of the URL map, filled in with one pool's objects: what `bench_pages` times and
`tests/test_page_queries.py` pins, as each role.

The map is Django's own (config/urls.py), walked: a page added tomorrow is loaded too, and a route whose
parameter this module cannot fill fails loudly (`MissingObject`) rather than being left out quietly.
The REST API, Django admin, downloads and POST-only routes are not pages (they are listed as skipped).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.urls import URLPattern, URLResolver, get_resolver, reverse

# Not pages: the REST API and Django admin (namespaces), and routes that answer with a file or only to POST.
SKIPPED_NAMESPACES = ("admin", "api")
SKIPPED_NAMES = {
    "healthz",
    "login",
    "logout",
    "campaign:set-password",  # opened by a new rater from a one-time link, logged out
    "campaign:guidelines-preview",
    "scoring:leaderboard-csv",
    "scoring:compare-csv",
    "scoring:scores-download",
    "scoring:run-scores",
    "scoring:configuration-history-csv",
    "exchange:export-download",
    "exchange:run-download",
    "scoring:live-tune",  # POST only: the tuning form of the try-a-query page
    "capture:endpoint-restore",  # POST only: the history page's Restore buttons
}


class MissingObject(Exception):
    """The pool has no object to fill a route's parameter with."""


@dataclass(frozen=True)
class Page:
    name: str  # the URL name, namespaced
    url: str


def routes() -> list[tuple[str, list[str]]]:
    """(namespaced URL name, its parameter names) of every named route, REST API and admin left out."""
    found: list[tuple[str, list[str]]] = []

    def walk(patterns, namespace: str, params: list[str]) -> None:
        for pattern in patterns:
            names = params + list(pattern.pattern.converters)
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace or ""
                if inner in SKIPPED_NAMESPACES:
                    continue
                walk(pattern.url_patterns, f"{namespace}{inner}:" if inner else namespace, names)
            elif isinstance(pattern, URLPattern) and pattern.name:
                found.append((f"{namespace}{pattern.name}", names))

    walk(get_resolver().url_patterns, "", [])
    return sorted(set((name, tuple(params)) for name, params in found if name not in SKIPPED_NAMES))


def objects_of(pool) -> dict:
    """One object of each kind in `pool`, for the routes' parameters (None where the pool has none)."""
    from django.apps import apps

    from judgments.models import ModelJudge, Pair, SearchConfiguration, Upload

    CaptureJob = apps.get_model("judgments", "CaptureJob")  # wherever the capture wing keeps it

    configurations = list(
        SearchConfiguration.objects.filter(pool=pool).exclude(runs=None).order_by("name")[:3]
    )
    configuration = configurations[0] if configurations else None
    pair = Pair.objects.filter(pool=pool, queued_at__isnull=False).order_by("id").first()
    query = pool.queries.order_by("id").first()
    judge = ModelJudge.objects.filter(pool=pool).select_related("user").order_by("id").first()
    rater = pool.members.filter(groups__name="rater").order_by("id").first()
    return {
        "pool_name": pool.name,
        "configurations": [c.name for c in configurations],
        "configuration_id": configuration.pk if configuration else None,
        "team_id": configuration.team_id if configuration else None,
        "run_id": configuration.runs.order_by("-id").values_list("pk", flat=True).first()
        if configuration
        else None,
        "pair_id": pair.pk if pair else None,
        "query": query.external_id if query else None,
        "name": judge.user.username if judge else None,
        "judge_run_id": judge.runs.order_by("-id").values_list("pk", flat=True).first() if judge else None,
        "user_id": rater.pk if rater else None,
        "job_id": CaptureJob.objects.filter(configuration__pool=pool).values_list("pk", flat=True).first(),
        "upload_id": Upload.objects.filter(pool=pool).values_list("pk", flat=True).first(),
    }


# GET parameters a page needs to show what it is for (two or three configurations to compare, a query).
def _extra(name: str, objects: dict) -> list[str]:
    c = objects["configurations"]
    if name == "scoring:compare":
        return ["?" + urlencode([("c", n) for n in c[:2]]), "?" + urlencode([("c", n) for n in c[:3]])]
    if name == "scoring:compare-query":
        return ["?" + urlencode([*(("c", n) for n in c[:2]), ("q", objects["query"] or "")])]
    return [""]


def pages(pool, *, missing: list | None = None) -> list[Page]:
    """Every page of the URL map for `pool`. A route whose object the pool lacks raises MissingObject,
    unless `missing` is a list: then its name is added there."""
    objects = objects_of(pool)
    found = []
    for name, params in routes():
        args = []
        for param in params:
            # A model judge's runs are its own (judges:run-status), not a configuration's.
            key = "judge_run_id" if param == "run_id" and name.startswith("judges:") else param
            value = objects.get(key)
            if value is None:
                if missing is None:
                    raise MissingObject(f"{name}: pool {pool.name} has no object for <{param}>")
                missing.append(name)
                break
            args.append(value)
        else:
            base = reverse(name, args=args)
            found.extend(Page(name, base + extra) for extra in _extra(name, objects))
    return found

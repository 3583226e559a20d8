"""The one tab bar of a pool's pages (base.html shows it on every page whose context has a `pool`).

Each tab names who may use it and which pages it stands for; a role sees only its tabs, and the tab of
the page shown is marked. Tabs are URL names only: the core imports no wing.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import template
from django.urls import reverse

from judgments import access
from judgments.models import Pool

register = template.Library()

RATER_MEMBER, ENGINEER, ADMIN, ANYONE = "rater", "engineer", "admin", "anyone"


@dataclass(frozen=True)
class Tab:
    label: str
    url_name: str
    who: str
    # The pages (view names, or namespace prefixes ending in ":") that mark this tab as the current one.
    pages: tuple[str, ...] = ()
    engineer_label: str = ""  # the label for engineers who are not admins, where it differs


TABS = (
    Tab("Overview", "judgments:pool-detail", ANYONE),
    Tab("Grade", "rating:grade", RATER_MEMBER, ("rating:grade-pair", "rating:review-skipped")),
    Tab("My judgments", "rating:my-judgments", RATER_MEMBER),
    Tab(
        "Configurations",
        "judgments:configuration-list",
        ENGINEER,
        (
            "judgments:configuration-detail",
            "judgments:run-detail",
            "capture:",
            "exchange:configuration-new",
            "scoring:configuration-history",
            "scoring:live-query",
        ),
    ),
    Tab("Leaderboard", "scoring:leaderboard", ENGINEER, ("scoring:compare", "scoring:compare-query")),
    Tab("Import", "exchange:import", ENGINEER, ("exchange:import-preview",), engineer_label="Upload a run"),
    Tab("Export", "exchange:export", ENGINEER),
    Tab("Webhooks", "scoring:webhooks", ENGINEER),
    Tab("Queue", "rating:queue", ADMIN, ("rating:missing-content",)),
    Tab("Gold pairs", "rating:gold", ADMIN),
    Tab("Agreement", "rating:agreement", ADMIN, ("rating:rater-quality",)),
    Tab("Disagreements", "rating:disagreements", ADMIN),
    Tab("Model judges", "judges:list", ADMIN, ("judges:", "scoring:trust")),
    Tab("People", "campaign:people", ADMIN),
    Tab("Queries", "campaign:queries", ADMIN),
    Tab("Settings", "campaign:pool-edit", ADMIN),
)


def _rates_in(request, pool: Pool) -> bool:
    """Whether the user grades this pool (one query, remembered for the request)."""
    cache = request.__dict__.setdefault("_rates_in", {})
    if pool.pk not in cache:
        cache[pool.pk] = access.rating_pools_for(request.user).filter(pk=pool.pk).exists()
    return cache[pool.pk]


def visible_tabs(request, pool: Pool) -> list[Tab]:
    """The tabs of `pool` the request's user may use, in order."""
    user = request.user
    allowed = {ANYONE}
    if access.is_admin(user):
        allowed |= {ENGINEER, ADMIN}
    elif access.is_engineer(user):
        allowed.add(ENGINEER)
    if access.is_rater(user) and _rates_in(request, pool):
        allowed.add(RATER_MEMBER)
    return [tab for tab in TABS if tab.who in allowed]


def _is_current(tab: Tab, view_name: str) -> bool:
    return view_name == tab.url_name or any(
        view_name.startswith(page) if page.endswith(":") else view_name == page for page in tab.pages
    )


@register.inclusion_tag("_pool_tabs.html", takes_context=True)
def pool_tabs(context) -> dict:
    request, pool = context.get("request"), context.get("pool")
    if request is None or not isinstance(pool, Pool) or pool.pk is None:
        return {"tabs": []}
    match = getattr(request, "resolver_match", None)
    view_name = match.view_name if match else ""
    engineer_only = not access.is_admin(request.user)
    tabs = [
        {
            "label": (tab.engineer_label if engineer_only and tab.engineer_label else tab.label),
            "url": reverse(tab.url_name, args=[pool.name]),
            "current": _is_current(tab, view_name),
        }
        for tab in visible_tabs(request, pool)
    ]
    return {"tabs": tabs, "pool": pool}

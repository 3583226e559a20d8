"""What every scoring page shares: the pool whose scores the user may see, the configurations picked
with ?c=, options read from the query string (unknown ones fall back with a message), flavour links."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest

from judgments import access
from judgments.models import Pool, SearchConfiguration

from .. import comparison, flavours
from ..comparison import ComparisonError


def scored_pool_or_404(request: HttpRequest, pool_name: str) -> Pool:
    """The pool if the user may see its scores (engineers of the pool, admins), else 404."""
    return access.get_pool_or_404(request.user, access.scored_pools_for, name=pool_name)


def selected_configurations(request: HttpRequest, pool: Pool) -> list[SearchConfiguration]:
    """The configurations named by ?c=...&c=... in that order (duplicates dropped); 404 for an unknown name."""
    names = list(dict.fromkeys(name for name in request.GET.getlist("c") if name))
    found = {c.name: c for c in access.configurations_for(request.user).filter(pool=pool, name__in=names)}
    unknown = [name for name in names if name not in found]
    if unknown:
        raise Http404(f"No configuration named {unknown[0]!r} in this pool")
    return [found[name] for name in names]


def get_option(request: HttpRequest, name: str, check, *, warn: bool = True) -> str:
    """A validated GET option; an unknown value falls back to the default with a warning."""
    value = flavours.flavour_param(request.GET) if name in flavours.FLAVOUR_PARAMS else request.GET.get(name)
    try:
        return check(value)
    except ComparisonError as error:
        if warn:
            messages.warning(request, f"{error} Showing the default.")
        return check(None)


def query_string(**params) -> str:
    pairs = []
    for key, value in params.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item not in (None, ""):
                pairs.append((key, item))
    return "?" + urlencode(pairs)


def flavour_links(request: HttpRequest, flavour: str) -> list[dict]:
    links = []
    for name, description in comparison.flavour_descriptions():
        params = request.GET.copy()
        params["flavour"] = name
        links.append(
            {
                "name": name,
                "description": description,
                "url": "?" + params.urlencode(),
                "active": name == flavour,
            }
        )
    return links

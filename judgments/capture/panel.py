"""The configuration page's endpoint panel and endpoint history, as inclusion tags (the template library
`capture`, registered in settings.TEMPLATES), so the core's configuration page needs no capture view:
`{% load capture %}` ... `{% capture_panel configuration can_manage %}` ... `{% endpoint_history configuration %}`.
"""

from __future__ import annotations

from django import template
from django.db.models import Count

from judgments.models import SearchConfiguration

from .forms import CaptureForm

RECENT_CAPTURES = 10

register = template.Library()


def _versions(configuration: SearchConfiguration) -> list:
    return list(
        configuration.endpoints.select_related("created_by")
        .annotate(n_runs=Count("runs"))
        .order_by("-version")
    )


def panel_context(configuration: SearchConfiguration) -> dict:
    """What the configuration page shows about its endpoint and captures."""
    versions = _versions(configuration)
    endpoint = versions[0] if versions else None
    captures = list(
        configuration.captures.select_related("run", "endpoint", "requested_by")[:RECENT_CAPTURES]
    )
    active = next((job for job in captures if job.active), None)
    form = CaptureForm(initial={"depth": endpoint.depth}) if endpoint else None
    return {
        "endpoint": endpoint,
        "endpoint_versions": versions,
        "captures": captures,
        "active_capture": active,
        "capture_form": form,
    }


@register.inclusion_tag("capture/_panel.html", takes_context=True)
def capture_panel(context, configuration: SearchConfiguration, can_manage: bool) -> dict:
    """The endpoint, the Capture button and the recent captures."""
    return {
        **context.flatten(),
        "configuration": configuration,
        "can_manage": can_manage,
        **panel_context(configuration),
    }


@register.inclusion_tag("capture/_history.html", takes_context=True)
def endpoint_history(context, configuration: SearchConfiguration) -> dict:
    """Every version of the endpoint, with the runs captured with it."""
    return {
        **context.flatten(),
        "configuration": configuration,
        "endpoint_versions": _versions(configuration),
    }

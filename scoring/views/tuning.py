"""Tune without saving (try a query, Quepid's loop): the engineer edits the endpoint's template, runs the
query against the saved endpoint and the edit side by side, and sees both lists with the pool's grades,
their NDCG@10 and what moved; "Save as new version" keeps the edit (a new endpoint version, the old one
stays). Nothing is stored until then. Who: the configuration's team and admins, as for try a query.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from judgments import access
from judgments.capture import services as capture
from judgments.endpoints.engines import EXPLAINS, EndpointError, EndpointSpec
from judgments.models import SearchConfiguration

from .. import metrics
from ..live import CUTOFF, DEPTHS, MANAGE, LiveResult, depth_of, live_query, pool_query


@dataclass
class Moves:
    """What changed from the saved endpoint's list to the edited one's."""

    entered: list[str]  # in the edited top, not in the saved one
    left: list[str]  # in the saved top, not in the edited one
    up: int
    down: int
    delta: float | None  # NDCG@10, edited minus saved (None: no grades)


def edited_spec(configuration: SearchConfiguration, template: str) -> tuple[EndpointSpec, dict]:
    """The current endpoint with its template replaced, and the fields `set_endpoint` would save.
    EndpointError if the edit cannot be used (the message names where)."""
    current = configuration.endpoint
    fields = current.definition()
    fields.pop("depth")
    fields["template"] = template
    return capture.draft_spec(current, **fields), fields


def compare(saved: LiveResult, edited: LiveResult) -> Moves:
    before = {d.doc_id: d.rank for d in saved.documents}
    for d in edited.documents:
        d.was = before.get(d.doc_id)
    after = {d.doc_id for d in edited.documents}
    moved = [d.moved_since for d in edited.documents if d.moved_since]
    delta = None
    if saved.ndcg is not None and edited.ndcg is not None:
        delta = edited.ndcg - saved.ndcg
    return Moves(
        entered=[d.doc_id for d in edited.documents if d.was is None],
        left=[d.doc_id for d in saved.documents if d.doc_id not in after],
        up=sum(1 for m in moved if m > 0),
        down=sum(1 for m in moved if m < 0),
        delta=delta,
    )


@require_POST
def tune(request: HttpRequest, configuration_id: int) -> HttpResponse:
    """POST q or query, depth, template, explain; action "run" (side by side) or "save"."""
    configuration = access.configuration_or_404(request, configuration_id, manage=MANAGE)
    back = reverse("scoring:live-query", args=[configuration.pk])
    current = configuration.endpoint
    if current is None:
        messages.error(request, f"{configuration.name} has no search endpoint to tune.")
        return redirect(back)
    pool = configuration.pool
    query_id = request.POST.get("query", "").strip()
    text = request.POST.get("q", "")
    query = pool_query(configuration, query_id, text)
    if query is not None and query_id:
        text = query.text
    depth = depth_of(request.POST.get("depth"))
    explain = bool(request.POST.get("explain"))
    template = request.POST.get("template", "")
    error = None
    try:
        spec, fields = edited_spec(configuration, template)
    except EndpointError as exc:
        error = f"The edited template cannot be used: {exc}"
    if error is None and request.POST.get("action") == "save":
        endpoint, changed = capture.set_endpoint(
            configuration, depth=current.depth, user=request.user, **fields
        )
        messages.success(
            request,
            f"Saved as endpoint version {endpoint.version}; version {current.version} is kept."
            if changed
            else f"The template is unchanged: still version {endpoint.version}.",
        )
        keep = {"depth": depth, **({"query": query.external_id} if query else {"q": text})}
        return redirect(f"{back}?{urlencode(keep)}")
    saved = edited = moves = None
    if text.strip():
        saved = live_query(configuration, text, query, depth, explain=explain)
        if error is None:
            edited = live_query(configuration, text, query, depth, spec=spec, explain=explain)
            moves = compare(saved, edited) if not (saved.error or edited.error) else None
    elif error is None:
        error = "Type a query or pick one of the pool's."
    return render(
        request,
        "scoring/tune.html",
        {
            "configuration": configuration,
            "pool": pool,
            "endpoint": current,
            "template": template,
            "text": text,
            "picked": query.external_id if query else "",
            "depth": depth,
            "depths": DEPTHS,
            "explain": explain,
            "explains": EXPLAINS.get(current.kind, ""),
            "saved": saved,
            "saved_title": f"Saved (v{current.version})",
            "edited": edited,
            "moves": moves,
            "error": error,
            "cutoff": CUTOFF,
            "flavour": metrics.DEFAULT_FLAVOUR,
            "grade_scale": pool.grade_scale,
        },
    )

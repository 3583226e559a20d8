"""The try-a-query page: the engine's answer now, scored against the pool's grades (scoring.live asks
the engine), and queueing what it brought up for rating."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from judgments import access, pool_keys, services
from judgments.models import Query
from judgments.rating import queue

from .. import metrics
from ..live import CUTOFF, DEPTHS, MANAGE, MAX_QUEUED, depth_of, explains, live_query, pool_query


def live(request: HttpRequest, configuration_id: int) -> HttpResponse:
    """GET ?q=text or ?query=<pool query id> [&depth=10|20]: the engine's answer now."""
    configuration = access.configuration_or_404(request, configuration_id, manage=MANAGE)
    pool = configuration.pool
    query_id = request.GET.get("query", "").strip()
    text = request.GET.get("q", "")
    depth = depth_of(request.GET.get("depth"))
    query = pool_query(configuration, query_id, text)
    if query_id and query is None:
        messages.warning(request, f"Pool {pool.name} has no query {query_id!r}.")
    if query is not None and query_id:
        text = query.text
    explain = bool(request.GET.get("explain"))
    result = live_query(configuration, text, query, depth, explain=explain) if text.strip() else None
    return render(
        request,
        "scoring/live.html",
        {
            "configuration": configuration,
            "pool": pool,
            "queries": Query.objects.filter(pool=pool).exclude(text="").order_by("external_id")[:1000],
            "text": text,
            "picked": query.external_id if query else "",
            "depth": depth,
            "depths": DEPTHS,
            "result": result,
            "flavour": metrics.DEFAULT_FLAVOUR,
            "cutoff": CUTOFF,
            "can_queue": access.may_queue(request.user, pool),
            "grade_scale": pool.grade_scale,
            "explain": explain,
            "explains": explains(configuration),
        },
    )


@require_POST
def live_queue(request: HttpRequest, configuration_id: int) -> HttpResponse:
    """Queue the posted unjudged documents of a live list for rating (the query must be the pool's)."""
    configuration = access.configuration_or_404(request, configuration_id, manage=MANAGE)
    pool = configuration.pool
    if not access.may_queue(request.user, pool):
        raise PermissionDenied("You may not send documents to this pool's raters.")
    query = Query.objects.filter(pool=pool, external_id=request.POST.get("query", "")).first()
    doc_ids = [d for d in dict.fromkeys(request.POST.getlist("doc")) if d][:MAX_QUEUED]
    back = reverse("scoring:live-query", args=[configuration.pk])
    if query is None or not doc_ids:
        messages.error(request, "Pick a query of the pool and at least one document to queue.")
        return redirect(back)
    problems = services.validate_rankings({query.external_id: doc_ids})
    if problems:
        messages.error(request, f"Nothing was queued: {problems[0][1]}.")
    else:
        try:
            with transaction.atomic():
                pool_keys.ensure_documents(pool, doc_ids)  # a document new to the pool waits for its content
                done = queue.add_pairs(pool, [(query.external_id, d) for d in doc_ids])
        except queue.QueueError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, done.message(of=f" of {query.external_id}"))
    return redirect(
        f"{back}?{urlencode({'query': query.external_id, 'depth': depth_of(request.POST.get('depth'))})}"
    )

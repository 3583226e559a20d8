"""The judging queue's "Pooling per configuration" panel (loaded by the queue page after it renders):
each configuration's current run with its judged@k, the share of its top k that has a grade, averaged
over the queries it ranks, read from the stored totals (scoring.totals). Counting the pairs of 50
configurations' top k against the pool's grades took 48 s on the realistic pool."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from judgments import access

from ..leaderboard import pool_means
from ..metrics import CUTOFFS

DEFAULT_K = 10


@access.require(access.is_admin)
@require_GET
def queue_coverage(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    try:
        wanted = int(request.GET.get("k", DEFAULT_K))
    except ValueError:
        wanted = DEFAULT_K
    k = min(CUTOFFS, key=lambda cutoff: (abs(cutoff - wanted), cutoff))  # the nearest stored cutoff
    metric = f"judged@{k}"
    rows = [
        {
            "configuration": row.configuration,
            "run_created_at": row.run_created_at,
            "judged": row.judged(metric) if row.current else None,
            "ranked": row.current.n_queries - row.current.n_unranked if row.current else None,
        }
        for row in pool_means(found, "exp", metrics=())
        if row.run_id is not None
    ]
    return render(
        request,
        "scoring/_queue_coverage.html",
        {"pool": found, "k": k, "wanted": wanted, "cutoffs": CUTOFFS, "rows": rows},
    )

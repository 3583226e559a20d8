"""Pages shared by every role: the home page and a pool's overview."""

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from . import access
from .models import Document, Judgment, Pair, Query


@login_not_required
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness and database check for load balancers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    pools = access.pools_for(user).annotate(
        n_queries=Count("queries", distinct=True),
        n_configurations=Count("configurations", distinct=True),
    )
    rating = set(access.rating_pools_for(user).values_list("pk", flat=True)) if access.is_rater(user) else set()
    rows = []
    for pool in pools:
        mine = Judgment.objects.filter(pair__pool=pool, rater=user).count() if pool.pk in rating else None
        rows.append({"pool": pool, "rates": pool.pk in rating, "my_judgments": mine})
    return render(request, "judgments/home.html", {"rows": rows})


def pool_detail(request: HttpRequest, pool: str) -> HttpResponse:
    found = access.get_pool_or_404(request.user, access.pools_for, name=pool)
    pairs = Pair.objects.in_pool(found)
    stats = {
        "queries": Query.objects.filter(pool=found).count(),
        "documents": Document.objects.filter(pool=found).count(),
        "documents_without_content": Document.objects.filter(pool=found).without_content().count(),
        "pairs": pairs.count(),
        "queued": pairs.queued().count(),
        "judgments": Judgment.objects.in_pool(found).aggregate(
            graded=Count("id", filter=Q(cant_judge=False)), cant=Count("id", filter=Q(cant_judge=True))
        ),
    }
    configurations = None
    if access.is_engineer(request.user):
        configurations = found.configurations.select_related("team").annotate(n_runs=Count("runs"))
    return render(
        request,
        "judgments/pool_detail.html",
        {"pool": found, "stats": stats, "configurations": configurations},
    )

"""Pages shared by every role: the home page, a pool's overview, configurations and runs (the login page and
its lockout: judgments.login)."""

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.db.models import Count, Exists, Max, OuterRef
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from . import access, tallies
from .counts import count_of
from .keyset import keyset_page
from .models import Document, Pool, Query, Ranking, SearchConfiguration


@login_not_required
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness and database check for load balancers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def home(request: HttpRequest) -> HttpResponse:
    """The user's pools, one compact row each: the pool's own tab bar leads on from there."""
    user = request.user
    pool = OuterRef("pk")
    pools = (
        access.pools_for(user)
        .filter(archived_at__isnull=True)
        .annotate(
            # One subquery per count: joined, queries x configurations rows per pool.
            n_queries=count_of(Query.objects.filter(pool=pool)),
            n_configurations=count_of(SearchConfiguration.objects.filter(pool=pool)),
        )
    )
    if access.is_rater(user):
        pools = pools.annotate(
            rates=Exists(access.rating_pools_for(user).filter(pk=pool)),
            my_judgments=tallies.judgments_of(user),
        )
    archived = (
        list(Pool.objects.filter(archived_at__isnull=False).order_by("name")) if access.is_admin(user) else []
    )
    return render(request, "judgments/home.html", {"pools": pools, "archived_pools": archived})


def pool_detail(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.get_pool_or_404(request.user, access.pools_for, name=pool_name)
    counts = tallies.pool_counts(found)  # stored: counting 1.5M documents and 1.2M judgments took 3 s
    stats = {
        "queries": Query.objects.filter(pool=found).count(),
        "documents": counts.documents,
        "documents_without_content": Document.objects.filter(pool=found).without_content().count(),
        "pairs": counts.pairs,
        "queued": counts.queued,
        "judgments": {"graded": counts.grades, "cant": counts.judgments - counts.grades},
    }
    configurations = None
    if access.is_engineer(request.user):
        configurations = found.configurations.select_related("team").annotate(n_runs=Count("runs"))
    return render(
        request,
        "judgments/pool_detail.html",
        {"pool": found, "stats": stats, "configurations": configurations},
    )


# --- Configurations and runs (engineers of the pool, admins) -------------------------------------


def configuration_list(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.get_pool_or_404(request.user, access.scored_pools_for, name=pool_name)
    configurations = (
        access.configurations_for(request.user)
        .filter(pool=found, archived_at__isnull=True)
        .select_related("team")
        .annotate(n_runs=Count("runs"), last_run=Max("runs__created_at"))
    )
    archived = access.configurations_for(request.user).filter(pool=found, archived_at__isnull=False)
    my_teams = set(request.user.teams.values_list("pk", flat=True))
    return render(
        request,
        "judgments/configuration_list.html",
        {
            "pool": found,
            "configurations": configurations,
            "my_teams": my_teams,
            "archived": archived.order_by("name"),
            # as exchange's configuration_new decides: admins, and members of a team
            "can_create": access.is_admin(request.user) or bool(my_teams),
        },
    )


def configuration_detail(request: HttpRequest, configuration_id: int) -> HttpResponse:
    configuration = access.configuration_or_404(request, configuration_id)
    # Newest first, said explicitly: annotating a count drops Meta.ordering.
    runs = list(
        configuration.runs.select_related("submitted_by", "endpoint")
        .annotate(n_rankings=Count("rankings"))
        .order_by("-id")
    )
    return render(
        request,
        "judgments/configuration_detail.html",
        {
            "configuration": configuration,
            "pool": configuration.pool,
            "runs": runs,
            "current_run_id": runs[0].pk if runs else None,
            "can_manage": access.can_manage_configuration(request.user, configuration),
        },
    )


RANKINGS_PER_PAGE = 100  # a run of 5,000 queries took 5-10 s to read, name and render whole


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(
        access.runs_for(request.user).select_related("configuration__pool", "submitted_by", "endpoint"),
        pk=run_id,
    )
    private = not access.may_see_rankings(request.user, run.configuration)
    page = None
    if not private:
        page = keyset_page(
            Ranking.objects.filter(run=run).select_related("query"),
            "query__external_id",
            RANKINGS_PER_PAGE,
            after=request.GET.get("after"),
            before=request.GET.get("before"),
        )
    rankings = page.items if page else []
    shown_docs = {pk for ranking in rankings for pk in ranking.doc_ids[:10]}
    names = dict(Document.objects.filter(pk__in=shown_docs).values_list("pk", "external_id"))
    rows = [
        {"query": r.query, "depth": len(r.doc_ids), "top": [names[pk] for pk in r.doc_ids[:10]]}
        for r in rankings
    ]
    current = run.configuration.runs.order_by("-id").values_list("pk", flat=True).first() == run.pk
    return render(
        request,
        "judgments/run_detail.html",
        {
            "run": run,
            "configuration": run.configuration,
            "pool": run.configuration.pool,
            "rows": rows,
            "private": private,
            "n_queries": Ranking.objects.filter(run=run).count(),
            "current": current,
            "capture": run.captures.select_related("endpoint").first(),
            "page": page,
            "page_size": RANKINGS_PER_PAGE,
        },
    )

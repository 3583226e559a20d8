"""Pages that let a team defend model grades: prediction-powered estimates with the human sample, the
leaderboard by each assessor, and the notes the leaderboard, compare and trust pages carry (sample
progress, circular evaluation, probe results).

Engineers of a pool and admins see the estimates and the assessors' leaderboards (they are scores);
only admins draw a sample. The estimates recompute metrics in memory, so they live on their own page,
linked from the leaderboard and the compare page, which stay fast.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from judgments import access, snapshots
from judgments.models import ModelJudge, Pool
from judgments.rating import queue
from judgments.rating.sample import SampleError, draw_sample, sample_status

from .. import estimates as ppi_estimates
from .. import snapshots as stored
from ..assessors import MIN_GRADES, from_snapshot
from ..circularity import circular_configurations
from ..flavours import DEFAULT_FLAVOUR, FLAVOURS
from .common import scored_pool_or_404

MEASURES_OFFERED = ("ndcg@10", "ndcg@5", "ndcg@3", "ndcg@100", "p@10", "recall@100", "mrr", "ap")


def leaderboard_notes(pool: Pool) -> dict:
    """What the leaderboard says about model grades: the sample's progress, circular configurations."""
    circular = circular_configurations(pool)
    sample = sample_status(pool)
    return {
        "sample": sample,
        "estimates": sample is not None and sample.finished and ModelJudge.objects.filter(pool=pool).exists(),
        "circular": circular,
        "humans_top": _humans_top(pool) if circular else [],
    }


def _humans_top(pool: Pool, n: int = 5) -> list[tuple]:
    """The top `n` (configuration, mean NDCG@10) by the humans' combined grades, from the stored
    leaderboards by assessor (computed here on a small pool; none while a big pool's is first computed)."""
    value = snapshots.read(pool, "assessors")[""].value
    if value is None:
        return []
    result = from_snapshot(value)
    humans = result.boards[0]
    return [(result.configurations[i], humans.means[i]) for i in humans.order[:n]]


def difference_url(pool: Pool, a, b, metric: str, flavour: str) -> str | None:
    """The estimates page's A − B for a compare page, when the pool has a judge and a human sample."""
    if not (ModelJudge.objects.filter(pool=pool).exists() and sample_status(pool) is not None):
        return None
    params = {"a": a.name, "b": b.name, "flavour": flavour}
    if metric in MEASURES_OFFERED:
        params["measure"] = metric
    return reverse("scoring:estimates", args=[pool.name]) + "?" + urlencode(params)


@require_GET
def estimates_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = scored_pool_or_404(request, pool_name)
    measure = request.GET.get("measure") or "ndcg@10"
    flavour = request.GET.get("flavour") or request.GET.get("flavor") or DEFAULT_FLAVOUR
    status = sample_status(found)
    tables, problems = [], []
    judges = list(ModelJudge.objects.filter(pool=found).select_related("user"))
    try:
        key_measure = ppi_estimates.measure_name(ppi_estimates.measure_key(measure))
        key_flavour = ppi_estimates.check_flavour(flavour)
    except ppi_estimates.EstimateError as error:
        problems, judges = [(judge, str(error)) for judge in judges], []
    # Stored: computed by a task when the pool changed (scoring.snapshots), inline on a small pool.
    keys = {judge.pk: stored.estimate_key(judge, key_measure, key_flavour) for judge in judges}
    shown = snapshots.read(found, "estimates", keys.values()) if judges else {}
    configurations = stored.configurations_of(s.value for s in shown.values())
    circular = circular_configurations(found) if judges else []
    for judge in judges:
        value = shown[keys[judge.pk]].value
        if value is None:
            continue  # being computed: the snapshot note says so
        if "error" in value:
            problems.append((judge, value["error"]))
            continue
        table = stored.estimates_from(judge, value, configurations)
        difference = None
        names = [row.configuration.name for row in table.rows]
        a, b = request.GET.get("a"), request.GET.get("b")
        if a in names and b in names and a != b:
            difference = {"a": a, "b": b, "estimate": table.difference(names.index(a), names.index(b))}
        tables.append({"table": table, "difference": difference, "circular": circular})
    template = "scoring/_estimates_tables.html" if request.GET.get("fragment") else "scoring/estimates.html"
    return render(
        request,
        template,
        {
            "pool": found,
            "status": status,
            "tables": tables,
            "problems": problems,
            "snapshot": snapshots.oldest(shown.values()),
            "measure": measure,
            "flavour": flavour,
            "measures": MEASURES_OFFERED,
            "flavours": list(FLAVOURS),
            "is_admin": access.is_admin(request.user),
            "default_depth": queue.DEFAULT_DEPTH,
            "n_queries": (n_queries := found.queries.count()),
            "default_size": min(50, max(1, n_queries // 4)),
        },
    )


@access.require(access.is_admin)
@require_POST
def draw_sample_view(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    try:
        size = int(request.POST.get("size", ""))
        seed = int(request.POST["seed"]) if request.POST.get("seed", "").strip() else None
        depth = int(request.POST.get("depth") or queue.DEFAULT_DEPTH)
    except ValueError:
        messages.error(request, "Size, seed and depth are whole numbers.")
        return redirect("scoring:estimates", found.name)
    try:
        drawn = draw_sample(found, size, seed=seed, depth=depth, actor=request.user)
    except (SampleError, queue.QueueError) as error:
        messages.error(request, str(error))
        return redirect("scoring:estimates", found.name)
    replaced = " It replaces the previous sample." if drawn.replaced else ""
    messages.success(
        request,
        f"Drew {len(drawn.query_ids)} queries at random (seed {drawn.sample.seed}); {drawn.queued.queued} "
        f"pairs queued for the human raters ahead of the rest.{replaced}",
    )
    return redirect("scoring:estimates", found.name)


@require_GET
def assessors_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = scored_pool_or_404(request, pool_name)
    # Stored: computed by a task when the pool changed (scoring.assessors), inline on a small pool.
    shown = snapshots.read(found, "assessors")[""]
    result = from_snapshot(shown.value) if shown.value is not None else None
    rows = (
        []
        if result is None
        else [
            {"board": board, "winner": result.winner(board), "taus": result.taus[i]}
            for i, board in enumerate(result.boards)
        ]
    )
    columns = (
        []
        if result is None
        else [
            {"configuration": c, "means": [board.means[j] for board in result.boards]}
            for j, c in enumerate(result.configurations)
        ]
    )
    return render(
        request,
        "scoring/assessors.html",
        {
            "pool": found,
            "result": result,
            "rows": rows,
            "columns": columns,
            "min_grades": MIN_GRADES,
            "snapshot": shown,
        },
    )

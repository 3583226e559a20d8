"""Comparing configurations: A vs B with confidence intervals and tests, the matrix of several, one
query side by side, and sending a configuration's unjudged top k to the raters.

For the engineers of a pool and admins (raters and outsiders: 404).

Every figure is read from stored scores (`scoring.comparison`); no page recomputes a metric.
"""

from __future__ import annotations

import numpy as np
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from judgments import access
from judgments.models import Pool, Query
from judgments.rating import queue

from .. import charts, comparison, segments, side_by_side
from ..comparison import ComparisonError, metric_label
from ..measure_sets import measure_set
from ..metrics import CUTOFFS
from ..models import MEAN_FIELDS
from . import evidence, measure_matrix, measure_pages
from . import segments as segment_views
from .common import flavour_links, get_option, query_string, scored_pool_or_404, selected_configurations

TOP_QUERIES = 15  # biggest wins and losses listed on a comparison page
DEPTHS = (3, 5, 10, 20, 50, 100)  # ranking depths offered in the per-query view


# --- Helpers ---------------------------------------------------------------------------------------


# --- Leaderboard -----------------------------------------------------------------------------------


# --- Comparison ----------------------------------------------------------------------------------


def _compare_urls(pool: Pool, configurations, flavour: str, metric: str, tags=()) -> dict:
    """The page's own address and its CSV downloads, keeping the segment (`tags`)."""
    names, tags = [c.name for c in configurations], list(tags)
    base = reverse("scoring:compare", args=[pool.name])
    csv_base = reverse("scoring:compare-csv", args=[pool.name])
    return {
        "page": base + query_string(c=names, flavour=flavour, metric=metric, tag=tags),
        "csv": {
            table: csv_base + query_string(c=names, flavour=flavour, metric=metric, table=table, tag=tags)
            for table in ("metrics", "queries", "cutoffs", "matrix")
        },
        "query": reverse("scoring:compare-query", args=[pool.name]) + query_string(c=names, flavour=flavour),
    }


def _cutoff_chart(configurations, flavour: str, means=None) -> tuple[str, list[dict]]:
    """NDCG@k by cutoff, one line per configuration; `means` {pk: [per cutoff]} when already read."""
    means = means or comparison.cutoff_means(configurations, flavour)
    svg = charts.line_chart(
        [f"@{k}" for k in CUTOFFS],
        [(c.name, means[c.pk]) for c in configurations],
        title=f"NDCG by cutoff ({flavour})",
        y_label=f"mean NDCG ({flavour})",
    )
    table = [{"configuration": c, "values": means[c.pk]} for c in configurations]
    return mark_safe(svg), table  # noqa: S308 (charts escape every text they draw)


def compare(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = scored_pool_or_404(request, pool_name)
    selected = selected_configurations(request, found)
    segment_filter = segment_views.read_filter(request, found) if len(selected) >= 2 else None
    if len(selected) >= 2 and (measures := measure_set(found)) is not None:  # the pool's own measure set
        if len(selected) > 2:
            return measure_matrix.matrix_page(request, found, measures, selected, segment_filter)
        return measure_pages.compare(request, found, measures, selected, segment_filter)
    flavour = get_option(request, "flavour", comparison.check_flavour)
    metric = get_option(request, "metric", comparison.check_metric)
    context = {
        "pool": found,
        "flavour": flavour,
        "metric": metric,
        "metric_label": metric_label(metric),
        "metric_choices": [(m, metric_label(m)) for m in MEAN_FIELDS],
        "flavours": flavour_links(request, flavour),
        "selected": selected,
        "leaderboard_url": reverse("scoring:leaderboard", args=[found.name])
        + query_string(
            flavour=flavour, tag=segment_views.picked_tags(segment_filter)
        ),  # the board over the same segment
        "threshold": comparison.JUDGED_THRESHOLD,
        "segment_filter": segment_filter,
    }
    if len(selected) < 2:
        context["configurations"] = (
            access.configurations_for(request.user).filter(pool=found).select_related("team")
        )
        return render(request, "scoring/compare_pick.html", context)
    try:
        if len(selected) == 2:
            return _compare_pair(request, found, selected, context)
        return _compare_matrix(request, found, selected, context)
    except ComparisonError as error:
        messages.error(request, str(error))
        context["configurations"] = (
            access.configurations_for(request.user).filter(pool=found).select_related("team")
        )
        return render(request, "scoring/compare_pick.html", context, status=409)


def _query_rows(
    result: comparison.PairComparison, order: np.ndarray, queries: dict[int, Query]
) -> list[dict]:
    d = result.differences()
    judged_a, judged_b = result.column("judged@10", "a"), result.column("judged@10", "b")
    return [
        {
            "query": queries[int(result.query_ids[i])],
            "a": float(result.column(result.metric, "a")[i]),
            "b": float(result.column(result.metric, "b")[i]),
            "diff": float(d[i]),
            "judged_a": float(judged_a[i]),
            "judged_b": float(judged_b[i]),
        }
        for i in order
    ]


def _compare_pair(request: HttpRequest, pool: Pool, selected, context: dict) -> HttpResponse:
    a, b = selected
    flavour, metric = context["flavour"], context["metric"]
    metrics = list(MEAN_FIELDS) if request.GET.get("all") == "1" else comparison.LEADERBOARD_METRICS
    segment_filter = context["segment_filter"]
    if segment_filter is not None and segment_filter.seg is not None:  # the segment's queries only
        result = segments.compare_pair(a, b, flavour, segment_filter.seg, metric=metric, metrics=metrics)
    else:
        result = comparison.compare_pair(a, b, flavour, metric=metric, metrics=metrics)
    d = result.differences()
    order = np.argsort(d, kind="stable")
    losses = [i for i in order[:TOP_QUERIES] if d[i] < 0]
    wins = [i for i in order[::-1][:TOP_QUERIES] if d[i] > 0]
    queries = comparison.queries_by_key(result.query_ids[losses + wins])
    headline = result.headline.result
    difference_svg = charts.difference_chart(
        d,
        title=f"{metric_label(metric)} ({flavour}) per query: {b.name} − {a.name}",
        name_a=a.name,
        name_b=b.name,
    )
    cutoff_svg, cutoff_table = _cutoff_chart(
        [a, b],
        flavour,
        {
            a.pk: [result.means_a[f"ndcg@{k}"] for k in CUTOFFS],
            b.pk: [result.means_b[f"ndcg@{k}"] for k in CUTOFFS],
        },
    )
    urls = _compare_urls(pool, [a, b], flavour, metric, segment_views.picked_tags(segment_filter))
    params = request.GET.copy()
    params["all"] = "0" if request.GET.get("all") == "1" else "1"
    context.update(
        {
            "result": result,
            "a": a,
            "b": b,
            "headline": headline,
            "sentence": result.sentence(),
            "rows": result.rows,
            "all_metrics": request.GET.get("all") == "1",
            "all_metrics_url": "?" + params.urlencode(),
            "difference_svg": mark_safe(difference_svg),  # noqa: S308 (charts escape every text they draw)
            "cutoff_svg": cutoff_svg,
            "cutoff_table": cutoff_table,
            "cutoff_labels": [f"NDCG@{k}" for k in CUTOFFS],
            "wins": _query_rows(result, wins, queries),
            "losses": _query_rows(result, losses, queries),
            "urls": urls,
            "swap_url": reverse("scoring:compare", args=[pool.name])
            + query_string(
                c=[b.name, a.name], flavour=flavour, metric=metric, tag=segment_views.requested(request)
            ),
            "low_judged": result.low_judged(),
            "can_queue": access.may_queue(request.user, pool),
            "next_url": request.get_full_path(),
            "estimates_url": evidence.difference_url(pool, a, b, metric, flavour),
            "segment_tables": segment_views.pair_fixed(segment_filter, pool, a, b, flavour, metric)
            if segment_filter
            else None,
        }
    )
    return render(request, "scoring/compare.html", context)


def _compare_matrix(request: HttpRequest, pool: Pool, selected, context: dict) -> HttpResponse:
    """Every pair of three or more configurations; with a segment (?tag=), over its queries only."""
    flavour, metric = context["flavour"], context["metric"]
    segment_filter = context["segment_filter"]
    tags = segment_views.picked_tags(segment_filter)
    if tags:
        matrix = segments.pairwise_matrix(selected, flavour, segment_filter.seg, metric=metric)
        means = segments.cutoff_means(matrix.configurations, flavour, segment_filter.seg)
    else:
        matrix = comparison.pairwise_matrix(selected, flavour, metric=metric)
        means = None
    cutoff_svg, cutoff_table = _cutoff_chart(matrix.configurations, flavour, means)
    base = reverse("scoring:compare", args=[pool.name])
    grid = []
    for row, cells in matrix.grid():
        grid.append(
            (
                row,
                [
                    (
                        cell,
                        base
                        + query_string(
                            c=[cell.column.name, cell.row.name],
                            flavour=matrix.flavour,
                            metric=matrix.metric,
                            tag=tags,
                        ),
                    )
                    if cell
                    else (None, None)
                    for cell in cells
                ],
            )
        )
    low = [
        (c, matrix.judged[c.pk])
        for c in matrix.configurations
        if (matrix.judged[c.pk] or 1.0) < comparison.JUDGED_THRESHOLD
    ]
    context.update(
        {
            "matrix": matrix,
            "matrix_label": context["metric_label"],
            "grid": grid,
            "pairs": len(matrix.configurations) * (len(matrix.configurations) - 1) // 2,
            "n_resamples": comparison.N_RESAMPLES,
            "cutoff_svg": cutoff_svg,
            "cutoff_table": cutoff_table,
            "cutoff_labels": [f"NDCG@{k}" for k in CUTOFFS],
            "urls": _compare_urls(pool, matrix.configurations, matrix.flavour, matrix.metric, tags),
            "low_judged": low,
            "can_queue": access.may_queue(request.user, pool),
            "next_url": request.get_full_path(),
        }
    )
    return render(request, "scoring/compare_matrix.html", context)


def compare_query(request: HttpRequest, pool_name: str) -> HttpResponse:
    """One query: the two configurations' rankings side by side, with grades and stored scores."""
    found = scored_pool_or_404(request, pool_name)
    selected = selected_configurations(request, found)
    if len(selected) != 2:
        raise Http404("Pick two configurations (?c=A&c=B).")
    query = Query.objects.filter(pool=found, external_id=request.GET.get("q", "")).first()
    if query is None:
        raise Http404("No such query in this pool")
    flavour = get_option(request, "flavour", comparison.check_flavour)
    try:
        depth = int(request.GET.get("k", 10))
    except ValueError:
        depth = 10
    depth = depth if depth in DEPTHS else 10
    a, b = selected
    try:
        private = frozenset(c.pk for c in (a, b) if not access.may_see_rankings(request.user, c))
        view = side_by_side.query_comparison(a, b, query, flavour, depth=depth, private=private)
    except ComparisonError as error:
        messages.error(request, str(error))
        return redirect(
            reverse("scoring:compare", args=[found.name]) + query_string(c=[a.name, b.name], flavour=flavour)
        )
    base = reverse("scoring:compare-query", args=[found.name])
    score_rows = []
    for k in CUTOFFS:
        ndcg = [side.scores[f"ndcg@{k}"] if side.scores else None for side in (view.a, view.b)]
        score_rows.append(
            {
                "k": k,
                "ndcg": ndcg,
                "judged": [side.scores[f"judged@{k}"] if side.scores else None for side in (view.a, view.b)],
                "diff": ndcg[1] - ndcg[0] if None not in ndcg else None,
            }
        )
    return render(
        request,
        "scoring/compare_query.html",
        {
            "pool": found,
            "view": view,
            "sides": [(view.a, "A"), (view.b, "B")],
            "a": a,
            "b": b,
            "flavour": flavour,
            "flavours": flavour_links(request, flavour),
            "score_rows": score_rows,
            "depths": [
                (k, base + query_string(c=[a.name, b.name], q=query.external_id, flavour=flavour, k=k))
                for k in DEPTHS
            ],
            "compare_url": reverse("scoring:compare", args=[found.name])
            + query_string(c=[a.name, b.name], flavour=flavour),
            "grade_scale": found.grade_scale,
            "measure_rows": measure_pages.query_measure_rows(found, a, b, query),
        },
    )


# --- A configuration across its runs ----------------------------------------------------------------


# --- Sending a configuration's unjudged documents to the raters --------------------------------------


@require_POST
def queue_unjudged(request: HttpRequest, configuration_id: int) -> HttpResponse:
    """Queue the unjudged documents of the configuration's current top k for rating (admins, and the
    pool's engineers where the pool allows it)."""
    configuration = access.configuration_or_404(request, configuration_id)
    if not access.may_queue(request.user, configuration.pool):
        raise PermissionDenied
    try:
        k = int(request.POST.get("k", queue.DEFAULT_DEPTH))
    except ValueError:
        k = queue.DEFAULT_DEPTH
    try:
        result = queue.queue_unjudged_top_k(configuration, k)
    except queue.QueueError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, result.message(f"{configuration.name}, top {k}: "))
    back = reverse("scoring:leaderboard", args=[configuration.pool.name])
    return redirect(access.safe_next(request, request.POST.get("next"), default=back))

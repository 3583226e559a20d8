"""Leaderboard and comparison pages, for the engineers of a pool and admins (raters and outsiders: 404).

Every figure is read from stored scores (`scoring.comparison`); no page recomputes a metric.
"""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from judgments import access
from judgments.models import Pool, Query, SearchConfiguration
from judgments.rating import queue

from . import charts, comparison, evidence, flavours, measure_pages, side_by_side, tasks
from .comparison import ComparisonError, metric_label
from .measure_sets import measure_set
from .metrics import CUTOFFS, UDCG_GAMMA
from .models import MEAN_FIELDS
from .templatetags import scoring_tags as fmt

TOP_QUERIES = 15  # biggest wins and losses listed on a comparison page
DEPTHS = (3, 5, 10, 20, 50, 100)  # ranking depths offered in the per-query view


# --- Helpers ---------------------------------------------------------------------------------------


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


def _flavour_links(request: HttpRequest, flavour: str) -> list[dict]:
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


# --- Leaderboard -----------------------------------------------------------------------------------


def _leaderboard_display(rows: list[comparison.LeaderboardRow]) -> list[dict]:
    """Each row's cells already formatted: the table has 50 rows x 10 cells, and formatting them here
    costs a fraction of template filters."""
    threshold = comparison.JUDGED_THRESHOLD
    display = []
    for rank, row in enumerate(rows, start=1):
        s = row.current
        cells = []
        for metric in comparison.LEADERBOARD_METRICS:
            judged_metric = "judged@" + metric.split("@")[1]
            value, judged = row.mean(metric), row.judged(judged_metric)
            cells.append(
                {
                    "metric": metric,
                    "sort": fmt.sortvalue(value),
                    "text": fmt.score(value),
                    "judged_label": judged_metric,
                    "judged_text": fmt.pct(judged),
                    "judged_low": fmt.below(judged, threshold),
                }
            )
        judged10 = row.judged("judged@10")
        udcg = row.mean(comparison.UDCG_METRIC)
        change = row.change(comparison.HEADLINE_METRIC)
        display.append(
            {
                "row": row,
                "configuration": row.configuration,
                "scored": s is not None,
                "rank": rank if s else "",
                "cells": cells,
                "udcg": {"sort": fmt.sortvalue(udcg), "text": fmt.score(udcg)},
                "judged10": {
                    "sort": fmt.sortvalue(judged10),
                    "text": fmt.pct(judged10),
                    "low": fmt.below(judged10, threshold),
                },  # fmt: skip
                "change": {
                    "sort": fmt.sortvalue(change),
                    "text": fmt.signed(change),
                    "direction": "up" if change and change > 0 else "down" if change and change < 0 else "",
                },  # fmt: skip
            }
        )
    return display


def leaderboard(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = scored_pool_or_404(request, pool_name)
    if (measures := measure_set(found)) is not None:  # the pool's own measure set
        return measure_pages.leaderboard(request, found, measures)
    flavour = get_option(request, "flavour", comparison.check_flavour)
    rows = comparison.leaderboard(found, flavour)
    recompute_url = reverse("scoring:recompute", args=[found.name]) if access.is_admin(request.user) else None
    background = tasks.pool_status(found)
    return render(
        request,
        "scoring/leaderboard.html",
        {
            "pool": found,
            "flavour": flavour,
            "flavours": _flavour_links(request, flavour),
            "metrics": [metric_label(m) for m in comparison.LEADERBOARD_METRICS],
            "udcg_label": metric_label(comparison.UDCG_METRIC),
            "udcg_gamma": UDCG_GAMMA,
            "rows": _leaderboard_display(rows),
            "n_scored": sum(1 for row in rows if row.current),
            "recompute_url": recompute_url,
            "background": {
                "waiting": background.waiting,
                "running": background.running,
                "failures": [tasks.describe_failure(t) for t in background.failed],
            },
            "csv_url": reverse("scoring:leaderboard-csv", args=[found.name]) + query_string(flavour=flavour),
            "notes": evidence.leaderboard_notes(found),
        },
    )


# --- Comparison ----------------------------------------------------------------------------------


def _compare_urls(pool: Pool, configurations, flavour: str, metric: str) -> dict:
    names = [c.name for c in configurations]
    base = reverse("scoring:compare", args=[pool.name])
    csv_base = reverse("scoring:compare-csv", args=[pool.name])
    return {
        "page": base + query_string(c=names, flavour=flavour, metric=metric),
        "csv": {
            table: csv_base + query_string(c=names, flavour=flavour, metric=metric, table=table)
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
    if len(selected) == 2 and (measures := measure_set(found)) is not None:  # the pool's own measure set
        return measure_pages.compare(request, found, measures, selected)
    flavour = get_option(request, "flavour", comparison.check_flavour)
    metric = get_option(request, "metric", comparison.check_metric)
    context = {
        "pool": found,
        "flavour": flavour,
        "metric": metric,
        "metric_label": metric_label(metric),
        "metric_choices": [(m, metric_label(m)) for m in MEAN_FIELDS],
        "flavours": _flavour_links(request, flavour),
        "selected": selected,
        "leaderboard_url": reverse("scoring:leaderboard", args=[found.name]) + query_string(flavour=flavour),
        "threshold": comparison.JUDGED_THRESHOLD,
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
    urls = _compare_urls(pool, [a, b], flavour, metric)
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
            + query_string(c=[b.name, a.name], flavour=flavour, metric=metric),
            "low_judged": result.low_judged(),
            "can_queue": access.may_queue(request.user, pool),
            "next_url": request.get_full_path(),
            "estimates_url": evidence.difference_url(pool, a, b, metric, flavour),
        }
    )
    return render(request, "scoring/compare.html", context)


def _compare_matrix(request: HttpRequest, pool: Pool, selected, context: dict) -> HttpResponse:
    matrix = comparison.pairwise_matrix(selected, context["flavour"], metric=context["metric"])
    cutoff_svg, cutoff_table = _cutoff_chart(matrix.configurations, context["flavour"])
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
                            c=[cell.column.name, cell.row.name], flavour=matrix.flavour, metric=matrix.metric
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
            "grid": grid,
            "pairs": len(matrix.configurations) * (len(matrix.configurations) - 1) // 2,
            "n_resamples": comparison.N_RESAMPLES,
            "cutoff_svg": cutoff_svg,
            "cutoff_table": cutoff_table,
            "cutoff_labels": [f"NDCG@{k}" for k in CUTOFFS],
            "urls": _compare_urls(pool, matrix.configurations, matrix.flavour, matrix.metric),
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
            "flavours": _flavour_links(request, flavour),
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


def configuration_history(request: HttpRequest, configuration_id: int) -> HttpResponse:
    configuration = access.configuration_or_404(request, configuration_id)
    if (measures := measure_set(configuration.pool)) is not None:  # the pool's own measure set
        return measure_pages.history(request, configuration, measures)
    flavour = get_option(request, "flavour", comparison.check_flavour)
    points = comparison.configuration_history(configuration, flavour)
    metrics = comparison.LEADERBOARD_METRICS
    svg = charts.line_chart(
        [f"#{p.run.pk} · {p.run.created_at:%m-%d}" for p in points],
        [
            (f"{metric_label(m)}", [p.summary.means[m] if p.summary else None for p in points])
            for m in metrics
        ],
        title=f"{configuration.name}: NDCG across runs ({flavour})",
        y_label=f"mean NDCG ({flavour})",
    )
    return render(
        request,
        "scoring/history.html",
        {
            "configuration": configuration,
            "pool": configuration.pool,
            "flavour": flavour,
            "flavours": _flavour_links(request, flavour),
            "points": points[::-1],
            "metrics": [(m, metric_label(m)) for m in metrics],
            "chart": mark_safe(svg),  # noqa: S308 (charts escape every text they draw)
            "csv_url": reverse("scoring:configuration-history-csv", args=[configuration.pk])
            + query_string(flavour=flavour),
            "leaderboard_url": reverse("scoring:leaderboard", args=[configuration.pool.name])
            + query_string(flavour=flavour),
            "threshold": comparison.JUDGED_THRESHOLD,
        },
    )


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

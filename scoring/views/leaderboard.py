"""The leaderboard: every configuration's current run, its means and judged@k, the notes on model grades."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from judgments import access

from .. import comparison, stability, tasks
from ..comparison import metric_label
from ..measure_sets import measure_set
from ..metrics import UDCG_GAMMA
from ..templatetags import scoring_tags as fmt
from . import evidence, measure_pages
from . import segments as segment_views
from .common import flavour_links, get_option, query_string, scored_pool_or_404


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
    segment_tables = None
    if (segment_filter := segment_views.read_filter(request, found)) is not None:
        rows, segment_tables = segment_views.leaderboard(segment_filter, request, found, flavour, rows)
    recompute_url = reverse("scoring:recompute", args=[found.name]) if access.is_admin(request.user) else None
    background = tasks.pool_status(found)
    measured = None
    if rows:
        cells = sum(row.current.n_queries for row in rows if row.current)
        measured = stability.for_leaderboard(found, cells)
        if measured is None or measured.stale:
            tasks.request_stability(found)
    return render(
        request,
        "scoring/leaderboard.html",
        {
            "pool": found,
            "flavour": flavour,
            "flavours": flavour_links(request, flavour),
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
            "csv_url": reverse("scoring:leaderboard-csv", args=[found.name])
            + query_string(flavour=flavour, tag=segment_views.requested(request)),
            "stability": measured,
            "stability_pending": bool(rows) and (measured is None or measured.stale),
            "notes": evidence.leaderboard_notes(found),
            "segment_filter": segment_filter,
            "segment_tables": segment_tables,
        },
    )

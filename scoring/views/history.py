"""A configuration across its runs: each run's means, charted, with the CSV beside it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe

from judgments import access

from .. import charts, comparison, scheduled
from ..comparison import metric_label
from ..measure_sets import measure_set
from . import measure_pages
from .common import flavour_links, get_option, query_string


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
            "flavours": flavour_links(request, flavour),
            "points": points[::-1],
            "metrics": [(m, metric_label(m)) for m in metrics],
            "chart": mark_safe(svg),  # noqa: S308 (charts escape every text they draw)
            "csv_url": reverse("scoring:configuration-history-csv", args=[configuration.pk])
            + query_string(flavour=flavour),
            "leaderboard_url": reverse("scoring:leaderboard", args=[configuration.pool.name])
            + query_string(flavour=flavour),
            "threshold": comparison.JUDGED_THRESHOLD,
            # Scheduled captures outside the band of the previous ones (the capture.drop webhook's rule).
            "scheduled": {p.run.pk: p for p in scheduled.scheduled_points(configuration)},
            "band_metric": metric_label(scheduled.METRIC),
        },
    )

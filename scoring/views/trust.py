"""The trust page: a model judge against the human raters (scoring.trust computes it), and sending the
pairs they disagree on to adjudication."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from judgments import access, snapshots
from judgments.judges import probes, probing
from judgments.models import ModelJudge
from judgments.rating import adjudication
from judgments.rating.display import grade_scale

from .. import metrics
from ..circularity import circular_configurations
from ..snapshots import trust_from
from ..trust import FAR, FEW_PAIRS, far_pairs, verdict


def _judge_or_404(request: HttpRequest, pool_name: str, name: str) -> ModelJudge:
    found = access.get_pool_or_404(request.user, access.pools_for, name=pool_name)
    return get_object_or_404(
        ModelJudge.objects.select_related("user", "pool"), pool=found, user__username=name
    )


@access.require(access.is_admin)
@require_GET
def trust_page(request: HttpRequest, pool_name: str, name: str) -> HttpResponse:
    judge = _judge_or_404(request, pool_name, name)
    # Stored: computed by a task when the pool changed (scoring.snapshots), inline on a small pool.
    shown = snapshots.read(judge.pool, "trust", [str(judge.pk)])[str(judge.pk)]
    trust = trust_from(judge, shown.value) if shown.value is not None else None
    scale = [(e["grade"], e["label"]) for e in grade_scale(judge.pool)]
    rows = [
        {
            "grade": g,
            "label": label,
            "cells": [
                {"n": n, "diag": g == k, "far": abs(g - k) >= FAR}
                for (k, _), n in zip(scale, row, strict=True)
            ],
            "total": sum(row),
        }
        for (g, label), row in zip(scale, trust.confusion if trust else [], strict=False)
    ]
    probed = list(probing.results(judge).values())
    circular = circular_configurations(judge.pool, judge)
    return render(
        request,
        "scoring/trust.html",
        {
            "pool": judge.pool,
            "judge": judge,
            "trust": trust,
            "snapshot": shown,
            "verdict": verdict(trust, probed=probed, circular=circular) if trust else None,
            "confusion_rows": rows,
            "judge_totals": [sum(col) for col in zip(*trust.confusion, strict=True)]
            if trust and trust.confusion
            else [],
            "scale": scale,
            "far_spread": FAR,
            "few_pairs": FEW_PAIRS,
            "flavour_description": metrics.FLAVOURS[metrics.DEFAULT_FLAVOUR].description,
            "probes": probed,
            "probe_fail_rate": probes.FAIL_RATE,
            "circular": circular,
        },
    )


@access.require(access.is_admin)
@require_POST
def send_to_adjudication(request: HttpRequest, pool_name: str, name: str) -> HttpResponse:
    """Send the pairs where the judge and the humans are FAR or more apart to the disagreements page."""
    judge = _judge_or_404(request, pool_name, name)
    reasons = far_pairs(judge)
    sent = adjudication.request_adjudication(judge.pool, reasons, request.user)
    messages.success(
        request,
        f"Sent {sent} pair{'s' if sent != 1 else ''} to adjudication"
        + (f" ({len(reasons) - sent} had been sent before)" if len(reasons) > sent else "")
        + ". They are on the disagreements page until an admin settles them.",
    )
    return redirect("scoring:trust", judge.pool.name, judge.user.username)

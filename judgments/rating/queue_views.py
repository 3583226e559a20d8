"""The queue page (admins): build the queue from the current runs, send a configuration's unjudged top k,
add pairs by hand or from a file, and list the queued pairs whose document has no content yet."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from judgments import access, tallies
from judgments.models import Pair, Pool

from . import grading, queue
from .forms import AddPairForm, BuildQueueForm, ConfigurationTopKForm, PairFileForm


def _coverage_depth(request: HttpRequest) -> int:
    try:
        k = int(request.GET.get("k", queue.DEFAULT_DEPTH))
    except ValueError:
        return queue.DEFAULT_DEPTH
    return min(max(k, 1), queue.MAX_DEPTH)


def _queue_page(request, pool: Pool, status: int = 200, **forms) -> HttpResponse:
    k = _coverage_depth(request)
    counts = tallies.pool_counts(pool)  # stored (judgments.tallies): no scan of the pool's pairs or judgments
    context = {
        "pool": pool,
        "k": k,
        "overall": grading.overall_progress(counts),
        "open": counts.unfinished,
        "without_content": counts.without_content,
        # held_by is set and cleared with held_until: the partial pair_held_by_idx reads only held pairs
        "held": Pair.objects.in_pool(pool)
        .filter(held_by__isnull=False, held_until__gt=timezone.now())
        .count(),
        "cant_judge": counts.cant,
        "build_form": forms.get("build_form")
        or BuildQueueForm(initial={"k": pool.queue_depth, "strategy": pool.queue_strategy}),
        "configuration_form": forms.get("configuration_form")
        or ConfigurationTopKForm(pool=pool, initial={"k": k}),
        "add_form": forms.get("add_form") or AddPairForm(),
        "file_form": forms.get("file_form") or PairFileForm(),
        "problems": forms.get("problems") or [],
    }
    return render(request, "rating/queue.html", context, status=status)


@access.require(access.is_admin)
@require_GET
def queue_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    """Build the queue, pool per configuration, add pairs, and see what is open."""
    return _queue_page(request, access.admin_pool_or_404(request, pool_name))


@access.require(access.is_admin)
@require_POST
def queue_build(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    form = BuildQueueForm(request.POST)
    if not form.is_valid():
        return _queue_page(request, found, status=400, build_form=form)
    result = queue.build_queue(found, form.cleaned_data["k"], form.cleaned_data["strategy"] or None)
    messages.success(
        request,
        f"Pooled the top {form.cleaned_data['k']} of every current run, ordered by "
        f"{found.queue_strategy}. {result.message()}",
    )
    return redirect("rating:queue", found.name)


@access.require(access.is_admin)
@require_POST
def queue_configuration(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    form = ConfigurationTopKForm(request.POST, pool=found)
    if not form.is_valid():
        return _queue_page(request, found, status=400, configuration_form=form)
    configuration, k = form.cleaned_data["configuration"], form.cleaned_data["k"]
    try:
        result = queue.queue_unjudged_top_k(configuration, k)
    except queue.QueueError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request, f"Sent the unjudged top {k} of {configuration.name} to the raters. {result.message()}"
        )
    return redirect("rating:queue", found.name)


@access.require(access.is_admin)
@require_POST
def queue_add(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    form = AddPairForm(request.POST)
    if not form.is_valid():
        return _queue_page(request, found, status=400, add_form=form)
    data = form.cleaned_data
    try:
        result = queue.add_pairs(found, [(data["query_id"], data["document_id"])], priority=data["priority"])
    except queue.QueueError as error:
        return _queue_page(
            request, found, status=400, add_form=form, problems=error.problems or [(0, str(error))]
        )
    messages.success(request, result.message())
    return redirect("rating:queue", found.name)


@access.require(access.is_admin)
@require_POST
def queue_upload(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    form = PairFileForm(request.POST, request.FILES)
    if not form.is_valid():
        return _queue_page(request, found, status=400, file_form=form)
    try:
        result = queue.add_pairs_from_file(
            found, form.cleaned_data["file"].read(), priority=form.cleaned_data["priority"]
        )
    except queue.QueueError as error:
        messages.error(request, str(error))
        return _queue_page(request, found, status=400, file_form=form, problems=error.problems)
    messages.success(request, f"{form.cleaned_data['file'].name}: {result.message()}")
    return redirect("rating:queue", found.name)


MISSING_CONTENT_PER_PAGE = 100


@access.require(access.is_admin)
@require_GET
def missing_content(request: HttpRequest, pool_name: str) -> HttpResponse:
    """Queued pairs whose document has no content: raters cannot be served them until it is imported."""
    found = access.admin_pool_or_404(request, pool_name)
    after = request.GET.get("after")
    counts = tallies.pool_counts(found)  # stored: how many there are, and none to walk when there are none
    pairs, next_after = [], None
    if counts.without_content or after:
        pairs, next_after = queue.pairs_without_content_page(found, MISSING_CONTENT_PER_PAGE, after)
    return render(
        request,
        "rating/missing_content.html",
        {"pool": found, "pairs": pairs, "next_after": next_after, "first": not after, "counts": counts},
    )

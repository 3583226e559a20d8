"""The judges' pages, for admins: a pool's judges and grade source, a judge's settings, its runs (started
here, done by the background worker, their progress polled), never its key: only the name of the
environment variable, and whether that variable is set on this server."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judgments import access, snapshots
from judgments.models import JudgeRun, ModelJudge, Pool

from . import services, tasks
from .forms import GradeSourceForm, JudgeForm, RunForm

RECENT_RUNS = 20


def _judge(pool: Pool, name: str) -> ModelJudge:
    return get_object_or_404(
        ModelJudge.objects.select_related("user", "pool"), pool=pool, user__username=name
    )


@access.require(access.is_admin)
@require_GET
def judge_list(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    judges = list(found.judges.filter(archived_at__isnull=True).select_related("user"))
    # The counts are stored (a snapshot computed by a task when the pool changed; inline on a small pool).
    shown = snapshots.read(found, "judge", [str(judge.pk) for judge in judges])
    latest = {  # each judge's latest run, in one statement
        run.judge_id: run
        for run in JudgeRun.objects.filter(judge__in=judges).order_by("judge_id", "-pk").distinct("judge_id")
    }
    for judge in judges:
        counts = shown[str(judge.pk)].value or {}
        judge.n_graded, judge.n_cant = counts.get("graded"), counts.get("cant")
        judge.key_set = services.key_is_set(judge)
        judge.latest = latest.get(judge.pk)
    return render(
        request,
        "judges/list.html",
        {
            "pool": found,
            "judges": judges,
            "snapshot": snapshots.oldest(shown.values()),
            "archived": found.judges.filter(archived_at__isnull=False).select_related("user"),
            "source_form": GradeSourceForm(initial={"grade_source": found.grade_source}),
        },
    )


@access.require(access.is_admin)
@require_POST
def grade_source(request: HttpRequest, pool_name: str) -> HttpResponse:
    """Set whose grades the pool's combined grade uses; every score is recomputed in the background."""
    found = access.admin_pool_or_404(request, pool_name)
    form = GradeSourceForm(request.POST)
    if form.is_valid() and form.cleaned_data["grade_source"] != found.grade_source:
        found.grade_source = form.cleaned_data["grade_source"]
        found.save(update_fields=["grade_source"])
        messages.success(
            request,
            f"Combined grades now use: {found.get_grade_source_display().lower()}. Every score of "
            f"{found.name} is recomputed in the background.",
        )
    elif not form.is_valid():
        messages.error(request, "Choose one of the grade sources.")
    return redirect("judges:list", found.name)


@access.require(access.is_admin)
@require_http_methods(["GET", "POST"])
def judge_new(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    form = JudgeForm(request.POST or None, creating=True)
    if form.is_valid():
        try:
            judge, _ = services.create_or_update_judge(found, form.cleaned_data["name"], **form.settings())
        except services.JudgeSetupError as error:
            form.add_error("name", str(error))
        else:
            messages.success(request, f"Judge {judge.name} created. Start a run below.")
            return redirect("judges:detail", found.name, judge.name)
    return render(request, "judges/form.html", {"pool": found, "form": form, "judge": None})


@access.require(access.is_admin)
@require_http_methods(["GET", "POST"])
def judge_edit(request: HttpRequest, pool_name: str, name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    judge = _judge(found, name)
    form = JudgeForm(request.POST or None, instance=judge)
    if form.is_valid():
        try:
            services.create_or_update_judge(found, judge.name, **form.settings())
        except services.JudgeSetupError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Judge {judge.name} saved; the next run uses these settings.")
            return redirect("judges:detail", found.name, judge.name)
    judge.key_set = services.key_is_set(judge)
    return render(request, "judges/form.html", {"pool": found, "form": form, "judge": judge})


def _run_context(judge: ModelJudge, run: JudgeRun | None) -> dict:
    return {
        "judge": judge,
        "pool": judge.pool,
        "run": run,
        "stale": run is not None and run.stale,
    }


@access.require(access.is_admin)
@require_GET
def judge_detail(request: HttpRequest, pool_name: str, name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    judge = _judge(found, name)
    judge.key_set = services.key_is_set(judge)
    active = services.active_run(judge)
    # The counts are stored (a snapshot computed by a task when the pool changed; inline on a small pool).
    shown = snapshots.read(found, "judge", [str(judge.pk)])[str(judge.pk)]
    counts = shown.value or {
        "graded": None,
        "cant": None,
        "waiting": dict.fromkeys(("queued", "all", "human_graded")),
    }
    context = {
        **_run_context(judge, active),
        "active": active,
        "snapshot": shown,
        "counts": counts,
        "waiting": counts["waiting"],
        "run_form": RunForm(),
        "runs": judge.runs.select_related("started_by")[:RECENT_RUNS],
    }
    return render(request, "judges/detail.html", context)


@access.require(access.is_admin)
@require_POST
def run_start(request: HttpRequest, pool_name: str, name: str) -> HttpResponse:
    """Queue a judging run for the background worker."""
    found = access.admin_pool_or_404(request, pool_name)
    judge = _judge(found, name)
    form = RunForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The run's limits must be whole numbers of at least 1, or empty.")
    elif services.active_run(judge) is not None:
        messages.error(request, f"{judge.name} has a run already; cancel it or wait for it to end.")
    elif services.key_is_set(judge) is False:
        messages.error(
            request,
            f"The environment variable {judge.api_key_env} is not set on this server: the run would fail. "
            "Set it where the worker runs, then start the run.",
        )
    else:
        data = form.cleaned_data
        tasks.start_run(
            judge,
            data["selection"],
            limit=data["limit"],
            max_calls=data["max_calls"],
            max_tokens=data["max_tokens"],
            user=request.user,
        )
        messages.success(request, "Run queued: the background worker (manage.py db_worker) does it.")
    return redirect("judges:detail", found.name, judge.name)


@access.require(access.is_admin)
@require_GET
def run_status(request: HttpRequest, pool_name: str, name: str, run_id: int) -> HttpResponse:
    """The run's progress fragment (polled by htmx while the run is active)."""
    found = access.admin_pool_or_404(request, pool_name)
    judge = _judge(found, name)
    run = get_object_or_404(JudgeRun, pk=run_id, judge=judge)
    response = render(request, "judges/_run.html", _run_context(judge, run))
    if not run.active and request.headers.get("HX-Request"):
        response["HX-Refresh"] = "true"  # the run ended: reload the page (counts, runs, start form)
    return response


@access.require(access.is_admin)
@require_POST
def run_cancel(request: HttpRequest, pool_name: str, name: str, run_id: int) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    judge = _judge(found, name)
    run = JudgeRun.objects.filter(pk=run_id, judge=judge).first()
    if run is None:
        raise Http404("No such run")
    messages.info(request, services.cancel_run(run))
    return redirect("judges:detail", found.name, judge.name)

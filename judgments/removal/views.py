"""The delete-or-archive pages: what would go first, then Delete, Archive or Restore (see the package doc).

Who: admins for judges and pools; a configuration's team and admins for the configuration and its runs.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from judgments import access
from judgments.models import ModelJudge, Pool, Run, SearchConfiguration

from . import ARCHIVE, DELETE, RemovalRefused, archive, delete, plan


def _admin(request: HttpRequest, what: str) -> None:
    if not access.is_admin(request.user):
        raise PermissionDenied(f"Only admins remove {what}.")


def _manageable(request: HttpRequest, configuration: SearchConfiguration) -> None:
    if not access.can_manage_configuration(request.user, configuration):
        raise PermissionDenied("Only the configuration's team and admins remove it or its runs.")


def remove_pool(request: HttpRequest, pool_name: str) -> HttpResponse:
    _admin(request, "pools")
    return _remove(request, "pool", get_object_or_404(Pool, name=pool_name))


def remove_judge(request: HttpRequest, pool_name: str, name: str) -> HttpResponse:
    _admin(request, "model judges")
    judge = get_object_or_404(
        ModelJudge.objects.select_related("user", "pool"), pool__name=pool_name, user__username=name
    )
    return _remove(request, "judge", judge)


def remove_configuration(request: HttpRequest, configuration_id: int) -> HttpResponse:
    configuration = get_object_or_404(
        access.configurations_for(request.user).select_related("pool", "team"), pk=configuration_id
    )
    _manageable(request, configuration)
    return _remove(request, "configuration", configuration)


def remove_run(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(
        Run.objects.select_related("configuration__pool", "configuration__team").filter(
            configuration__in=access.configurations_for(request.user)
        ),
        pk=run_id,
    )
    _manageable(request, run.configuration)
    return _remove(request, "run", run)


def _page_of(target) -> str:
    """Where the target is shown (after an archive or restore)."""
    if isinstance(target, ModelJudge):
        return reverse("judges:detail", args=[target.pool.name, target.user.username])
    if isinstance(target, SearchConfiguration):
        return reverse("judgments:configuration-detail", args=[target.pk])
    if isinstance(target, Run):
        return reverse("judgments:run-detail", args=[target.pk])
    return reverse("judgments:pool-detail", args=[target.name])


def _list_of(target) -> str:
    """Where the user goes once the target is gone."""
    if isinstance(target, ModelJudge):
        return reverse("judges:list", args=[target.pool.name])
    if isinstance(target, SearchConfiguration):
        return reverse("judgments:configuration-list", args=[target.pool.name])
    if isinstance(target, Run):
        return reverse("judgments:configuration-detail", args=[target.configuration_id])
    return reverse("home")


def _remove(request: HttpRequest, kind: str, target) -> HttpResponse:
    """GET: what removing the object would do, and the one button that fits (Delete, Archive or
    Restore). POST action=delete|archive|restore: do it, or say in one line why not."""
    if request.method == "POST":
        return _act(request, target, request.POST.get("action", ""))
    planned = plan(target)
    return render(
        request,
        "removal/confirm.html",
        {
            "kind": kind,
            "target": target,
            "plan": planned,
            "goes": [item for item in planned.goes if not item.startswith("0 ")],
            "page": _page_of(target),
            "here": request.path,
            "archived": getattr(target, "archived_at", None),
            "can_delete": planned.action == DELETE,
            "can_archive": planned.action == ARCHIVE or (planned.action == DELETE and kind != "run"),
        },
    )


def _act(request: HttpRequest, target, action: str) -> HttpResponse:
    here = request.path
    if action == "delete":
        where = _list_of(target)
        try:
            planned = delete(target)
        except RemovalRefused as exc:
            messages.error(request, str(exc))
            return redirect(here)
        messages.success(request, f"Deleted {planned.what}, with {', '.join(planned.goes)}.")
        return redirect(where)
    if action not in ("archive", "restore"):
        messages.error(request, "Nothing done: choose delete, archive or restore.")
        return redirect(here)
    restore = action == "restore"
    try:
        archive(target, archived=not restore)
    except RemovalRefused as exc:
        messages.error(request, str(exc))
        return redirect(here)
    what = plan(target).what
    if restore:
        messages.success(request, f"Restored {what}: it is back in the lists.")
        return redirect(_page_of(target))
    messages.success(
        request,
        f"Archived {what}: hidden from lists, kept with its history for exports. Restore it from its page.",
    )
    return redirect(_list_of(target))

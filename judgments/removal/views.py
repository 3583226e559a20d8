"""The delete-or-archive pages: what would go first, then Delete, Archive or Restore (see the package doc).

Who: admins for judges and pools; a configuration's team and admins for the configuration and its runs.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgments import access
from judgments.models import ModelJudge, Pool, Run, SearchConfiguration

from . import ARCHIVE, DELETE, RemovalRefused, archive, delete, plan

KINDS = ("judge", "configuration", "run", "pool")


def _target(request: HttpRequest, kind: str, pk: int):
    """The object, if the user may remove it (404 if they may not see it, 403 if only see it)."""
    user = request.user
    if kind == "judge":
        if not access.is_admin(user):
            raise PermissionDenied("Only admins remove model judges.")
        return get_object_or_404(ModelJudge.objects.select_related("user", "pool"), pk=pk)
    if kind == "pool":
        if not access.is_admin(user):
            raise PermissionDenied("Only admins remove pools.")
        return get_object_or_404(Pool, pk=pk)
    if kind == "configuration":
        target = get_object_or_404(access.configurations_for(user).select_related("pool", "team"), pk=pk)
        configuration = target
    elif kind == "run":
        target = get_object_or_404(
            Run.objects.select_related("configuration__pool", "configuration__team").filter(
                configuration__in=access.configurations_for(user)
            ),
            pk=pk,
        )
        configuration = target.configuration
    else:
        raise Http404("Nothing of that kind is removed here.")
    if not access.can_manage_configuration(user, configuration):
        raise PermissionDenied("Only the configuration's team and admins remove it or its runs.")
    return target


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


def remove(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """What removing the object would do, and the one button that fits: Delete, Archive or Restore."""
    target = _target(request, kind, pk)
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
            "archived": getattr(target, "archived_at", None),
            "can_delete": planned.action == DELETE,
            "can_archive": planned.action == ARCHIVE or (planned.action == DELETE and kind != "run"),
        },
    )


@require_POST
def remove_delete(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    target = _target(request, kind, pk)
    where = _list_of(target)
    try:
        planned = delete(target)
    except RemovalRefused as exc:
        messages.error(request, str(exc))
        return redirect("removal:remove", kind, pk)
    messages.success(request, f"Deleted {planned.what}, with {', '.join(planned.goes)}.")
    return redirect(where)


@require_POST
def remove_archive(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    target = _target(request, kind, pk)
    restore = request.POST.get("restore") == "1"
    try:
        archive(target, archived=not restore)
    except RemovalRefused as exc:
        messages.error(request, str(exc))
        return redirect("removal:remove", kind, pk)
    what = plan(target).what
    if restore:
        messages.success(request, f"Restored {what}: it is back in the lists.")
        return redirect(_page_of(target))
    messages.success(
        request,
        f"Archived {what}: hidden from lists, kept with its history for exports. Restore it from its page.",
    )
    return redirect(_list_of(target) if kind != "pool" else reverse("home"))

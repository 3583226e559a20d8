"""The capture pages: the endpoint form, the Capture button and a capture's progress (polled by htmx; a meta refresh without JavaScript). The configuration page's endpoint panel is
an inclusion tag (panel.py).

Who: everyone who sees the configuration (its pool's engineers, admins) sees its endpoint, redacted, and
its captures; its team and admins edit the endpoint, capture and cancel.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgments import access
from judgments.endpoints.engines import EndpointError
from judgments.models import SearchConfiguration
from judgments.models.capture import CaptureJob

from . import services, tasks
from .forms import CaptureForm, EndpointForm

MANAGE = "Only the configuration's team and admins may do this."


def _job(request: HttpRequest, job_id: int) -> CaptureJob:
    return get_object_or_404(
        CaptureJob.objects.select_related(
            "configuration__pool", "configuration__team", "endpoint", "run"
        ).filter(configuration__in=access.configurations_for(request.user)),
        pk=job_id,
    )


def _back(configuration: SearchConfiguration, anchor: str = "endpoint") -> str:
    return reverse("judgments:configuration-detail", args=[configuration.pk]) + f"#{anchor}"


def endpoint_edit(request: HttpRequest, configuration_id: int) -> HttpResponse:
    configuration = access.configuration_or_404(request, configuration_id, manage=MANAGE)
    current = configuration.endpoint
    if request.method == "POST":
        form = EndpointForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                endpoint, changed = services.set_endpoint(
                    configuration,
                    **{name: data[name] for name in ("kind", "url", "method", "template", "hits_path")},
                    **{name: data[name] for name in ("id_field", "score_field", "headers", "auth_kind")},
                    **{name: data[name] for name in ("auth_user", "auth_secret_env", "auth_header", "depth")},
                    auth_secret=form.secret(),
                    user=request.user,
                )
            except EndpointError as exc:
                form.add_error(None, str(exc))
            else:
                rescheduled = data["schedule"] != configuration.capture_schedule
                services.set_schedule(configuration, data["schedule"])
                if changed:
                    text = f"Endpoint version {endpoint.version} saved; earlier versions are kept."
                else:
                    text = f"The endpoint is unchanged (version {endpoint.version})."
                if rescheduled:
                    text += f" Schedule: {configuration.get_capture_schedule_display().lower()}."
                messages.success(request, text)
                return redirect(_back(configuration))
    else:
        initial = {"schedule": configuration.capture_schedule}
        if current is not None:
            shown = current.public()
            initial.update(
                {k: v for k, v in shown.items() if k in EndpointForm.base_fields and k != "headers"}
            )
            initial["headers"] = "\n".join(f"{n}: {v}" for n, v in shown["headers"])
        form = EndpointForm(initial=initial)
    return render(
        request,
        "capture/endpoint_form.html",
        {"configuration": configuration, "pool": configuration.pool, "form": form, "current": current},
    )


@require_POST
def capture_start(request: HttpRequest, configuration_id: int) -> HttpResponse:
    configuration = access.configuration_or_404(request, configuration_id, manage=MANAGE)
    form = CaptureForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
        return redirect(_back(configuration, "capture"))
    try:
        job = tasks.enqueue_capture(
            configuration, trigger=CaptureJob.Trigger.WEB, user=request.user, **form.cleaned_data
        )
    except services.CaptureError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Capture #{job.pk} started: {job.total} queries to {job.endpoint.public()['url']}."
        )
    return redirect(_back(configuration, "capture"))


def capture_job(request: HttpRequest, job_id: int) -> HttpResponse:
    """A capture's state: the page, or (htmx) the fragment the configuration page polls. When a polled
    capture ends, the whole page reloads to show the new run."""
    job = _job(request, job_id)
    context = {
        "job": job,
        "configuration": job.configuration,
        "pool": job.configuration.pool,
        "can_manage": access.can_manage_configuration(request.user, job.configuration),
    }
    if request.headers.get("HX-Request"):
        response = render(request, "capture/_job.html", context)
        if not job.active and request.GET.get("polling"):
            response["HX-Refresh"] = "true"
        return response
    return render(request, "capture/job.html", context)


@require_POST
def capture_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job(request, job_id)
    if not access.can_manage_configuration(request.user, job.configuration):
        raise PermissionDenied("Only the configuration's team and admins may cancel its captures.")
    if services.request_cancel(job):
        messages.info(request, f"Capture #{job.pk} is being cancelled; nothing will be stored.")
    else:
        messages.warning(request, f"Capture #{job.pk} had finished already.")
    return redirect(_back(job.configuration, "capture"))

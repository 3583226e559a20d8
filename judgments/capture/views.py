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
from judgments.endpoints.engines import KIND_FIELDS, KINDS, STARTING_TEMPLATES, EndpointError
from judgments.models import SearchConfiguration
from judgments.models.capture import CaptureJob

from . import client, history, services, tasks
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


TEST_DEPTH = 10
TEST_TIMEOUT = 10.0  # seconds: someone is waiting at the form


def _initial(configuration: SearchConfiguration, current) -> dict:
    """The form's starting values: the current version (secrets redacted), or the default template of
    the first kind for a new endpoint."""
    initial = {"schedule": configuration.capture_schedule, "kind": KINDS[0]}
    initial["template"] = STARTING_TEMPLATES[KINDS[0]]
    if current is not None:
        shown = current.public()
        initial.update({k: v for k, v in shown.items() if k in EndpointForm.base_fields and k != "headers"})
        initial["headers"] = "\n".join(f"{n}: {v}" for n, v in shown["headers"])
    query = configuration.pool.queries.exclude(text="").order_by("external_id").values("text").first()
    initial["test_query"] = query["text"] if query else ""
    return initial


def _test(configuration: SearchConfiguration, current, form: EndpointForm) -> dict:
    """Send the form's test query to the form's definition, unsaved: its top hits (with the pool's
    titles) or the error. Stores nothing."""
    text = form.cleaned_data["test_query"].strip()
    if not text:
        form.add_error("test_query", "Type a query to test with.")
        return {}
    try:
        spec = services.draft_spec(current, **form.definition())
        probe = client.probe(spec, text, "test", TEST_DEPTH, timeout=TEST_TIMEOUT)
    except EndpointError as exc:
        form.add_error(None, str(exc))
        return {}
    documents = {}
    if probe.ok:
        ids = [doc_id for doc_id, _ in probe.hits]
        found = configuration.pool.documents.filter(external_id__in=ids).only("external_id", "title")
        documents = {d.external_id: d for d in found}
    return {
        "query": text,
        "probe": probe,
        "hits": [
            {"rank": rank, "id": doc_id, "score": score, "document": documents.get(doc_id)}
            for rank, (doc_id, score) in enumerate(probe.hits or (), start=1)
        ],
        "secret_typed": bool(form.cleaned_data.get("auth_secret")),
    }


def endpoint_edit(request: HttpRequest, configuration_id: int) -> HttpResponse:
    """The endpoint form: the fields of the chosen kind, starting from the kind's default template;
    "Test" sends one query to the definition as it stands in the form (nothing stored); "Save" stores a
    new version."""
    configuration = access.configuration_or_404(request, configuration_id, manage=MANAGE)
    current = configuration.endpoint
    tested = {}
    if request.method == "POST":
        form = EndpointForm(request.POST)
        testing = request.POST.get("action") == "test"
        if form.is_valid() and testing:
            tested = _test(configuration, current, form)
        elif form.is_valid():
            data = form.cleaned_data
            try:
                endpoint, changed = services.set_endpoint(
                    configuration, **form.definition(), depth=data["depth"], user=request.user
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
        form = EndpointForm(initial=_initial(configuration, current))
    return render(
        request,
        "capture/endpoint_form.html",
        {
            "configuration": configuration,
            "pool": configuration.pool,
            "form": form,
            "current": current,
            "tested": tested,
            "starting_templates": STARTING_TEMPLATES,
            "kind_fields": {kind: list(fields) for kind, fields in KIND_FIELDS.items()},
        },
    )


def endpoint_history(request: HttpRequest, configuration_id: int) -> HttpResponse:
    """Two versions side by side, changed lines marked (?a=<older>&b=<newer>; by default the current
    version against the one before it)."""
    configuration = access.configuration_or_404(request, configuration_id)
    versions = list(configuration.endpoints.select_related("created_by").order_by("-version"))
    if not versions:
        messages.info(request, f"{configuration.name} has no endpoint yet.")
        return redirect(_back(configuration))
    by_number = {v.version: v for v in versions}

    def pick(name: str, default):
        try:
            return by_number.get(int(request.GET.get(name, "")), default)
        except ValueError:
            return default

    new = pick("b", versions[0])
    old = pick("a", next((v for v in versions if v.version < new.version), new))
    return render(
        request,
        "capture/endpoint_history.html",
        {
            "configuration": configuration,
            "pool": configuration.pool,
            "versions": versions,
            "old": old,
            "new": new,
            "fields": history.diff(old, new),
            "current": versions[0],
            "can_manage": access.can_manage_configuration(request.user, configuration),
        },
    )


@require_POST
def endpoint_restore(request: HttpRequest, configuration_id: int) -> HttpResponse:
    """Make an earlier version current again, as a new version (the history only grows)."""
    configuration = access.configuration_or_404(request, configuration_id, manage=MANAGE)
    try:
        version = int(request.POST.get("version", ""))
        endpoint, changed = services.restore_endpoint(configuration, version, request.user)
    except (ValueError, EndpointError) as exc:
        messages.error(request, f"Nothing restored: {exc}.")
        return redirect(reverse("capture:endpoint-history", args=[configuration.pk]))
    if changed:
        messages.success(
            request, f"Version {version} restored as version {endpoint.version}; the others are kept."
        )
    else:
        messages.info(request, f"Version {version} is the current definition already.")
    return redirect(_back(configuration))


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

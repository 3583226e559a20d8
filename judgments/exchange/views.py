"""Web pages to move files in and out of a pool: import (upload → preview → confirm), export (streamed
downloads), a new configuration, and the user's API token.

The upload runs the real import in a savepoint that is rolled back (`imports.checks.dry_run`): a file
with problems is shown with them (line, field) and not stored at all; a good one waits between
preview and confirm in the `Upload` table (its content in parts: `uploads`), never in process memory, so
any web worker can finish what another started. A confirm that is refused (the pool changed meanwhile)
drops the file too. No step holds the whole file in the web worker: Django keeps a large upload in a
temporary file, it is stored and read back in parts, and a large file's import runs in a child process
(`upload_import`).

Who may do what (access.py): admins import every kind and download every export; engineers upload
runs to their own team's configurations, create configurations for their teams, and download the
queries, documents, their team's runs and the pool's scores; raters get 403, outsiders 404.
"""

from __future__ import annotations

import datetime
import json

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from judgments import access
from judgments.models import Pool, Run, SearchConfiguration, Team, Upload

from . import uploads
from .exports.catalog import POOL_EXPORTS, may_export, may_export_run
from .exports.grades import combined_note, qrels_filename
from .exports.runs import run_chunks, run_filename
from .exports.stream import ExportError
from .formats import MAX_PROBLEMS, Problem
from .upload_import import import_upload

PREVIEW_LINES = 20
HEAD_BYTES = 64 * 1024  # the start of the file the preview reads its lines from
UPLOAD_KEEP = datetime.timedelta(days=1)

# kind -> (label, who may import it)
IMPORT_KINDS: dict[str, tuple[str, str]] = {
    "run": ("TREC run for a configuration (qid Q0 docid rank score tag)", access.ENGINEER),
    "queries": (
        "Queries: TSV qid<TAB>text[<TAB>tags], or JSON lines {id, text, information_need, fields, tags}",
        access.ADMIN,
    ),
    "documents": ("Documents: JSON lines {id, title, body, url, ...}", access.ADMIN),
    "qrels": ("TREC qrels (qid 0 docid grade), as one rater's judgments", access.ADMIN),
    "judgments-csv": (
        "Judgments: Quepid CSV query,docid,rating (query by id or text; ratings 3 or 3.0)",
        access.ADMIN,
    ),
    "judgments-rre": (
        "Judgments: RRE ratings JSON (Quepid's RRE export or RRE's ratings.json)",
        access.ADMIN,
    ),
    "judgments-rater-csv": ("Judgments: per-rater CSV query_id,doc_id,<rater>...", access.ADMIN),
    "judgments-jsonl": ("Judgments: JSON lines with every field (full fidelity)", access.ADMIN),
}


def _may_import(user, kind: str) -> bool:
    audience = IMPORT_KINDS[kind][1]
    return access.is_admin(user) or (audience == access.ENGINEER and access.is_engineer(user))


def _exchange_pool(request: HttpRequest, pool_name: str) -> Pool:
    """The pool, for import and export pages: 404 unless the user sees it, 403 for raters and users
    without a role (they see the pool but move no file in or out)."""
    found = access.get_pool_or_404(request.user, access.pools_for, name=pool_name)
    if not access.is_engineer(request.user):
        raise PermissionDenied
    return found


def _manageable_configurations(user, pool: Pool):
    configurations = SearchConfiguration.objects.filter(pool=pool).select_related("team").order_by("name")
    if access.is_admin(user):
        return configurations
    return configurations.filter(team__members=user)


# --- Import: upload, preview, confirm --------------------------------------------------------------


class UploadForm(forms.Form):
    kind = forms.ChoiceField()
    file = forms.FileField()
    configuration = forms.ModelChoiceField(queryset=SearchConfiguration.objects.none(), required=False)
    order = forms.ChoiceField(
        choices=[
            ("score", "score (trec_eval's order: score descending, ties by docid)"),
            ("rank", "rank column"),
        ],
        initial="score",
        required=False,
    )
    rater = forms.CharField(
        required=False,
        max_length=150,
        help_text="qrels and Quepid CSV: the username the grades belong to (a non-login account is created if "
        "missing). Empty: an account named after the file.",
    )
    grade_map = forms.CharField(required=False, max_length=200, help_text='qrels only, e.g. "-2:0,-1:skip"')

    def __init__(self, *args, user, pool, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [
            (k, label) for k, (label, _) in IMPORT_KINDS.items() if _may_import(user, k)
        ]
        self.fields["configuration"].queryset = _manageable_configurations(user, pool)

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.UPLOAD_MAX_BYTES:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; the limit is {settings.UPLOAD_MAX_BYTES // (1024 * 1024)} MB."
            )
        if upload.size == 0:
            raise forms.ValidationError("The file is empty.")
        return upload

    def clean(self):
        data = super().clean()
        if data.get("kind") == "run" and not data.get("configuration"):
            self.add_error("configuration", "Choose the configuration this run belongs to.")
        return data


def import_start(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = _exchange_pool(request, pool_name)
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if request.method == "POST" and length > settings.UPLOAD_MAX_BYTES + 64 * 1024:
        # Refuse before Django reads the body into temporary files.
        messages.error(
            request,
            f"The upload is larger than the limit of {settings.UPLOAD_MAX_BYTES // (1024 * 1024)} MB.",
        )
        return redirect("exchange:import", found.name)
    form = UploadForm(
        request.POST or None, request.FILES or None, user=request.user, pool=found, initial=request.GET
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        options = {
            "order": data.get("order") or "score",
            "rater": data.get("rater", ""),
            "grade_map": data.get("grade_map", ""),
        }
        if data["kind"] == "run":
            options["configuration"] = data["configuration"].pk
        file = data["file"]  # on disk past FILE_UPLOAD_MAX_MEMORY_SIZE: never read into memory whole
        upload = Upload(
            pool=found,
            uploaded_by=request.user,
            kind=data["kind"],
            filename=file.name[:255],
            options=options,
        )
        uploads.measure(upload, file)
        # Checked before anything is stored: a refused file leaves no trace, not even its content.
        checked = import_upload(upload, request.user, check_only=True, file=file)
        if checked.problems:
            file.seek(0)
            return _render_preview(
                request, found, upload, checked.problems, checked.summary, head=file.read(HEAD_BYTES)
            )
        Upload.objects.filter(uploaded_by=request.user, created_at__lt=timezone.now() - UPLOAD_KEEP).delete()
        file.seek(0)
        uploads.store(upload, file)
        request.session[_checked_key(upload)] = (
            checked.summary
        )  # the preview shows it without a second dry run
        return redirect("exchange:import-preview", found.name, upload.pk)
    pending = Upload.objects.filter(pool=found, uploaded_by=request.user).order_by("-created_at")
    return render(
        request,
        "exchange/import.html",
        {
            "pool": found,
            "form": form,
            "pending": pending,
            "limit_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
            "can_create_configuration": Team.objects.filter(members=request.user).exists()
            or access.is_admin(request.user),
        },
    )


def _preview_rows(head: bytes, problems: list[Problem]) -> tuple[list[dict], list[Problem]]:
    """The first lines of the file (`head`: its start) with their problems; and the problems of the
    lines not shown."""
    by_line: dict[int, list[Problem]] = {}
    for problem in problems:
        by_line.setdefault(problem.line, []).append(problem)
    rows = []
    for number, raw in enumerate(head.splitlines()[:PREVIEW_LINES], start=1):
        text = raw.decode("utf-8", "replace")
        rows.append(
            {
                "line": number,
                "text": text[:500] + ("…" if len(text) > 500 else ""),
                "problems": by_line.pop(number, []),
            }
        )
    rest = [p for line in sorted(by_line) for p in by_line[line]]
    return rows, rest


def _checked_key(upload: Upload) -> str:
    return f"exchange-upload-{upload.pk}-summary"


def import_preview(request: HttpRequest, pool_name: str, upload_id: int) -> HttpResponse:
    found = _exchange_pool(request, pool_name)
    upload = get_object_or_404(Upload, pk=upload_id, pool=found, uploaded_by=request.user)
    if request.method == "POST":
        request.session.pop(_checked_key(upload), None)
        done = import_upload(upload, request.user, check_only=False)
        result, summary, problems = done.result, done.summary, done.problems
        head = uploads.head(upload, HEAD_BYTES) if problems else b""
        upload.delete()  # imported, or refused: either way nothing of the file stays behind
        if not problems:
            messages.success(request, f"Imported {upload.filename}: {summary}")
            if isinstance(result, Run):
                return redirect("judgments:configuration-detail", result.configuration_id)
            return redirect("judgments:pool-detail", found.name)
        messages.error(request, "The import was refused; nothing was stored. The problems are listed below.")
        return _render_preview(request, found, upload, problems, summary, head=head)
    summary = request.session.pop(_checked_key(upload), None)
    if summary is not None:  # checked on upload a moment ago
        problems = []
    else:
        checked = import_upload(upload, request.user, check_only=True)
        summary, problems = checked.summary, checked.problems
    return _render_preview(request, found, upload, problems, summary, head=uploads.head(upload, HEAD_BYTES))


def _render_preview(
    request, found: Pool, upload: Upload, problems: list[Problem], summary: str, *, head: bytes
):
    """The preview page: the first lines (`head`: the file's start) with their problems; an unsaved
    upload (refused) offers a new upload instead of confirm and cancel."""
    rows, other_problems = _preview_rows(head, problems)
    configuration = None
    if upload.kind == "run":
        configuration = SearchConfiguration.objects.filter(
            pk=(upload.options or {}).get("configuration")
        ).first()
    return render(
        request,
        "exchange/preview.html",
        {
            "pool": found,
            "upload": upload,
            "kind_label": IMPORT_KINDS.get(upload.kind, (upload.kind,))[0],
            "configuration": configuration,
            "rows": rows,
            "problems": problems,
            "file_problems": [p for p in other_problems if p.line == 0],
            "later_problems": [p for p in other_problems if p.line != 0],
            "n_lines": upload.lines,
            "summary": summary,
            "max_problems": MAX_PROBLEMS,
        },
    )


@require_POST
def import_cancel(request: HttpRequest, pool_name: str, upload_id: int) -> HttpResponse:
    found = _exchange_pool(request, pool_name)
    Upload.objects.filter(pk=upload_id, pool=found, uploaded_by=request.user).delete()
    messages.info(request, "The upload was discarded.")
    return redirect("exchange:import", found.name)


# --- Export page and downloads ---------------------------------------------------------------------


def _download(chunks, filename: str, content_type: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def export_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = _exchange_pool(request, pool_name)
    user = request.user
    available = [e for e in POOL_EXPORTS.values() if may_export(user, e)]
    shown = (  # whose runs the user may download: access.may_see_rankings
        access.configurations_for(user).filter(pool=found).select_related("team").order_by("name")
        if found.share_rankings
        else _manageable_configurations(user, found)
    )
    configurations = shown.annotate(n_runs=Count("runs"))
    runs = Run.objects.filter(configuration__in=configurations).order_by("configuration__name", "-id")
    by_configuration: dict[int, list[Run]] = {}
    for run in runs.select_related("configuration"):
        by_configuration.setdefault(run.configuration_id, []).append(run)
    return render(
        request,
        "exchange/export.html",
        {
            "pool": found,
            "pool_exports": [(e, e.filename(found)) for e in available if e.audience == access.ENGINEER],
            "judgment_exports": [(e, e.filename(found)) for e in available if e.audience == access.ADMIN],
            "note": combined_note(found),
            "exact_note": combined_note(found, "exact"),
            "qrels_filename": qrels_filename(found),
            "configurations": [(c, by_configuration.get(c.pk, [])) for c in configurations],
            "has_scores": Run.objects.filter(configuration__pool=found).exists(),
        },
    )


def export_download(request: HttpRequest, pool_name: str, kind: str) -> HttpResponse:
    found = _exchange_pool(request, pool_name)
    export = POOL_EXPORTS.get(kind)
    if export is None:
        raise Http404("No such export")
    if not may_export(request.user, export):
        raise PermissionDenied
    try:
        return _download(export.open(found, request.user), export.filename(found), export.content_type)
    except (ExportError, ValueError) as exc:
        messages.error(request, f"This export is not possible: {exc}")
        return redirect("exchange:export", found.name)


def run_download(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(
        access.runs_for(request.user).select_related("configuration__pool", "configuration__team"), pk=run_id
    )
    if not may_export_run(request.user, run):
        raise PermissionDenied
    return _download(run_chunks(run), run_filename(run), "text/plain; charset=utf-8")


# --- Configurations --------------------------------------------------------------------------------


class ConfigurationForm(forms.ModelForm):
    parameters = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"k1": 1.2, "b": 0.75}'}),
        help_text="A JSON object (optional).",
    )

    class Meta:
        model = SearchConfiguration
        fields = ("name", "team", "description", "model_name")

    def __init__(self, *args, user, pool, **kwargs):
        super().__init__(*args, **kwargs)
        self.pool = pool
        teams = Team.objects.all() if access.is_admin(user) else Team.objects.filter(members=user)
        self.fields["team"].queryset = teams
        if teams.count() == 1:
            self.fields["team"].initial = teams.first()
        self.fields["description"].widget.attrs["rows"] = 2

    def clean_name(self):
        name = self.cleaned_data["name"]
        if SearchConfiguration.objects.filter(pool=self.pool, name=name).exists():
            raise forms.ValidationError(f"Pool {self.pool.name} already has a configuration named {name}.")
        return name

    def clean_parameters(self):
        text = (self.cleaned_data.get("parameters") or "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            ) from None
        if not isinstance(value, dict):
            raise forms.ValidationError('Parameters must be a JSON object, like {"k1": 1.2}.')
        return value


def configuration_new(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.get_pool_or_404(request.user, access.scored_pools_for, name=pool_name)
    user = request.user
    if not (access.is_admin(user) or Team.objects.filter(members=user).exists()):
        raise PermissionDenied
    form = ConfigurationForm(request.POST or None, user=user, pool=found)
    if request.method == "POST" and form.is_valid():
        configuration = form.save(commit=False)
        configuration.pool = found
        configuration.parameters = form.cleaned_data["parameters"]
        configuration.save()
        if request.POST.get("next") == "endpoint":
            messages.success(
                request, f"Configuration {configuration.name} created. Now set its search endpoint."
            )
            return redirect("capture:endpoint-edit", configuration.pk)
        messages.success(request, f"Configuration {configuration.name} created. Upload its first run below.")
        return redirect(
            f"{reverse('exchange:import', args=[found.name])}?kind=run&configuration={configuration.pk}"
        )
    return render(request, "exchange/configuration_new.html", {"pool": found, "form": form})


# --- API token -------------------------------------------------------------------------------------


def api_token(request: HttpRequest) -> HttpResponse:
    """Show the user's API token; POST makes a new one (the old one stops working)."""
    if request.method == "POST":
        Token.objects.filter(user=request.user).delete()
        Token.objects.create(user=request.user)
        messages.success(request, "A new token was made; the old one no longer works.")
        return redirect("exchange:api-token")
    token = Token.objects.filter(user=request.user).first()
    example = access.pools_for(request.user).values_list("name", flat=True).first()
    return render(
        request,
        "exchange/api_token.html",
        {"token": token, "example_pool": example or "POOL", "api_root": request.build_absolute_uri("/api/")},
    )

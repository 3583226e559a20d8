"""The import of a web upload (its dry run for the preview, or the real thing on confirm), in this process
or, for a file larger than settings.UPLOAD_CHILD_MB, in a child process (`manage.py import_upload`).

Parsing holds the file and its working arrays in memory (a run's fast path: about six times the file).
In a child, that memory goes back to the system when the child exits: a web worker stays small however
large the files it takes (tests/bench/run.py bench_upload). The child gets the same database (its
DATABASE_URL is built from this connection) and answers in JSON: summary, problems, the new run's id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from judgments import access
from judgments.models import Run, SearchConfiguration, Upload

from .formats import FormatError, Problem, parse_grade_map
from .imports import import_run
from .imports.calls import import_call
from .imports.checks import dry_run
from .uploads import open_content


@dataclass
class Outcome:
    result: object = None  # the Run, or the import's summary object (in this process only)
    summary: str = ""
    problems: list[Problem] = field(default_factory=list)
    run_id: int | None = None


def import_upload(upload: Upload, user, *, check_only: bool, file=None) -> Outcome:
    """Import (or dry-run) `upload` as `user`. `file`: its content as a binary file (the request's
    upload, before the Upload is stored); default: the stored parts."""
    if upload.size > settings.UPLOAD_CHILD_MB * 1024 * 1024:
        return _in_child(upload, user, check_only=check_only, file=file)
    return import_here(upload, user, check_only=check_only, file=file)


def import_here(upload: Upload, user, *, check_only: bool, file=None) -> Outcome:
    options = upload.options or {}
    content = file if file is not None else open_content(upload)
    if upload.kind == "run":
        configuration = SearchConfiguration.objects.filter(
            pk=options.get("configuration"), pool=upload.pool
        ).first()
        if configuration is None or not access.can_manage_configuration(user, configuration):
            problem = Problem(
                0, "configuration", "you may not submit runs for this configuration (it is not your team's)"
            )
            return Outcome(problems=[problem])

        def call():
            return import_run(
                configuration,
                content,
                name=upload.filename,
                order=options.get("order", "score"),
                submitted_by=user,
                source=Run.Source.UPLOAD,
            )

    else:
        if not access.is_admin(user):
            return Outcome(problems=[Problem(0, "kind", "only admins import this kind of file")])
        if upload.kind == "qrels" and options.get("grade_map"):
            try:
                parse_grade_map(options["grade_map"])
            except ValueError as exc:
                return Outcome(problems=[Problem(0, "grade map", str(exc))])
        call = import_call(upload.pool, upload.kind, content, upload.filename, options, user)
    try:
        # The summary is worked out inside the (dry) run, while its rows still exist.
        result, summary = dry_run(_with_summary, call) if check_only else _with_summary(call)
    except FormatError as exc:
        return Outcome(problems=exc.problems)
    return Outcome(result, summary, [], result.pk if isinstance(result, Run) and not check_only else None)


def _with_summary(call):
    result = call()
    return result, summary_text(result)


def summary_text(result) -> str:
    if isinstance(result, Run):
        n_queries = result.rankings.count()
        return f"A new run of {result.configuration.name} with {n_queries} ranked queries."
    return str(result)


# --- The child process -------------------------------------------------------------------------------


def _database_url() -> str:
    """This process's database as a URL, for the child (the embedded server's socket included)."""
    connection.ensure_connection()
    d = connection.settings_dict
    auth = quote(d["USER"], safe="") + (":" + quote(d["PASSWORD"], safe="") if d["PASSWORD"] else "")
    return f"postgres://{auth}@{quote(str(d['HOST']), safe='')}:{d['PORT'] or 5432}/{d['NAME']}"


def _in_child(upload: Upload, user, *, check_only: bool, file=None) -> Outcome:
    spec = {
        "pool": upload.pool_id,
        "user": user.pk,
        "kind": upload.kind,
        "filename": upload.filename,
        "options": upload.options or {},
        "size": upload.size,
        "check": check_only,
    }
    copied = None
    try:
        if file is None:
            spec["upload"] = upload.pk
        elif hasattr(file, "temporary_file_path"):  # Django's upload on disk: the child reads it there
            spec["path"] = file.temporary_file_path()
        else:
            with tempfile.NamedTemporaryFile(delete=False, suffix=".upload") as copied:
                while chunk := file.read(1 << 20):
                    copied.write(chunk)
            spec["path"] = copied.name
        env = {**os.environ, "DATABASE_URL": _database_url()}
        env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        env.pop("DB_POOL_SIZE", None)  # one connection is all the child needs
        done = subprocess.run(
            # `python -m django`: works from a checkout and from an installed package alike
            [sys.executable, "-m", "django", "import_upload"],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    finally:
        if copied is not None:
            os.unlink(copied.name)
    if done.returncode != 0:
        raise RuntimeError(f"the import's child process failed: {done.stderr.strip()[-2000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    problems = [Problem(*p) for p in answer["problems"]]
    run_id = answer.get("run")
    result = Run.objects.select_related("configuration").get(pk=run_id) if run_id else None
    return Outcome(result, answer["summary"], problems, run_id)


def run_child(spec: dict, stdout) -> None:
    """The child's side (`manage.py import_upload`): import as asked, answer one JSON line."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(pk=spec["user"])
    if spec.get("upload"):
        upload = Upload.objects.select_related("pool").get(pk=spec["upload"])
        file = None
    else:
        upload = Upload(
            pool_id=spec["pool"],
            uploaded_by=user,
            kind=spec["kind"],
            filename=spec["filename"],
            options=spec["options"],
            size=spec["size"],
        )
        file = open(spec["path"], "rb")  # noqa: SIM115 (closed below)
    try:
        outcome = import_here(upload, user, check_only=spec["check"], file=file)
    finally:
        if file is not None:
            file.close()
    stdout.write(
        json.dumps(
            {
                "summary": outcome.summary,
                "problems": [[p.line, p.field, p.message] for p in outcome.problems],
                "run": outcome.run_id,
            }
        )
        + "\n"
    )

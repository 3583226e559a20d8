"""One import of an uploaded file as a call without arguments, shared by the web import and the API."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import transaction

from judgments.models import Pool

from .documents import import_documents
from .judgments import import_judgments
from .trec import import_qrels, import_queries


def import_call(pool: Pool, kind: str, stream, name: str, options: dict, user) -> Callable[[], object]:
    """The import of a file of `kind` as a call without arguments (web and API; a dry run wraps it,
    so that a rater account named in `options` is created only by the real import, and kept only
    when the import succeeds)."""

    def call():
        # One transaction for the whole import, the rater account it may create included: a refused
        # file leaves nothing behind (the import services' own transactions become savepoints).
        with transaction.atomic():
            return _import(pool, kind, stream, name, options, user)

    return call


def _import(pool: Pool, kind: str, stream, name: str, options: dict, user):
    if kind == "queries":
        return import_queries(pool, stream, name=name)
    if kind == "documents":
        return import_documents(pool, stream, name=name)
    rater = _named_rater(options.get("rater") or "")
    if kind == "qrels":
        return import_qrels(
            pool, stream, name=name, rater=rater, grade_map=options.get("grade_map") or None, actor=user
        )
    fmt = kind.removeprefix("judgments-")
    return import_judgments(
        pool, stream, format=fmt, name=name, rater=rater if fmt in ("csv", "rre") else None, actor=user
    )


def _named_rater(username: str):
    """The account a file's grades go to, created without a usable password if missing (None: default)."""
    if not username:
        return None
    User = get_user_model()
    rater = User.objects.filter(username=username).first()
    if rater is None:
        rater = User(username=username)
        rater.set_unusable_password()
        rater.save()
    return rater

"""Helpers shared by the import services and their callers: dry runs and database refusals."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from django.db import DatabaseError, transaction

from judgments.exchange.formats import DISTRACTOR, MAX_PROBLEMS, FormatError, Problem

T = TypeVar("T")


class _Rollback(Exception):
    def __init__(self, result):
        super().__init__()
        self.result = result


def dry_run(import_function: Callable[..., T], *args, **kwargs) -> T:
    """Run an import service in a savepoint and roll it back: every check, including the database's,
    and the exact counts, with nothing written (the web preview). FormatError passes through."""
    try:
        with transaction.atomic():
            raise _Rollback(import_function(*args, **kwargs))
    except _Rollback as done:
        return done.result


def refuse_distractors(pool, name: str, grades: Iterable[tuple[int, int | None]]) -> None:
    """FormatError naming the lines (line, grade) that grade -1 when `pool` has no distractor grade."""
    refused = pool.grade_problem(DISTRACTOR)
    if refused is None:
        return
    lines = [line for line, grade in grades if grade == DISTRACTOR]
    if lines:
        message = refused + " (or map it: --map-grades=-1:0, or -1:skip)"
        raise FormatError(name, [Problem(line, "grade", message) for line in lines[:MAX_PROBLEMS]])


def database_refused(name: str, exc: DatabaseError) -> FormatError:
    """A write that the file checks did not foresee: still a clean, all-or-nothing error."""
    text = str(exc).strip()
    message = text.splitlines()[0] if text else type(exc).__name__
    return FormatError(
        name, [Problem(0, "file", f"the database refused the file; nothing was stored ({message})")]
    )

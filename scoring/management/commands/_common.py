"""Shared by the scoring commands (the leading underscore keeps Django from listing it as a command).

Input files are read as binary lines; a byte-count progress bar goes to stderr, and only when stderr
is a terminal. A bad file becomes a CommandError listing "file:line: field: message" per problem.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

from django.core.management.base import CommandError
from tqdm import tqdm

from judgments.formats import FormatError
from judgments.models import Pool, no_whitespace


def get_pool(name: str, *, create: bool = False) -> Pool:
    """The pool named `name`; created when `create` (its name checked first)."""
    pool = Pool.objects.filter(name=name).first()
    if pool is not None:
        return pool
    if not create:
        raise CommandError(f"No pool named {name!r}")
    check_name(name, "pool")
    return Pool.objects.create(name=name)


def check_name(name: str, what: str) -> None:
    try:
        no_whitespace(name)
    except Exception:
        raise CommandError(f"A {what} name may not be empty or contain whitespace: {name!r}") from None


def progress_wanted(command) -> bool:
    return bool(getattr(command.stderr, "isatty", lambda: False)())


def input_lines(command, path: str, *, desc: str) -> Iterable[bytes]:
    """The file (or stdin for "-") as binary lines, with a progress bar on a terminal."""
    if path == "-":
        handle, size = sys.stdin.buffer, None
    else:
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed by _lines
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
        size = os.fstat(handle.fileno()).st_size
    bar = None
    if progress_wanted(command):
        bar = tqdm(total=size, unit="B", unit_scale=True, desc=desc, file=command.stderr._out, leave=False)
    return _lines(handle, bar)


def _lines(handle, bar) -> Iterator[bytes]:
    try:
        pending = 0
        for line in handle:
            if bar is not None:
                pending += len(line)
                if pending > 1 << 20:
                    bar.update(pending)
                    pending = 0
            yield line
        if bar is not None:
            bar.update(pending)
    finally:
        if bar is not None:
            bar.close()
        if handle is not sys.stdin.buffer:
            handle.close()


def input_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def import_failed(exc: FormatError) -> CommandError:
    count = len(exc.problems)
    return CommandError(
        f"{exc.name}: {count} problem{'s' if count != 1 else ''}, nothing was imported:\n{exc}"
    )

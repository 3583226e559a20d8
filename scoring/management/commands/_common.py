"""Shared by the scoring commands (the leading underscore keeps Django from listing it as a command).

The file handling is the import/export commands' (`judgments/management/commands/_exchange.py`): input
read as binary lines, a byte-count progress bar on stderr only when stderr is a terminal, and a bad
file turned into a CommandError listing "file:line: field: message" per problem.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.core.management.base import CommandError

from judgments.management.commands._exchange import ExchangeCommand, get_pool
from judgments.management.commands._exchange import format_error as import_failed
from judgments.management.commands._exchange import input_lines as _input_lines
from judgments.models import no_whitespace

__all__ = ["ExchangeCommand", "check_name", "get_pool", "import_failed", "input_lines", "input_name"]


def check_name(name: str, what: str) -> None:
    try:
        no_whitespace(name)
    except Exception:
        raise CommandError(f"A {what} name may not be empty or contain whitespace: {name!r}") from None


def input_lines(command, path: str, *, desc: str) -> Iterable[bytes]:
    """The file (or stdin for "-") as binary lines, with a progress bar on a terminal."""
    lines, _name = _input_lines(command, path, desc=desc)
    return lines


def input_name(path: str) -> str:
    return "<stdin>" if path == "-" else path

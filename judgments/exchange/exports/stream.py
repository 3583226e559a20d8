"""How exports read rows: a server-side cursor for rows Python formats, `COPY ... TO STDOUT` for lines
PostgreSQL formats, and blocks of lines for fewer, larger writes.

COPY is the fast path: the server formats the lines (many per row), Python passes bytes through. Its
text format escapes backslashes and control characters inside a row; `copy_blocks` undoes that, and
`copy_trec_blocks` also refuses what a whitespace-separated TREC file cannot hold.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator

from django.db import connection, transaction

CHUNK_ROWS = 2000


class ExportError(ValueError):
    """The pool holds data that the format cannot represent (the message says what and where)."""


# A control character in an id would break a line format (trec_eval and the parsers split on it). The
# database keeps whitespace out of ids, not every control character, so streamed lines are checked.
_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
# COPY's text format escapes these (and nothing else when the data holds no other control character).
_COPY_ESCAPE = re.compile(rb"\\[\\bfnrtv]")
_COPY_UNESCAPED = {
    b"\\\\": b"\\",
    b"\\b": b"\b",
    b"\\f": b"\f",
    b"\\n": b"\n",
    b"\\r": b"\r",
    b"\\t": b"\t",
    b"\\v": b"\v",
}


def refuse_control(where: str) -> ExportError:
    return ExportError(f"{where} has an id with a control character, which a TREC file cannot hold.")


def unescape(block: bytes) -> bytes:
    """A row of COPY's text format as the bytes of the text it holds (one text column)."""
    if b"\\" not in block:
        return block
    if b"\\\\" not in block:  # the usual case: only the newlines between the lines of a block
        plain = block.replace(b"\\n", b"\n")
        if b"\\" not in plain:
            return plain
    return _COPY_ESCAPE.sub(lambda m: _COPY_UNESCAPED[m.group()], block)


def _trec_checked(what: str) -> Callable[[bytes], bytes]:
    def check(block: bytes) -> bytes:
        if b"\\" in block:
            if b"\\\\" not in block:
                block = block.replace(b"\\n", b"\n")
                if b"\\" in block:  # \t, \b...: a control character, escaped by COPY
                    raise refuse_control(what)
            else:
                block = unescape(block)
        if _CONTROL.search(block):
            raise refuse_control(what)
        return block

    return check


def copy_blocks(sql: str, params: list, *, setup: Iterable[str] = ()) -> Iterator[bytes]:
    """``COPY (sql) TO STDOUT`` of a query with one text column, each row a block of complete lines
    (joined by newlines), as bytes. The server streams; nothing holds more than a row. Many lines per
    row: Python works per block, not per line. `setup`: statements run first in the same transaction
    (SET LOCAL ...)."""
    return _copy(sql, params, unescape, setup)


def copy_rows(sql: str, params: list, *, setup: Iterable[str] = ()) -> Iterator[bytes]:
    """The rows of ``COPY (sql) TO STDOUT`` as COPY writes them (text format, newline included)."""
    return _copy(sql, params, bytes, setup)


def copy_trec_blocks(sql: str, params: list, *, what: str) -> Iterator[bytes]:
    """copy_blocks for whitespace-separated lines: an id with a control character stops the export
    with an ExportError naming `what`."""
    return _copy(sql, params, _trec_checked(what), ())


def _copy(sql: str, params: list, finish: Callable[[bytes], bytes], setup: Iterable[str]) -> Iterator[bytes]:
    setup = list(setup)
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in setup:
            cursor.execute(statement)
        # The driver's own cursor: COPY with client-side parameters, rows as raw bytes.
        with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT", params) as copy:
            try:
                for row in copy:
                    yield finish(bytes(row))
            except GeneratorExit:
                # Abandoned (a client went away): read the rest rather than let psycopg send a cancel
                # request, which arrives asynchronously and can cancel the connection's *next*
                # statement when the server had already sent everything (a flaky test showed it).
                for _ in copy:
                    pass
                raise


def named_rows(sql: str, params: list, rows: int = CHUNK_ROWS) -> Iterator[tuple]:
    """The rows of `sql` through a named server-side cursor, `rows` at a time."""
    # A named cursor lives in a transaction (Django adds WITH HOLD only in autocommit for querysets).
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.itersize = rows
        cursor.execute(sql, params)
        while True:
            batch = cursor.fetchmany(rows)
            if not batch:
                return
            yield from batch


def blocks(lines: Iterable[str], size: int = 1000) -> Iterator[str]:
    """Join generated lines into blocks: fewer, larger writes to stdout or the socket."""
    iterator = iter(lines)
    while True:
        block = "".join(itertools.islice(iterator, size))
        if not block:
            return
        yield block

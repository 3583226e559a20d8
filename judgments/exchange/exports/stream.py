"""How exports read rows: a server-side cursor for rows Python formats, `COPY ... TO STDOUT` for lines
PostgreSQL formats, and blocks of lines for fewer, larger writes.

COPY is the fast path: the server formats the lines (many per row), Python passes bytes through;
`copy_trec_blocks` also refuses what a whitespace-separated TREC file cannot hold.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

from django.db import connection, transaction
from django.db.models.functions import Collate

from judgments import pgcopy

CHUNK_ROWS = 2000

# Every export lists its lines by query id, then document id, in code point order whatever the
# database's locale (PostgreSQL's "C" collation compares UTF-8 bytes, which is code point order, as
# Python's sorted() does): one order, independent of how or in which order a pool was filled.
ID_COLLATION = "C"


def by_id(column: str) -> str:
    """An SQL ORDER BY term for an id column in the exports' order."""
    return f'{column} COLLATE "{ID_COLLATION}"'


def id_order(field: str) -> Collate:
    """An ORM order_by() term for an id field in the exports' order."""
    return Collate(field, ID_COLLATION)


class ExportError(ValueError):
    """The pool holds data that the format cannot represent (the message says what and where)."""


# A control character in an id would break a line format (trec_eval and the parsers split on it). The
# database keeps whitespace out of ids, not every control character, so streamed lines are checked.
_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def refuse_control(where: str) -> ExportError:
    return ExportError(f"{where} has an id with a control character, which a TREC file cannot hold.")


def copy_blocks(sql: str, params: list, *, setup: Iterable[str] = ()) -> Iterator[bytes]:
    """``COPY (sql) TO STDOUT`` of a query with one text column, each row a block of complete lines
    (joined by newlines), as bytes ending in a newline. The server streams; nothing holds more than a
    row. Many lines per row: Python works per block, not per line. `setup`: statements run first in the
    same transaction (SET LOCAL ...). COPY's binary format carries the text as it is (the text format
    escapes every newline, and undoing that took more time than the rest of an export's Python)."""
    return _copy(sql, params, setup)


def copy_trec_blocks(sql: str, params: list, *, what: str, setup: Iterable[str] = ()) -> Iterator[bytes]:
    """copy_blocks for whitespace-separated lines: an id with a control character stops the export
    with an ExportError naming `what`."""
    for block in _copy(sql, params, setup):
        if _CONTROL.search(block):
            raise refuse_control(what)
        yield block


def _copy(sql: str, params: list, setup: Iterable[str]) -> Iterator[bytes]:
    setup = list(setup)
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in setup:
            cursor.execute(statement)
        # The driver's own cursor: COPY with client-side parameters, rows as raw bytes.
        with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT binary)", params) as copy:
            try:
                # One text value per row, each a block of lines: a newline ends its last line.
                yield from pgcopy.column_values(copy, suffix=b"\n")
            except GeneratorExit:
                # Abandoned (a client went away): read the rest rather than let psycopg send a cancel
                # request, which arrives asynchronously and can cancel the connection's *next*
                # statement when the server had already sent everything (a flaky test showed it).
                for _ in copy:
                    pass
                raise


def named_rows(
    sql: str, params: list, rows: int = CHUNK_ROWS, *, setup: Iterable[str] = ()
) -> Iterator[tuple]:
    """The rows of `sql` through a named server-side cursor, `rows` at a time; `setup`: statements run
    first in the same transaction (SET LOCAL ...)."""
    # A named cursor lives in a transaction (Django adds WITH HOLD only in autocommit for querysets).
    with transaction.atomic():
        with connection.cursor() as plain:
            for statement in setup:
                plain.execute(statement)
        with connection.chunked_cursor() as cursor:
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

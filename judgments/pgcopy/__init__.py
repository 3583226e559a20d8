"""Binary COPY in and out of PostgreSQL: the one place that knows the framing.

A binary COPY stream is a header (the signature, 4 bytes of flags, 4 bytes of header-extension length
and the extension), then the rows, then a trailer (-1 as a 16-bit field count). A row is its field count
(int16), then per field a length (int32, -1 for NULL) and the value, big-endian (see PostgreSQL's COPY).

Here: the framing, `copy_in` (a context manager: writes the header, hands psycopg's Copy over for the
rows, writes the trailer), `column_values` (the values of a one-column COPY out as psycopg hands them
over, for streaming text) and `timestamp`, none of which needs numpy (an export process starts without
it). In `rows` (`from judgments.pgcopy.rows import read_rows`): rows as numpy arrays, in (`write_rows`, `array_rows`) and out (`read_rows`,
`stream_rows`, `read_columns`, `read_array_rows`). A stream that is not what was asked for raises
CopyError.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager


class CopyError(RuntimeError):
    """The database sent a binary COPY stream other than the one asked for."""


SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
HEADER = SIGNATURE + bytes(8)  # no flags, no header extension
TRAILER = b"\xff\xff"
PG_EPOCH = 946_684_800  # 2000-01-01T00:00:00Z in Unix seconds
INT8_OID = 20
# The element type (pg_type oid) of an array value, by the big-endian kind of its elements.
ELEMENT_OIDS = {">i2": 21, ">i4": 23, ">i8": 20, ">f4": 700, ">f8": 701}


def timestamp(seconds: float | None = None) -> int:
    """A Unix time (now by default) as a binary COPY timestamp: microseconds since 2000-01-01 UTC."""
    return int(((time.time() if seconds is None else seconds) - PG_EPOCH) * 1_000_000)


# --- In ----------------------------------------------------------------------------------------------


@contextmanager
def copy_in(cursor, table: str, columns: Sequence[str], *, writer=None) -> Iterator:
    """COPY into `table` (`columns`): yields psycopg's Copy with the header written, for the caller to
    write rows (bytes); writes the trailer when the block ends without an error. Django's cursor logs the
    statement (DEBUG, assertNumQueries) but takes no psycopg `writer`; with one, the raw cursor copies."""
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    if writer is None:
        context = cursor.copy(statement)
    else:
        context = getattr(cursor, "cursor", cursor).copy(statement, writer=writer)
    with context as copy:
        copy.write(HEADER)
        yield copy
        copy.write(TRAILER)


# --- Out ---------------------------------------------------------------------------------------------


def column_values(chunks: Iterable, suffix: bytes = b"") -> Iterator[bytes]:
    """The values of a one-column binary COPY out, each followed by `suffix` (one copy per value), from
    psycopg's Copy (or its chunks): PostgreSQL sends a message per row (field count, length, bytes),
    the header before the first row and the trailer last. NULLs are left out; a stream without its
    header or trailer, or a row of another shape, raises CopyError."""
    header, ended = True, False
    for data in chunks:
        view = memoryview(data)
        if header:
            if bytes(view[: len(SIGNATURE)]) != SIGNATURE or len(view) < len(HEADER):
                raise CopyError("unexpected binary COPY stream from the database")
            view = view[len(HEADER) + int.from_bytes(view[15:19], "big") :]
            header = False
            if not view:
                continue
        if ended:
            raise CopyError("binary COPY rows after the trailer")
        if view == TRAILER:
            ended = True
            continue
        length = int.from_bytes(view[2:6], "big", signed=True)
        if view[:2] != b"\x00\x01" or len(view) != 6 + max(length, 0):
            raise CopyError("a binary COPY row that is not one value (one row per message expected)")
        if length >= 0:
            yield b"".join((view[6:], suffix))
    if not ended:
        raise CopyError("unexpected end of the binary COPY stream")

"""Binary COPY in and out of PostgreSQL with numpy: the one place that knows the framing.

A binary COPY stream is a header (the signature, 4 bytes of flags, 4 bytes of header-extension length
and the extension), then the rows, then a trailer (-1 as a 16-bit field count). A row is its field count
(int16), then per field a length (int32, -1 for NULL) and the value, big-endian (see PostgreSQL's COPY).
Rows of fixed-size fields are numpy structured arrays: `row_dtype` spells one, `empty_rows` makes rows
with the counts and lengths filled in.

In: `copy_in` (a context manager: writes the header, hands psycopg's Copy over for the rows, writes the
trailer) and `write_rows` (one array of rows). Out: `read_rows` (fixed-size rows as a structured array),
`stream_rows` (the same in blocks, for bounded memory), `read_columns` (one row of arrays) and
`read_stream` (the raw rows, for rows of varying size). A stream
that is not what was asked for raises CopyError.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np


class CopyError(RuntimeError):
    """The database sent a binary COPY stream other than the one asked for."""


SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
HEADER = SIGNATURE + bytes(8)  # no flags, no header extension
TRAILER = b"\xff\xff"
PG_EPOCH = 946_684_800  # 2000-01-01T00:00:00Z in Unix seconds
INT8_OID = 20
# A one-dimensional array value (after its length): the head, then (length, value) per element.
ARRAY_HEAD = np.dtype(
    [
        ("ndim", ">i4"),
        ("has_nulls", ">i4"),
        ("element_type", ">i4"),
        ("length", ">i4"),
        ("lower_bound", ">i4"),
    ]
)


def timestamp(seconds: float | None = None) -> int:
    """A Unix time (now by default) as a binary COPY timestamp: microseconds since 2000-01-01 UTC."""
    return int(((time.time() if seconds is None else seconds) - PG_EPOCH) * 1_000_000)


def row_dtype(*columns: tuple[str, object]) -> np.dtype:
    """Packed dtype of a binary COPY row: field count `nfields`, then `len_<name>` and `<name>` per column
    (`kind` a big-endian dtype such as ">i8", or any dtype spec for a composite value)."""
    spec: list[tuple] = [("nfields", ">i2")]
    for name, kind in columns:
        spec += [(f"len_{name}", ">i4"), (name, kind)]
    return np.dtype(spec)


def empty_rows(columns: Sequence[tuple[str, str]], count: int) -> np.ndarray:
    """`count` rows of `columns` (see row_dtype) with the field count and lengths set, values unset."""
    rows = np.empty(count, dtype=row_dtype(*columns))
    rows["nfields"] = len(columns)
    for name, kind in columns:
        rows[f"len_{name}"] = np.dtype(kind).itemsize
    return rows


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


def write_rows(cursor, table: str, columns: Sequence[str], rows: np.ndarray) -> None:
    """COPY the structured array `rows` (see empty_rows) into `table` (`columns`, in the rows' order)."""
    with copy_in(cursor, table, columns) as copy:
        copy.write(rows.tobytes())


# --- Out ---------------------------------------------------------------------------------------------


def _copy_out(cursor, sql: str, params: Sequence | None):
    # The raw psycopg cursor: Django's debug wrapper (DEBUG=1) does not pass COPY parameters on.
    raw = getattr(cursor, "cursor", cursor)
    return raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params)


def _read_all(cursor, sql: str, params: Sequence | None) -> tuple[bytearray, int]:
    """The whole stream, checked at both ends, and where its rows start."""
    data = bytearray()
    with _copy_out(cursor, sql, params) as copy:
        for chunk in copy:  # one chunk per row: appending keeps no per-row object alive
            data += chunk
    if not data.startswith(SIGNATURE) or not data.endswith(TRAILER):
        raise CopyError("unexpected binary COPY stream from the database")
    return data, 19 + int.from_bytes(data[15:19], "big")


def read_stream(cursor, sql: str, params: Sequence | None) -> tuple[bytearray, int]:
    """The whole binary COPY stream of `sql`, checked at both ends, and where its rows start: for rows
    of varying size (arrays of varying length), which the caller walks itself."""
    return _read_all(cursor, sql, params)


def _check_lengths(rows: np.ndarray) -> None:
    dtype = rows.dtype
    for name in dtype.names:
        if name.startswith("len_") and len(rows) and (rows[name] != dtype[name[4:]].itemsize).any():
            raise CopyError(f"NULL or unexpected size in column {name[4:]} of a binary COPY stream")


def read_rows(cursor, sql: str, params: Sequence | None, dtype) -> np.ndarray:
    """Run `COPY (sql) TO STDOUT (FORMAT BINARY)` and view its fixed-size rows as `dtype` (see row_dtype);
    `dtype` may be a function of the stream's body when the row size shows only in the first row.
    For wide rows this is faster than one row of arrays."""
    data, start = _read_all(cursor, sql, params)
    body = memoryview(data)[start:-2]
    if callable(dtype):
        dtype = dtype(body)
    if len(body) % dtype.itemsize:
        raise CopyError(f"binary COPY rows are not {dtype.itemsize} bytes each")
    rows = np.frombuffer(body, dtype=dtype)
    _check_lengths(rows)
    return rows


def stream_rows(
    cursor, sql: str, params: Sequence | None, dtype: np.dtype, block_bytes: int = 16 << 20
) -> Iterator[np.ndarray]:
    """Like read_rows, in blocks of about `block_bytes` (bounded memory whatever the number of rows)."""
    buffer = bytearray()
    start = None
    with _copy_out(cursor, sql, params) as copy:
        for chunk in copy:
            buffer += chunk
            if start is None and len(buffer) >= 19:
                if not buffer.startswith(SIGNATURE):
                    raise CopyError("unexpected binary COPY stream from the database")
                start = 19 + int.from_bytes(buffer[15:19], "big")
            if start is not None and len(buffer) >= start + block_bytes:
                del buffer[:start]
                start = 0
                whole = len(buffer) // dtype.itemsize * dtype.itemsize
                block = np.frombuffer(bytes(buffer[:whole]), dtype=dtype)
                _check_lengths(block)
                yield block
                del buffer[:whole]
    if start is None or not buffer.endswith(TRAILER) or (len(buffer) - start - 2) % dtype.itemsize:
        raise CopyError("unexpected end of the binary COPY stream")
    block = np.frombuffer(bytes(buffer[start:-2]), dtype=dtype)
    _check_lengths(block)
    yield block


def read_columns(cursor, sql: str, params: Sequence | None, kinds: Sequence[str]) -> list[np.ndarray]:
    """Run `sql`, which returns one row of arrays (an array_agg per column), by binary COPY; each column
    as a numpy array of `kind` (a big-endian dtype such as ">i8"), 2-D for an array of arrays. A NULL
    (array_agg over no rows) gives an empty array."""
    data, position = _read_all(cursor, sql, params)

    def integer(at: int, size: int = 4) -> int:
        return int.from_bytes(data[at : at + size], "big", signed=True)

    if integer(position, 2) != len(kinds):
        raise CopyError(f"expected one row of {len(kinds)} columns from the database")
    position += 2
    columns = []
    for kind in kinds:
        dtype = np.dtype(kind)
        length = integer(position)
        position += 4
        if length < 0:
            columns.append(np.zeros(0, dtype.newbyteorder("=")))
            continue
        ndim, has_nulls = integer(position), integer(position + 4)
        shape = tuple(integer(position + 12 + 8 * axis) for axis in range(ndim))
        count = int(np.prod(shape)) if ndim else 0
        if has_nulls or length != 12 + 8 * ndim + count * (4 + dtype.itemsize):
            raise CopyError("NULL or unexpected value size in an array from the database")
        items = np.frombuffer(
            data,
            dtype=np.dtype([("len", ">i4"), ("value", dtype)]),
            count=count,
            offset=position + 12 + 8 * ndim,
        )
        if (items["len"] != dtype.itemsize).any():
            raise CopyError("NULL or unexpected value size in an array from the database")
        columns.append(items["value"].astype(dtype.newbyteorder("=")).reshape(shape if ndim else (0,)))
        position += length
    return columns

"""Binary COPY in and out of PostgreSQL with numpy: fixed-size rows read as structured arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class CopyError(RuntimeError):
    """The database sent a binary COPY stream other than the one asked for."""


_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_COPY_HEADER = _COPY_SIGNATURE + b"\x00\x00\x00\x00\x00\x00\x00\x00"
_COPY_TRAILER = b"\xff\xff"
_PG_EPOCH = 946_684_800  # 2000-01-01T00:00:00Z in Unix seconds
# --- Binary COPY ---------------------------------------------------------------------------------------


def _copy_columns(cursor, sql: str, params: Sequence, kinds: Sequence[str]) -> list[np.ndarray]:
    """Run `sql`, which returns one row of arrays (an array_agg per column), by binary COPY; each column
    as a numpy array of `kind` (a big-endian dtype such as ">i8"), 2-D for an array of arrays. A NULL
    (array_agg over no rows) gives an empty array."""
    # The raw psycopg cursor: Django's debug wrapper (DEBUG=1) does not pass COPY parameters on.
    raw = getattr(cursor, "cursor", cursor)
    data = bytearray()
    with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:
            data += chunk
    if not data.startswith(_COPY_SIGNATURE) or not data.endswith(_COPY_TRAILER):
        raise CopyError("unexpected binary COPY stream from the database")

    def integer(at: int, size: int = 4) -> int:
        return int.from_bytes(data[at : at + size], "big", signed=True)

    position = 19 + integer(15)  # signature, flags, header extension
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
        items = np.frombuffer(
            data,
            dtype=np.dtype([("len", ">i4"), ("value", dtype)]),
            count=count,
            offset=position + 12 + 8 * ndim,
        )
        if has_nulls or (items["len"] != dtype.itemsize).any():
            raise CopyError("NULL or unexpected value size in an array from the database")
        columns.append(items["value"].astype(dtype.newbyteorder("=")).reshape(shape if ndim else (0,)))
        position += length
    return columns


def _copy_rows(cursor, sql: str, params: Sequence, dtype) -> np.ndarray:
    """Run `COPY (sql) TO STDOUT (FORMAT BINARY)` and view its fixed-size rows as `dtype` (see _fields);
    `dtype` may be a function of the stream's body when the row size shows only in the first row.
    For wide rows this is faster than one row of arrays."""
    raw = getattr(cursor, "cursor", cursor)
    data = bytearray()
    with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:  # one chunk per row: appending keeps no per-row object alive
            data += chunk
    if not data.startswith(_COPY_SIGNATURE) or not data.endswith(_COPY_TRAILER):
        raise CopyError("unexpected binary COPY stream from the database")
    body = memoryview(data)[19 + int.from_bytes(data[15:19], "big") : -2]
    if callable(dtype):
        dtype = dtype(body)
    if len(body) % dtype.itemsize:
        raise CopyError(f"binary COPY rows are not {dtype.itemsize} bytes each")
    rows = np.frombuffer(body, dtype=dtype)
    for name in dtype.names:
        if name.startswith("len_") and len(rows) and (rows[name] != dtype[name[4:]].itemsize).any():
            raise CopyError(f"NULL or unexpected size in column {name[4:]} of a binary COPY stream")
    return rows


def _fields(*columns: tuple[str, object]) -> np.dtype:
    """Packed dtype of a binary COPY row: field count, then (length, value) per column."""
    spec: list[tuple] = [("nfields", ">i2")]
    for name, kind in columns:
        spec += [(f"len_{name}", ">i4"), (name, kind)]
    return np.dtype(spec)

"""Binary COPY rows as numpy arrays (see the package for the framing). Rows of fixed-size fields are
numpy structured arrays: `row_dtype` spells one, `empty_rows` makes rows with the counts and lengths
filled in.

In: `write_rows` (one array of rows) and `array_rows` (the bytes of rows of scalars and one-dimensional
arrays of varying length, to write inside copy_in). Out: `read_rows` (fixed-size rows as a structured
array), `stream_rows` (the same in blocks, for bounded memory), `read_columns` (one row of arrays) and
`read_array_rows` (rows of scalars and arrays of varying length). A stream that is not what was asked
for raises CopyError.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

import numpy as np

from . import ELEMENT_OIDS, SIGNATURE, TRAILER, CopyError, copy_in

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


def write_rows(cursor, table: str, columns: Sequence[str], rows: np.ndarray) -> None:
    """COPY the structured array `rows` (see empty_rows) into `table` (`columns`, in the rows' order)."""
    with copy_in(cursor, table, columns) as copy:
        copy.write(rows.tobytes())


def _element_dtype(kind: str) -> tuple[np.dtype, int]:
    """(length, value) of one array element of `kind`, and the element type's oid."""
    kind = np.dtype(kind).newbyteorder(">").str
    if kind not in ELEMENT_OIDS:
        raise ValueError(f"no array element type for {kind!r} (one of {', '.join(ELEMENT_OIDS)})")
    return np.dtype([("len", ">i4"), ("value", kind)]), ELEMENT_OIDS[kind]


def array_rows(
    scalars: Sequence[tuple[np.ndarray, str]], arrays: Sequence[tuple[np.ndarray, str]], starts: np.ndarray
) -> bytes:
    """The rows (no header, no trailer: write them inside copy_in) of fixed-size scalar columns followed
    by one-dimensional array columns. Row i holds scalars[k][0][i] for every scalar column k, then
    arrays[k][0][starts[i]:starts[i + 1]] (the last row: to the end) for every array column k, so the
    arrays of a row have one length. Columns are (values, kind), kind a big-endian dtype (">i8")."""
    if not arrays:
        raise ValueError("array_rows writes rows with arrays (write_rows writes fixed-size rows)")
    starts = np.asarray(starts, dtype=np.int64)
    rows, total = len(starts), len(arrays[0][0])
    sizes = np.diff(np.append(starts, total))
    short = 8 * (sizes == 0)  # an empty array has no dimension: its head ends before length and lower bound
    # Per array column its heads (the first's with the row's field count and scalars before them) and
    # its elements, each in one buffer; a row is a slice of each, in turn. No Python work per element.
    pieces: list[tuple[memoryview, np.ndarray, np.ndarray]] = []
    for k, (values, kind) in enumerate(arrays):
        element, oid = _element_dtype(kind)
        if len(values) != total:
            raise ValueError("the array columns of a row must have one length")
        if k == 0:
            head = empty_rows(
                [*((f"s{j}", scalar) for j, (_, scalar) in enumerate(scalars)), ("a", ARRAY_HEAD)], rows
            )
            head["nfields"] = len(scalars) + len(arrays)
            for j, (column, _) in enumerate(scalars):
                head[f"s{j}"] = column
        else:
            head = np.empty(rows, dtype=[("len_a", ">i4"), ("a", ARRAY_HEAD)])
        head["len_a"] = np.where(sizes > 0, ARRAY_HEAD.itemsize + element.itemsize * sizes, 12)
        head["a"]["ndim"], head["a"]["has_nulls"], head["a"]["element_type"] = sizes > 0, 0, oid
        head["a"]["length"], head["a"]["lower_bound"] = sizes, 1
        items = np.empty(total, dtype=element)
        items["len"], items["value"] = element["value"].itemsize, values
        head_at = head.itemsize * np.arange(rows)
        pieces.append((memoryview(head.view(np.uint8)), head_at, head_at + head.itemsize - short))
        pieces.append(
            (memoryview(items.view(np.uint8)), element.itemsize * starts, element.itemsize * (starts + sizes))
        )
    parts: list = [None] * (len(pieces) * rows)
    for p, (data, lows, highs) in enumerate(pieces):
        parts[p :: len(pieces)] = [data[a:b] for a, b in zip(lows.tolist(), highs.tolist(), strict=True)]
    return b"".join(parts)


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


def read_array_rows(
    cursor, sql: str, params: Sequence | None, scalars: Sequence[str], arrays: Sequence[str]
) -> tuple[list[np.ndarray], list[tuple[np.ndarray, np.ndarray]]]:
    """Run `sql`, whose rows are fixed-size scalar columns of `scalars` kinds followed by one-dimensional
    array columns of `arrays` element kinds (none NULL, no NULL element), by binary COPY. Returns each
    scalar column (one value per row) and each array column as (every row's elements in row order, each
    row's element count), in native byte order: what array_rows writes, read back."""
    data, position = _read_all(cursor, sql, params)
    end = len(data) - 2
    fixed = row_dtype(*[(f"s{k}", kind) for k, kind in enumerate(scalars)])
    elements = [_element_dtype(kind) for kind in arrays]
    row_starts: list[int] = []
    counts: list[list[int]] = [[] for _ in arrays]
    items: list[list[memoryview]] = [[] for _ in arrays]  # each row's elements, joined after the walk
    view = memoryview(data)
    fields = len(scalars) + len(arrays)
    # A row's field count and scalar lengths, checked at once; the values are read after the walk.
    unpack_fixed = struct.Struct(">h" + "".join(f"i{fixed[f's{k}'].itemsize}x" for k in range(len(scalars))))
    unpack_fixed = unpack_fixed.unpack_from
    expected = (fields, *(fixed[f"s{k}"].itemsize for k in range(len(scalars))))
    unpack_head = struct.Struct(">iiii").unpack_from
    unpack_size = struct.Struct(">i").unpack_from
    try:
        while position < end:
            head = unpack_fixed(data, position)
            if head != expected:
                if head[0] != fields:
                    raise CopyError(f"binary COPY rows do not have {fields} columns")
                column = next(k for k in range(len(scalars)) if head[k + 1] != expected[k + 1])
                raise CopyError(f"NULL or unexpected size in column {column} of a binary COPY stream")
            row_starts.append(position)
            position += fixed.itemsize
            for k, (element, oid) in enumerate(elements):
                length, ndim, has_nulls, element_type = unpack_head(data, position)
                n = unpack_size(data, position + 16)[0] if ndim == 1 else 0
                if (
                    ndim not in (0, 1)
                    or has_nulls
                    or element_type != oid
                    or n < 0
                    or length != (ARRAY_HEAD.itemsize + n * element.itemsize if ndim else 12)
                ):
                    column = len(scalars) + k
                    raise CopyError(
                        f"NULL or unexpected value in column {column} (an array) of a binary COPY stream"
                    )
                items[k].append(view[position + 24 : position + 24 + n * element.itemsize])
                counts[k].append(n)
                position += 4 + length
    except (struct.error, ValueError):  # a length pointing past the end
        raise CopyError("unexpected end of the binary COPY stream") from None
    if position != end:
        raise CopyError("unexpected end of the binary COPY stream")
    starts = np.asarray(row_starts, dtype=np.int64)
    heads = np.frombuffer(data, dtype=np.uint8)[starts[:, None] + np.arange(fixed.itemsize)].view(fixed)
    heads = heads.reshape(len(starts))
    columns = [heads[f"s{k}"].astype(fixed[f"s{k}"].newbyteorder("=")) for k in range(len(scalars))]
    ragged = []
    for k, (element, _) in enumerate(elements):
        values = np.frombuffer(b"".join(items[k]), dtype=element)
        if (values["len"] != element["value"].itemsize).any():
            raise CopyError(
                f"NULL or unexpected value size in column {len(scalars) + k} of a binary COPY stream"
            )
        ragged.append(
            (
                values["value"].astype(element["value"].newbyteorder("=")),
                np.asarray(counts[k], dtype=np.int64),
            )
        )
    return columns, ragged


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

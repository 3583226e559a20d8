"""Reading streams: lines, TREC fields, JSON objects and CSV rows, each with line numbers and problems."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from judgments import limits

from .problems import BAD_LINE_CHAR, Reader, Stream, char_desc, id_problem, json_type

# --------------------------------------------------------------------------------------------------
# Reading lines


def as_iterable(stream: Stream) -> Iterable:
    if isinstance(stream, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(stream))
    if isinstance(stream, str):
        return io.StringIO(stream)
    return stream


def _decode_problem(raw: Any, lineno: int, reader: Reader) -> str:
    """Decode a line that is not valid UTF-8 (or not bytes at all), recording the problem."""
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"a stream must yield bytes or str lines, got {type(raw).__name__}")
    raw = bytes(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        reader.add(
            lineno,
            "encoding",
            f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line ({exc.reason})",
        )
        return raw.decode("utf-8", "replace")


def iter_lines(stream: Stream, reader: Reader, *, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, text without line ending) for every line; decoding problems are recorded and the
    line is still yielded (with U+FFFD replacements) so the rest of the file is checked too."""
    lineno = 0
    try:
        for raw in as_iterable(stream):
            lineno += 1
            if isinstance(raw, str):
                text = raw
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = _decode_problem(raw, lineno, reader)
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield lineno, (text if keep_ends else text.rstrip("\r\n"))
    except UnicodeDecodeError as exc:  # a text stream that could not decode its input
        reader.add(
            lineno + 1, "encoding", f"not valid UTF-8 ({exc.reason}); the rest of the file was not read"
        )


def iter_trec_fields(
    stream: Stream, reader: Reader, width: int, layout: str
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every data line of a whitespace-separated TREC file with ``width``
    fields. Blank and '#' lines are skipped; ``reader.count`` counts the data lines (good or bad).
    The loop is written out (not built on iter_lines) because runs have 500,000+ lines."""
    bad_line = BAD_LINE_CHAR.search
    lineno = 0
    count = 0
    try:
        for raw in as_iterable(stream):
            lineno += 1
            if raw.__class__ is bytes:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = _decode_problem(raw, lineno, reader)
            elif isinstance(raw, str):
                text = raw
            else:
                text = _decode_problem(raw, lineno, reader)
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            fields = text.split()
            if not fields or fields[0][0] == "#":
                continue
            count += 1
            if len(fields) != width:
                reader.add(
                    lineno,
                    "line",
                    f"expected {width} whitespace-separated fields '{layout}', found {len(fields)}",
                )
                continue
            text = text.rstrip("\r\n")
            if bad_line(text):
                m = bad_line(text)
                reader.add(
                    lineno,
                    "line",
                    f"contains a control, invisible or non-ASCII whitespace character ({char_desc(text, m)})",
                )
                continue
            yield lineno, fields
    except UnicodeDecodeError as exc:  # a text stream that could not decode its input
        reader.add(
            lineno + 1, "encoding", f"not valid UTF-8 ({exc.reason}); the rest of the file was not read"
        )
    finally:
        reader.count = count


# --------------------------------------------------------------------------------------------------
# JSON lines helpers


class _DuplicateKey(ValueError):
    pass


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"key {key!r} appears twice in one object")
            seen.add(key)
    return obj


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not valid JSON")


def iter_json_objects(stream: Stream, reader: Reader) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every non-blank line parsed as a JSON object; bad lines are recorded as problems. Counts the
    non-blank lines."""
    for lineno, text in iter_lines(stream, reader):
        if not text.strip():
            continue
        reader.count += 1
        try:
            obj = json.loads(text, object_pairs_hook=_object_pairs, parse_constant=_reject_constant)
        except _DuplicateKey as exc:
            reader.add(lineno, "json", str(exc))
            continue
        except json.JSONDecodeError as exc:
            reader.add(lineno, "json", f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except (ValueError, RecursionError) as exc:
            reader.add(lineno, "json", f"invalid JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            reader.add(lineno, "json", f"each line must be a JSON object, got {json_type(obj)}")
            continue
        yield lineno, obj


def json_id(obj: Mapping[str, Any], key: str, *, query: bool = False) -> tuple[str | None, str | None]:
    """(id, None) or (None, problem). Integer ids are accepted and turned into strings."""
    if key not in obj or obj[key] is None:
        return None, f"{key} is missing"
    value = obj[key]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    msg = id_problem(value, query=query)
    if msg:
        return None, f"{key} {msg}"
    return value, None


def json_text(
    obj: Mapping[str, Any], key: str, *, required: bool = False, limit: int | None = None
) -> tuple[str, str | None]:
    value = obj.get(key)
    if value is None:
        if required:
            return "", f"{key} is missing"
        return "", None
    if not isinstance(value, str):
        return "", f"{key} must be a string, got {json_type(value)}"
    if "\x00" in value:
        return "", f"{key} contains a NUL character"
    if required and not value.strip():
        return "", f"{key} is empty"
    if limit is not None and (msg := limits.too_long(key, value, limit)):
        return "", msg
    return value, None


def json_line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"


# --------------------------------------------------------------------------------------------------
# CSV helpers


def iter_csv_rows(stream: Stream, reader: Reader) -> Iterator[tuple[int, list[str]]]:
    """(first line of the record, cells) for every non-blank CSV record (counted, header included)."""
    line_holder = [0]

    def feed() -> Iterator[str]:
        for lineno, text in iter_lines(stream, reader, keep_ends=True):
            line_holder[0] = lineno
            yield text

    records = csv.reader(feed(), strict=True)
    start = 1
    while True:
        try:
            row = next(records)
        except StopIteration:
            return
        except csv.Error as exc:
            reader.add(start, "csv", f"invalid CSV: {exc}")
            start = line_holder[0] + 1
            continue
        if row and any(cell.strip() for cell in row):
            reader.count += 1
            yield start, row
        start = line_holder[0] + 1

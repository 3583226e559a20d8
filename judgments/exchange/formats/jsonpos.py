"""A JSON document parsed with positions, for whole-document formats (RRE) whose problems need lines.

:func:`load` parses like ``json.loads`` (strict; NaN and Infinity refused) with the standard library's
pure-Python scanner and wrapped hooks: every object is a :class:`Obj` (a dict with ``pos`` and
``dupes``, the keys that appeared twice; the last value is kept, as Jackson does), every array an
:class:`Arr` (a list with ``pos``), every string value a :class:`Str` (a str with ``pos``); ``pos`` is
the offset of the value's first character. Object keys are plain strings. :class:`Lines` turns an
offset into a 1-based line number. The pure-Python scanner is several times slower than the C one:
fine for judgment files (a 10 MB file takes seconds), not meant for bulk data.
"""

from __future__ import annotations

import bisect
import json
import re
from json import decoder as _jd
from json import scanner as _js
from typing import Any


class Obj(dict):
    __slots__ = ("pos", "dupes")


class Arr(list):
    __slots__ = ("pos",)


class Str(str):
    pos: int


def _pairs(pairs: list[tuple[str, Any]]) -> Obj:
    obj = Obj(pairs)
    obj.dupes = []
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen and key not in obj.dupes:
                obj.dupes.append(key)
            seen.add(key)
    return obj


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not valid JSON")


class _Context:
    """What ``json.scanner.py_make_scanner`` reads from a JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = staticmethod(_pairs)
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_reject_constant)

    def __init__(self) -> None:
        self.memo: dict = {}

    @staticmethod
    def parse_object(s_and_end, *args):
        obj, end = _jd.JSONObject(s_and_end, *args)
        obj.pos = s_and_end[1] - 1
        return obj, end

    @staticmethod
    def parse_array(s_and_end, scan_once):
        values, end = _jd.JSONArray(s_and_end, scan_once)
        arr = Arr(values)
        arr.pos = s_and_end[1] - 1
        return arr, end

    @staticmethod
    def parse_string(s, end, strict):
        value, new_end = _jd.scanstring(s, end, strict)
        text = Str(value)
        text.pos = end - 1
        return text, new_end


def load(text: str) -> Any:
    """Parse a JSON document with positions. Raises json.JSONDecodeError (with lineno and colno),
    ValueError (NaN, Infinity, an integer too long to convert) or RecursionError (nested too deeply)."""
    scan_once = _js.py_make_scanner(_Context())
    idx = _jd.WHITESPACE.match(text, 0).end()
    try:
        value, end = scan_once(text, idx)
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    end = _jd.WHITESPACE.match(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


class Lines:
    """Line numbers of offsets in one text."""

    def __init__(self, text: str):
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def of(self, node: Any, default: int = 0) -> int:
        """The 1-based line a parsed value starts on, or ``default`` for values without a position."""
        pos = getattr(node, "pos", None)
        if pos is None:
            return default
        return bisect.bisect_left(self.newlines, pos) + 1

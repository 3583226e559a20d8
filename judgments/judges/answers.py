"""Reading a judge's answer: a grade it really gave, or "can't judge". Never raises. No Django imports.

The prompt asks for ``{"grade": N, "reason": "..."}``; models answer with that, or wrap it in a
```` ```json ```` fence, in prose ("Sure! Here is my grade: {...} Hope this helps"), after a
``<think>`` block, with ``"grade": "3"`` or ``3.0``, with single quotes (``{'grade': 3}``) or bare keys
(``{grade: 3}``). Every ``{...}`` in the answer is tried; the objects carrying a ``grade`` (or
``relevance``, ``score``, ``rating``) are kept. With no such object, prose like ``Grade: 3`` or an
answer that is just ``3`` is read.

Can't judge (``grade is None``; ``reason`` is then the raw answer, cut to ``max_reason_chars``, and
``problem`` says why): an empty answer, a refusal or any answer naming no grade, a grade outside the
allowed ones (-1 only when the pool enables distractors), a fraction (2.5), a grade on another scale
("3/5"), ``null``, or several different grades in one answer. A grade is never guessed.

Call it from one thread at a time (the runner does): reading Python-style dicts silences the parser's
SyntaxWarnings with ``warnings.catch_warnings``, which is process-wide.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

GRADES = frozenset({0, 1, 2, 3, 4})
DISTRACTOR = -1
MAX_REASON_CHARS = 1000
MAX_SCAN_CHARS = 100_000  # an answer past this is read from its start only
MAX_OBJECT_CHARS = 20_000  # no real answer object is longer
MAX_ATTEMPTS = 64  # "{" positions tried, so a pathological answer stays fast

GRADE_KEYS = ("grade", "relevance", "relevance_grade", "score", "rating")
REASON_KEYS = ("reason", "explanation", "rationale", "justification", "reasoning")

_THINK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_INTEGER_TEXT = re.compile(r"\s*([+-]?)(\d+)(?:\.0*)?\s*")
_BARE_NUMBER = re.compile(r"[\s\"'*`.]*([+-]?\d+(?:\.\d+)?)[\s\"'*`.]*")
_PROSE = re.compile(
    r"\b(?:grade|relevance(?:\s+grade)?|score|rating)\b[\s*_\"'`]*(?:[:=]|\bis\b|\bof\b)[\s*_\"'`]*"
    r"([+-]?\d+(?:\.\d+)?)(?!\w|\.\d)(?:\s*(?:/|out\s+of)\s*(\d{1,9})(?!\d))?",
    re.IGNORECASE,
)
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_]\w*)\s*:")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


@dataclass(frozen=True)
class Verdict:
    """A grade with the judge's reason, or ``grade=None`` (can't judge) with the raw answer and why."""

    grade: int | None
    reason: str
    problem: str = ""

    @property
    def judged(self) -> bool:
        return self.grade is not None


class _Unreadable(Exception):
    """A grade value that is there but is not a usable grade; the message says why."""


def clip(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def parse_answer(
    text: object,
    *,
    allowed: frozenset[int] | set[int] = GRADES,
    labels: Mapping[int, str] | None = None,
    max_reason_chars: int = MAX_REASON_CHARS,
) -> Verdict:
    """The grade in a judge's answer ``text``, or can't judge. ``labels`` (grade -> label) lets
    ``"grade": "Highly relevant"`` count; ``allowed`` is 0..4, plus -1 when distractors are on."""
    raw = text if isinstance(text, str) else ""
    try:
        return _parse(raw, frozenset(allowed), labels or {}, max_reason_chars)
    except Exception as error:  # a safety net: the property tests check it is never reached
        return _cant(raw, f"could not read the answer ({type(error).__name__})", max_reason_chars)


def _cant(raw: str, problem: str, limit: int) -> Verdict:
    return Verdict(None, clip(raw.strip(), limit) or "(empty answer)", problem)


def _parse(raw: str, allowed: frozenset[int], labels: Mapping[int, str], limit: int) -> Verdict:
    text = _THINK.sub(" ", raw[:MAX_SCAN_CHARS]).strip()
    if not text:
        return _cant(raw, "empty answer", limit)
    found = [obj for obj in _objects(text) if _grade_key(obj) is not None]
    if found:
        values = [obj[_grade_key(obj)] for obj in found]
        reason = next((r for r in map(_reason_of, found) if r), "")
        return _decide(raw, values, reason, allowed, labels, limit)
    bare = _BARE_NUMBER.fullmatch(text)
    if bare:
        return _decide(raw, [bare.group(1)], "", allowed, labels, limit)
    values = []
    for match in _PROSE.finditer(text):
        out_of = match.group(2)
        if out_of is not None and int(out_of) != max(allowed):
            return _cant(raw, f"the grade {match.group(1)}/{out_of} is on another scale", limit)
        values.append(match.group(1))
    if values:
        return _decide(raw, values, clip(text, limit), allowed, labels, limit)
    return _cant(raw, "no grade in the answer", limit)


def _decide(
    raw: str, values: list, reason: str, allowed: frozenset[int], labels: Mapping[int, str], limit: int
) -> Verdict:
    grades = set()
    for value in values:
        try:
            grades.add(_as_grade(value, labels))
        except _Unreadable as problem:
            return _cant(raw, str(problem), limit)
    if len(grades) > 1:
        listed = ", ".join(str(g) for g in sorted(grades))
        return _cant(raw, f"the answer gives several grades: {listed}", limit)
    (grade,) = grades
    if grade not in allowed:
        if grade == DISTRACTOR:
            return _cant(raw, "grade -1 (distractor) is not enabled for this pool", limit)
        listed = ", ".join(str(g) for g in sorted(allowed))
        return _cant(raw, f"grade {grade} is not one of {listed}", limit)
    return Verdict(grade, clip(reason.strip(), limit))


def _as_grade(value: object, labels: Mapping[int, str]) -> int:
    if value is None:
        raise _Unreadable("the answer gives no grade (null)")
    if isinstance(value, bool):
        raise _Unreadable(f"the grade {value!r} is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        raise _Unreadable(f"the grade {value!r} is not a whole number")
    if isinstance(value, str):
        match = _INTEGER_TEXT.fullmatch(value)
        if match and len(match.group(2)) > 9:  # int() refuses thousands of digits; no grade is this long
            raise _Unreadable(f"the grade {clip(value.strip(), 20)} is far out of range")
        if match:
            return int(match.group(1) + match.group(2))
        if _NUMBER.fullmatch(value.strip()):
            raise _Unreadable(f"the grade {value.strip()!r} is not a whole number")
        wanted = value.strip().casefold()
        for grade, label in labels.items():
            if wanted and str(label).strip().casefold() == wanted:
                return grade
    raise _Unreadable(f"the grade {clip(repr(value), 60)} is not a number")


def _grade_key(obj: dict) -> str | None:
    keys = {str(k).strip().casefold(): k for k in obj}
    return next((keys[name] for name in GRADE_KEYS if name in keys), None)


def _reason_of(obj: dict) -> str:
    keys = {str(k).strip().casefold(): k for k in obj}
    for name in REASON_KEYS:
        if name in keys:
            value = obj[keys[name]]
            return value if isinstance(value, str) else json.dumps(value, default=str)
    return ""


def _objects(text: str) -> list[dict]:
    """Every outermost ``{...}`` of ``text`` that reads as an object (JSON, Python or bare keys),
    with objects nested in it that carry a grade when it carries none."""
    decoder = json.JSONDecoder()
    found: list[dict] = []
    start, attempts = text.find("{"), 0
    while start != -1 and attempts < MAX_ATTEMPTS:
        attempts += 1
        obj, end = None, start + 1
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            span_end = _matching_brace(text, start)
            if span_end is not None:
                obj = _lenient(text[start : span_end + 1])
                end = span_end + 1 if obj is not None else start + 1
        if isinstance(obj, dict):
            found.extend(_with_grades(obj))
        else:
            end = start + 1
        start = text.find("{", end)
    return found


def _with_grades(obj: dict, depth: int = 0) -> list[dict]:
    if _grade_key(obj) is not None or depth >= 3:
        return [obj]
    nested = [v for v in obj.values() if isinstance(v, dict)]
    return [inner for v in nested for inner in _with_grades(v, depth + 1)] or [obj]


def _matching_brace(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``start``, skipping '...' and "..." strings."""
    depth, quote, index = 0, "", start
    stop = min(len(text), start + MAX_OBJECT_CHARS)
    while index < stop:
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def _lenient(span: str) -> dict | None:
    """A Python dict literal, or JSON with bare keys or trailing commas; None if neither."""
    attempts = [lambda: json.loads(_TRAILING_COMMA.sub(r"\1", _BARE_KEY.sub(r'\1"\2":', span)))]
    if "'" in span:
        attempts.insert(0, lambda: ast.literal_eval(span))
    for attempt in attempts:
        try:
            with warnings.catch_warnings():  # the parser warns about odd literals ("3is")
                warnings.simplefilter("ignore", SyntaxWarning)
                value = attempt()
        except Exception:  # literal_eval and json raise many kinds on odd input
            continue
        if isinstance(value, dict):
            return value
    return None

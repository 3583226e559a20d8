"""Request templates with the placeholders ``{{query}}``, ``{{query_id}}``, ``{{depth}}`` and
``{{query.fields.NAME}}`` (a field the pool's query carries: a filter, a locale, a category). No Django.

Two formats, compiled once and rendered once per query:

- **JSON body** (Elasticsearch/OpenSearch, a JSON API's POST): the template must be JSON once its
  placeholders are filled. A placeholder may stand inside quotes or bare, both work::

      {"query": {"multi_match": {"query": "{{query}}"}}, "size": {{depth}}}
      {"query": {"multi_match": {"query": {{query}}}}, "size": "{{depth}}"}

  A string value that is exactly one placeholder (or a bare placeholder) becomes that value with its
  own type: ``{{query}}`` and ``{{query_id}}`` a JSON string, ``{{depth}}`` a number. A placeholder
  inside longer text (``"title:{{query}}"``) is spliced in as text. The template is parsed as JSON and
  values are written by the JSON encoder, so quotes, backslashes, newlines, ``}}`` or non-ASCII text in
  a query can neither break the body nor inject into it. Placeholders may not name an object key.
- **URL parameters** (Solr, a JSON API's GET): ``q={{query}}&rows={{depth}}&fl=id,score``; parameters
  joined by ``&`` or one per line. A placeholder's value is percent-encoded completely (``&``, ``=``,
  ``+``, ``#``, spaces, non-ASCII); the template's own text is kept as written except that characters a
  URL cannot carry (spaces, quotes, braces, non-ASCII) are percent-encoded. Existing ``%XX`` escapes
  and ``+`` (a space in form encoding) are left alone.

Every ``{{name}}`` must be one of the three placeholders or ``{{query.fields.NAME}}`` (a typo is an
error, not literal text), and a template must use ``{{query}}``. A field is written like ``{{query}}``
(a whole JSON value keeps its JSON type: a string, a number, true/false); a query without the field (or
with an empty one) is an error naming the query (`MissingFieldError`), never an empty value sent to the
engine. Errors raise `TemplateError` naming the line and column (JSON) or the
parameter, and the placeholder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

PLACEHOLDERS = ("query", "query_id", "depth")
FIELD_PREFIX = "query.fields."
_FIELD_NAME = re.compile(r"[A-Za-z0-9_-]+")
FORMATS = ("json", "params")

# Whitespace inside the braces is tolerated: {{ query }}.
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}")
# What is left of "{{ name" once the placeholders are taken out: a placeholder typed wrong. Other uses of
# braces ("{{#toJson}}" in an Elasticsearch mustache source) stay literal text.
_ATTEMPT = re.compile(r"\{\{\s*[A-Za-z_]")
# Characters kept as written in a parameter template's own text: RFC 3986 unreserved and sub-delims
# (minus "&", the separator), ":@/?", and "%" so that the user's escapes survive.
_LITERAL_SAFE = "!$'()*+,;=:@/?%"


class TemplateError(ValueError):
    """A template that cannot be compiled or rendered; the message names where and why."""


class MissingFieldError(TemplateError):
    """A query without a field the template uses; the message names the query and the field."""


@dataclass(frozen=True, slots=True)
class _Slot:
    name: str
    whole: bool  # True: the whole JSON value; False: text inside a JSON string or a URL parameter


def _check_name(name: str, where: str) -> None:
    if name.startswith(FIELD_PREFIX) and _FIELD_NAME.fullmatch(name[len(FIELD_PREFIX) :]):
        return
    if name not in PLACEHOLDERS:
        known = ", ".join("{{" + p + "}}" for p in (*PLACEHOLDERS, FIELD_PREFIX + "NAME"))
        raise TemplateError(f"unknown placeholder {{{{{name}}}}} {where} (known: {known})")


def _values(
    query: str, query_id: str, depth: int, fields: Mapping[str, Any] | None, used: frozenset[str]
) -> dict[str, Any]:
    if not isinstance(query, str) or not isinstance(query_id, str):
        raise TypeError("query and query_id must be strings")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise TemplateError(f"depth must be a whole number of at least 1, not {depth!r}")
    values: dict[str, Any] = {"query": query, "query_id": query_id, "depth": depth}
    missing, other = [], []
    for name in sorted(used):
        value = (fields or {}).get(name)
        if value is None or value == "":
            missing.append(name)
        elif isinstance(value, (dict, list)):
            other.append(name)
        else:
            values[FIELD_PREFIX + name] = value
    if missing or other:
        named = missing or other
        what = ("no field" if missing else "a non-scalar field") + ("s" if len(named) > 1 else "")
        uses = ", ".join("{{" + FIELD_PREFIX + n + "}}" for n in named)
        raise MissingFieldError(
            f"query {query_id} has {what} {', '.join(repr(n) for n in named)} (the template uses {uses}); "
            "nothing was sent for it"
        )
    return values


def _text(value: Any) -> str:
    """A value spliced into text: strings as they are, numbers and booleans as JSON writes them."""
    return value if isinstance(value, str) else json.dumps(value)


def _join(segments: list[str | _Slot]) -> tuple[str | _Slot, ...]:
    """Adjacent literal segments merged into one, so rendering joins as few pieces as possible."""
    merged: list[str | _Slot] = []
    for seg in segments:
        if isinstance(seg, str) and merged and isinstance(merged[-1], str):
            merged[-1] += seg
        elif seg != "":
            merged.append(seg)
    return tuple(merged)


def _literal(piece: str, where: str) -> str:
    if _ATTEMPT.search(piece):
        raise TemplateError(f"malformed placeholder {where}: expected {{{{name}}}} in {piece!r}")
    return piece


def _uses_query(segments) -> None:
    if not any(isinstance(s, _Slot) and s.name == "query" for s in segments):
        raise TemplateError("the template never uses {{query}}: every query would get the same results")


# --------------------------------------------------------------------------------------------------
# JSON bodies


def _line_col(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {col}"


def _quote_bare_placeholders(text: str) -> tuple[str, list[int]]:
    """The template with every placeholder outside a JSON string put in quotes, and the original
    positions of those placeholders (to map a JSON error's position back onto the user's text)."""
    out: list[str] = []
    moved: list[int] = []
    i, last, n, in_string = 0, 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{" and text.startswith("{{", i):
            m = _PLACEHOLDER.match(text, i)
            if m is None:
                raise TemplateError(f"malformed placeholder at {_line_col(text, i)}: expected {{{{name}}}}")
            out += [text[last:i], '"', m.group(0), '"']
            moved.append(i)
            i = last = m.end()
            continue
        i += 1
    out.append(text[last:])
    return "".join(out), moved


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


class JsonTemplate:
    """A JSON request body with placeholders; `render` returns the body as ASCII bytes."""

    format = "json"

    def __init__(self, text: str):
        if not isinstance(text, str) or not text.strip():
            raise TemplateError("the JSON template is empty")
        self.text = text
        quoted, moved = _quote_bare_placeholders(text)
        try:
            tree = json.loads(quoted, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            shift = 2 * sum(1 for k, p in enumerate(moved) if p + 2 * k < exc.pos)
            raise TemplateError(
                f"the template is not valid JSON: {exc.msg} at {_line_col(text, max(exc.pos - shift, 0))}"
            ) from None
        except ValueError as exc:
            raise TemplateError(f"the template is not valid JSON: {exc}") from None
        segments: list[str | _Slot] = []
        self._emit(tree, "$", segments)
        self._segments = _join(segments)
        _uses_query(self._segments)

    def _emit(self, node: Any, path: str, out: list[str | _Slot]) -> None:
        if isinstance(node, dict):
            out.append("{")
            for i, (key, value) in enumerate(node.items()):
                if _PLACEHOLDER.search(key):
                    raise TemplateError(
                        f"placeholder in the key {key!r} at {path}: placeholders go in values"
                    )
                out.append(("," if i else "") + json.dumps(key) + ":")
                self._emit(value, f"{path}.{key}", out)
            out.append("}")
        elif isinstance(node, list):
            out.append("[")
            for i, value in enumerate(node):
                out.append("," if i else "")
                self._emit(value, f"{path}[{i}]", out)
            out.append("]")
        elif isinstance(node, str):
            whole = _PLACEHOLDER.fullmatch(node)
            if whole:
                _check_name(whole.group(1), f"at {path}")
                out.append(_Slot(whole.group(1), whole=True))
                return
            out.append('"')
            last = 0
            for m in _PLACEHOLDER.finditer(node):
                _check_name(m.group(1), f"at {path}")
                out += [
                    json.dumps(_literal(node[last : m.start()], f"at {path}"))[1:-1],
                    _Slot(m.group(1), False),
                ]
                last = m.end()
            out += [json.dumps(_literal(node[last:], f"at {path}"))[1:-1], '"']
        else:
            out.append(json.dumps(node))

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(s.name for s in self._segments if isinstance(s, _Slot))

    @property
    def fields(self) -> frozenset[str]:
        """The query fields the template uses (NAME of each {{query.fields.NAME}})."""
        return _fields(self.placeholders)

    def render_text(
        self, query: str, query_id: str, depth: int, fields: Mapping[str, Any] | None = None
    ) -> str:
        values = _values(query, query_id, depth, fields, self.fields)
        whole = {k: (str(v) if k == "depth" else json.dumps(v)) for k, v in values.items()}
        parts = []
        for seg in self._segments:
            if isinstance(seg, str):
                parts.append(seg)
            elif seg.whole:
                parts.append(whole[seg.name])
            else:
                parts.append(json.dumps(_text(values[seg.name]))[1:-1])
        return "".join(parts)

    def render(self, query: str, query_id: str, depth: int, fields: Mapping[str, Any] | None = None) -> bytes:
        # json.dumps escapes every non-ASCII character (ensure_ascii), so the body is plain ASCII: no
        # charset to agree on, and a lone surrogate in a query cannot make encoding fail.
        return self.render_text(query, query_id, depth, fields).encode("ascii")


# --------------------------------------------------------------------------------------------------
# URL parameters


class ParamsTemplate:
    """URL parameters with placeholders; `render` returns the encoded query string (no leading "?")."""

    format = "params"

    def __init__(self, text: str):
        if not isinstance(text, str) or not text.strip():
            raise TemplateError("the parameter template is empty")
        self.text = text
        body = text.strip()
        if body.startswith("?"):
            body = body[1:]
        segments: list[str | _Slot] = []
        items = [item.strip() for item in re.split(r"[&\r\n]", body)]
        self.names: list[str] = []
        for number, item in enumerate((i for i in items if i), start=1):
            name, has_value, value = item.partition("=")
            where = f"in parameter {number} ({item!r})"
            if not name:
                raise TemplateError(f"parameter {number} ({item!r}) has no name")
            if "{{" in name:
                raise TemplateError(
                    f"placeholder in the name of parameter {number} ({item!r}): placeholders go in values"
                )
            segments.append(("&" if segments else "") + quote(name, safe=_LITERAL_SAFE))
            self.names.append(name)
            if not has_value:
                continue
            segments.append("=")
            last = 0
            for m in _PLACEHOLDER.finditer(value):
                _check_name(m.group(1), where)
                literal = _literal(value[last : m.start()], where)
                segments += [quote(literal, safe=_LITERAL_SAFE), _Slot(m.group(1), whole=False)]
                last = m.end()
            segments.append(quote(_literal(value[last:], where), safe=_LITERAL_SAFE))
        if not self.names:
            raise TemplateError("the parameter template has no parameters")
        self._segments = _join(segments)
        _uses_query(self._segments)

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(s.name for s in self._segments if isinstance(s, _Slot))

    @property
    def fields(self) -> frozenset[str]:
        """The query fields the template uses (NAME of each {{query.fields.NAME}})."""
        return _fields(self.placeholders)

    def render(self, query: str, query_id: str, depth: int, fields: Mapping[str, Any] | None = None) -> str:
        values = _values(query, query_id, depth, fields, self.fields)
        # safe="": every reserved character of a value is encoded, so a query cannot add parameters.
        return "".join(
            seg if isinstance(seg, str) else quote(_text(values[seg.name]), safe="") for seg in self._segments
        )


def _fields(placeholders: frozenset[str]) -> frozenset[str]:
    return frozenset(p[len(FIELD_PREFIX) :] for p in placeholders if p.startswith(FIELD_PREFIX))


def compile_template(text: str, format: str) -> JsonTemplate | ParamsTemplate:
    """Compile `text` as a template of `format` ("json" or "params")."""
    if format == "json":
        return JsonTemplate(text)
    if format == "params":
        return ParamsTemplate(text)
    raise TemplateError(f"unknown template format {format!r} (one of {', '.join(FORMATS)})")

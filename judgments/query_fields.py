"""Per-query fields: values a query carries (a filter, a locale, a category) that endpoint templates use as
``{{query.fields.NAME}}``. The one rule for what may be stored, shared by the query file formats, the API
and the pages. Pure: no Django."""

from __future__ import annotations

import re
from typing import Any

FIELD_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")  # as endpoint templates name them: {{query.fields.NAME}}
MAX_FIELDS = 50


def _kind(value: Any) -> str:
    names = {type(None): "null", list: "an array", dict: "an object", str: "a string", bool: "a boolean"}
    return names.get(type(value), type(value).__name__)


def fields_problem(fields: Any) -> str | None:
    """Why a query's fields cannot be stored, or None: an object of at most MAX_FIELDS names (letters,
    digits, _ and -) to strings, numbers or true/false."""
    if not isinstance(fields, dict):
        return f"fields must be an object of name: value, got {_kind(fields)}"
    if len(fields) > MAX_FIELDS:
        return f"at most {MAX_FIELDS} fields per query, got {len(fields)}"
    for name, value in fields.items():
        if not FIELD_NAME.fullmatch(name):
            return f"field name {name!r} may hold only letters, digits, _ and - (1 to 100 characters)"
        if isinstance(value, str):
            if "\x00" in value:
                return f"field {name} contains a NUL character"
        elif value is None or not isinstance(value, (int, float, bool)) or value != value:
            return f"field {name} must be a string, a number or true/false, got {_kind(value)}"
    return None

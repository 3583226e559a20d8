"""Endpoint history: what changed between two versions, line by line, secrets redacted.

A diff is read from the versions' public definitions (`SearchEndpoint.public`: every secret as ***), so
no secret can reach the page; a stored secret that changed without being shown is said in words.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from judgments.models.capture import SearchEndpoint

FIELDS = (
    ("kind", "Kind"),
    ("method", "Method"),
    ("url", "URL"),
    ("template", "Template"),
    ("hits_path", "Hits path"),
    ("id_field", "Id field"),
    ("score_field", "Score field"),
    ("headers", "Headers"),
    ("auth_kind", "Authentication"),
    ("auth_user", "User"),
    ("auth_header", "API key header"),
    ("secret", "Secret"),
    ("depth", "Depth"),
)


@dataclass(frozen=True)
class Line:
    sign: str  # "-" only in the older version, "+" only in the newer, " " in both
    text: str


@dataclass(frozen=True)
class FieldDiff:
    label: str
    lines: list[Line]

    @property
    def changed(self) -> bool:
        return any(line.sign != " " for line in self.lines)


def _text(name: str, value) -> list[str]:
    if name == "headers":
        return [f"{n}: {v}" for n, v in value]
    if name == "template":
        return str(value).splitlines() or [""]
    return [str(value)]


def diff(old: SearchEndpoint, new: SearchEndpoint) -> list[FieldDiff]:
    """Every field of the two versions, changed lines marked (unchanged fields included, unmarked)."""
    a, b = old.public(), new.public()
    if a["secret"] == b["secret"] == "set" and old.auth_secret != new.auth_secret:
        a["secret"], b["secret"] = "set", "set (a different secret)"
    out = []
    for name, label in FIELDS:
        before, after = _text(name, a.get(name, "")), _text(name, b.get(name, ""))
        lines = [
            Line(row[0], row[2:])
            for row in difflib.ndiff(before, after)
            if not row.startswith("?")  # ndiff's hint lines
        ]
        out.append(FieldDiff(label, lines))
    return out

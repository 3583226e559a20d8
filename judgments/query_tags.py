"""Query tags: the segments a query belongs to (`head`, `tail`, `category:shoes`). The one rule for what a tag
may be, shared by the query file formats, the API, the campaign pages and the score filters. Pure: no Django.

A tag is 1 to 64 characters, with no whitespace, no comma (the separator of flat files) and no control
character. A query holds at most MAX_TAGS of them, stored sorted and without duplicates. Case matters:
`Head` and `head` are two tags.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_LENGTH = 64
MAX_TAGS = 50
_BAD = re.compile(r"[\s,\x00-\x1f\x7f]")


def tag_problem(tag: Any) -> str | None:
    """Why `tag` cannot be a tag, or None."""
    if not isinstance(tag, str):
        return f"a tag must be a string, got {type(tag).__name__}"
    if not tag:
        return "a tag is empty"
    if len(tag) > MAX_LENGTH:
        return f"tag {tag[:20]!r}... is {len(tag)} characters long; at most {MAX_LENGTH}"
    if bad := _BAD.search(tag):
        what = (
            "a comma"
            if bad.group() == ","
            else "whitespace"
            if bad.group().isspace()
            else "a control character"
        )
        return f"tag {tag!r} contains {what}"
    return None


def tags_problem(tags: Any) -> str | None:
    """Why a list of tags cannot be stored on a query, or None."""
    if not isinstance(tags, (list, tuple)):
        return f"tags must be a list of strings, got {type(tags).__name__}"
    for tag in tags:
        if problem := tag_problem(tag):
            return problem
    if len(set(tags)) > MAX_TAGS:
        return f"at most {MAX_TAGS} tags per query, got {len(set(tags))}"
    return None


def normalise(tags: Iterable[str]) -> list[str]:
    """Tags as stored: sorted, each once (call after tags_problem)."""
    return sorted(set(tags))


def split_tags(text: str) -> list[str]:
    """The tags of a flat-file cell: separated by commas (spaces around them are dropped), or by
    whitespace when the cell has no comma. An empty cell is no tags. ValueError naming the bad tag (an
    empty one between two commas, one with whitespace inside, one too long)."""
    text = text.strip()
    if not text:
        return []
    parts = [part.strip() for part in text.split(",")] if "," in text else text.split()
    for part in parts:
        if problem := tag_problem(part):
            raise ValueError(problem)
    if len(set(parts)) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags per query, got {len(set(parts))}")
    return normalise(parts)


def join_tags(tags: Iterable[str]) -> str:
    """The flat-file cell of some tags (comma separated)."""
    return ",".join(tags)

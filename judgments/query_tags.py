"""Query tags: the segments a query belongs to (`head`, `tail`, `category:shoes`). The one rule for what a tag
may be, shared by the query file formats, the API, the campaign pages and the score filters. Pure: no Django.

A tag is 1 to 64 characters, with no whitespace, no comma (the separator of flat files) and no control
character. A query holds at most MAX_TAGS of them, stored sorted and without duplicates. Case matters:
`Head` and `head` are two tags.

Names from other tools become tags by `name_tag`: an RRE ratings file's query group "Brand search" is the tag
`group:Brand-search`, its topic "Fender basses" `topic:Fender-basses` (GROUP / TOPIC, the `PLACES` a file
states for its queries): runs of whitespace and commas become one `-`, control characters and lone
surrogates are dropped, and the tag is cut to 64 characters; a name left empty gives no tag.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_LENGTH = 64
MAX_TAGS = 50
_BAD = re.compile(r"[\s,\x00-\x1f\x7f]")
_DROPPED = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")  # control characters and lone surrogates
_SEPARATORS = re.compile(r"[\s,]+")
GROUP = "group:"  # the tag prefix of an RRE query group
TOPIC = "topic:"  # ... of an RRE topic
PLACES = (GROUP, TOPIC)  # tags a ratings file states (an import replaces them, keeps the others)


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


def name_tag(prefix: str, name: str) -> str | None:
    """The tag of a name from another tool (`name_tag(GROUP, "Brand search")` is `group:Brand-search`):
    whitespace and commas as `-`, control characters dropped, cut to MAX_LENGTH; None when nothing is
    left of the name. Always a valid tag (tag_problem is None) for a valid prefix."""
    words = [word for part in _SEPARATORS.split(name) if (word := _DROPPED.sub("", part))]
    if not words:
        return None
    return (prefix + "-".join(words))[:MAX_LENGTH]


def is_place(tag: str) -> bool:
    """A tag a ratings file states (group:..., topic:...)."""
    return tag.startswith(PLACES)

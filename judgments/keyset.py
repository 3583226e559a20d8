"""Keyset paging: a page of a long list read with `WHERE key > last ORDER BY key LIMIT n` on an index, so
that page 50 costs what page 1 does and nothing counts the whole list (OFFSET reads and throws away every
row before the page). The key must be unique within the list. Links carry `after=<key>` (the next page)
or `before=<key>` (the previous one); `templates/_keyset_pages.html` renders them."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from django.db.models import QuerySet


@dataclass
class KeysetPage:
    items: list
    first: bool  # no rows before this page
    next_after: str | None  # the key to read the next page after (None: this is the last page)
    previous_before: str | None  # the key to read the previous page before (None: this is the first)


def keyset_page(queryset: QuerySet, key: str, size: int, after: str | None = None, before: str | None = None):
    """The `size` rows of `queryset` after the key `after` (or before `before`), in `key` order (a field
    path such as "query__external_id")."""
    value = attrgetter(key.replace("__", "."))
    if before:
        rows = list(queryset.filter(**{f"{key}__lt": before}).order_by(f"-{key}")[: size + 1])
        more = len(rows) > size
        rows = rows[:size][::-1]
        return KeysetPage(
            rows, not more, str(value(rows[-1])) if rows else None, str(value(rows[0])) if more else None
        )
    if after:
        queryset = queryset.filter(**{f"{key}__gt": after})
    rows = list(queryset.order_by(key)[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    return KeysetPage(
        rows,
        not after,
        str(value(rows[-1])) if more else None,
        str(value(rows[0])) if after and rows else None,
    )

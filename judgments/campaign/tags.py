"""Tagging a pool's queries in bulk (admins), from the queries page: paste query ids or texts, one a line,
give one or more tags (judgments.query_tags), add or remove them. A line that names no query, or a bad tag,
is refused with one line naming it, and nothing is changed. The tags are segments the leaderboard and the
comparison filter by (scoring.segments)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection, transaction

from judgments import bulk
from judgments.models import Pool, Query
from judgments.query_tags import MAX_TAGS, split_tags

MAX_LINES = 10_000


class TaggingError(ValueError):
    """One line naming the field (and the line) that cannot be used; nothing was changed."""


@dataclass(frozen=True)
class TagResult:
    tags: list[str]
    matched: int  # queries named by the lines
    changed: int  # of those, queries whose tags changed
    removed: bool

    def message(self) -> str:
        verb = "removed from" if self.removed else "added to"
        return (
            f"Tag{'s' if len(self.tags) > 1 else ''} {', '.join(self.tags)} {verb} {self.matched} "
            f"quer{'y' if self.matched == 1 else 'ies'} ({self.changed} changed)."
        )


def _text_key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def tag_queries(pool: Pool, lines: str, tags_text: str, *, remove: bool = False) -> TagResult:
    """Add (or remove) the tags of `tags_text` to the queries named by `lines` (a query id, or else a
    query text, case and spacing ignored: every query with that text). One read, one UPDATE."""
    try:
        tags = split_tags(tags_text)
    except ValueError as error:
        raise TaggingError(f"tags: {error}") from None
    if not tags:
        raise TaggingError("tags: give at least one tag")
    named = [(n, line.strip()) for n, line in enumerate(lines.splitlines(), start=1) if line.strip()]
    if not named:
        raise TaggingError("queries: paste at least one query id or text, one a line")
    if len(named) > MAX_LINES:
        raise TaggingError(f"queries: at most {MAX_LINES} lines at once, got {len(named)}")
    with transaction.atomic():
        with connection.cursor() as cursor:
            bulk.lock_pool(cursor, pool.pk)  # every writer of a pool's queries holds it (see bulk)
        rows = list(Query.objects.filter(pool=pool).values_list("pk", "external_id", "text", "tags"))
        by_id = {external_id: pk for pk, external_id, _, _ in rows}
        by_text: dict[str, list[int]] = {}
        for pk, _, text, _ in rows:
            by_text.setdefault(_text_key(text), []).append(pk)
        picked: set[int] = set()
        for n, line in named:
            if line in by_id:
                picked.add(by_id[line])
            elif found := by_text.get(_text_key(line)):
                picked.update(found)
            else:
                raise TaggingError(
                    f"queries: line {n}: no query of {pool.name} has the id or text {line[:80]!r}"
                )
        if not remove:
            for pk, external_id, _, old in rows:
                if pk in picked and len(set(old) | set(tags)) > MAX_TAGS:
                    raise TaggingError(
                        f"tags: query {external_id} would have {len(set(old) | set(tags))} tags; at most {MAX_TAGS}"
                    )
        # One statement: the new tags sorted as Python sorts them (COLLATE "C"), rows left alone when
        # nothing changes for them.
        if remove:
            sql = (
                "UPDATE judgments_query SET tags = ARRAY(SELECT t FROM unnest(tags) AS t"
                ' WHERE t <> ALL(%(tags)s) ORDER BY t COLLATE "C")'
                " WHERE id = ANY(%(ids)s) AND tags && %(tags)s::varchar[]"
            )
        else:
            sql = (
                "UPDATE judgments_query SET tags = ARRAY(SELECT t FROM (SELECT DISTINCT unnest(tags ||"
                ' %(tags)s::varchar[]) AS t) AS u ORDER BY t COLLATE "C")'
                " WHERE id = ANY(%(ids)s) AND NOT tags @> %(tags)s::varchar[]"
            )
        with connection.cursor() as cursor:
            cursor.execute(sql, {"tags": tags, "ids": sorted(picked)})
            changed = cursor.rowcount
    return TagResult(tags, len(picked), changed, remove)

"""Import judgments in the judgment formats, all or nothing.

- ``csv``: Quepid's ``query,docid,rating`` (its current export too: ratings written ``3.0`` are read as
  3, a non-integral rating is a problem; rows without a rating, ``query,docid,`` or ``query,,``, are
  skipped and counted). The query column is matched against the pool's query ids first, then against
  query texts (case and spacing ignored); a text shared by several queries is a problem; a text
  matching none becomes a new query (its id: the text with whitespace as ``_``). Every rating is
  attributed to one rater.
- ``rre``: RRE's ratings JSON (nested corpora/topics/query_groups/queries or flat; relevant documents
  keyed by grade ``{"3": [...]}`` or by document ``{"d1": {"gain": 3}}``: both of Quepid's RRE shapes).
  Queries are matched and created as in ``csv``; one rater as in ``csv``.
- ``rater-csv``: ``query_id,doc_id,<rater>...``, one column per rater (grade, ``X`` = can't judge,
  empty = no grade).
- ``jsonl``: one judgment per line with rater, grade, can't-judge flag and reason, note and
  timestamps, and ``"final": true`` lines for adjudicated final grades: the full-fidelity format,
  re-importable into an empty pool with nothing lost.

Raters are named by username; missing accounts are created without a usable password (they cannot
log in). Unknown documents are created (without content); unknown query ids are created too, except
in ``csv``, whose query column may be a text. Grades outside the pool's scale are problems. A
judgment that exists is updated (the history trigger logs it), an identical one is left alone.
Rows go through COPY into a temporary table and two set-based statements.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from judgments import bulk, pool_keys, services
from judgments.exchange import formats
from judgments.exchange.formats import MAX_PROBLEMS, FormatError, Problem
from judgments.models import Document, Pair, Pool, Query
from judgments.query_tags import MAX_TAGS, is_place, normalise
from judgments.signals import grades_changed

from .checks import database_refused
from .trec import ImportSummary

FORMATS = ("csv", "rater-csv", "jsonl", "rre")
CSV_RATER_PREFIX = "ratings-"
USERNAME = re.compile(r"[\w.@+-]+\Z")  # Django's UnicodeUsernameValidator
USERNAME_MAX = 150


@dataclass(slots=True)
class _Row:
    line: int
    query: str  # resolved query id
    doc_id: str
    rater: str  # username
    grade: int | None
    cant_judge: bool = False
    reason: str = ""
    note: str | None = None  # None: keep the stored note (formats without notes)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    final: bool = False


class _Problems:
    def __init__(self, name: str):
        self.name = name
        self.items: list[Problem] = []

    def add(self, line: int, field: str, message: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(Problem(line, field, message))

    def raise_if_any(self) -> None:
        if self.items:
            raise FormatError(self.name, sorted(self.items, key=lambda p: p.line))


def csv_rater_username(name: str) -> str:
    """The non-login account a Quepid CSV's ratings go to when no rater is named."""
    base = os.path.basename(name.replace("\\", "/")) or "file"
    return (CSV_RATER_PREFIX + re.sub(r"[^\w.@+-]", "_", base))[:USERNAME_MAX]


def _normal_text(text: str) -> str:
    return " ".join(text.split()).casefold()


# --- Reading each format into rows ----------------------------------------------------------------


def _query_id_for(text: str, taken: set[str]) -> str:
    """An id for a new query known only by its text: the text with whitespace runs as ``_`` (cut to
    200 characters), made unique with ``-2``, ``-3``... against `taken` (which it joins)."""
    base = (
        re.sub(r"[\s\x00-\x1f\x7f-\x9f\u200b\ufeff]+", "_", text.strip())[: formats.MAX_ID_LENGTH - 8]
        or "query"
    )
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    taken.add(candidate)
    return candidate


def _rows_by_query_text(
    pool: Pool,
    records,
    unrated,
    rater: str,
    problems: _Problems,
    new_queries: dict[str, str],
    *,
    case: bool = False,
    resolved: dict[str, str] | None = None,
) -> list[_Row]:
    """Rows of (query id or text, doc, grade) records: the query column matched to an id, then to a
    text (case and spacing ignored); an unknown text becomes a new query, added to `new_queries`, and
    so does the query of an unrated row without a document (Quepid's ``query,,``: a query with no
    rating yet). case=True matches texts case-sensitively (RRE: "fender" and "Fender" are two
    queries). The same pair twice with one grade is kept once; with two grades it is a problem.
    resolved: filled with {query column as written: query id} of every row whose query is known."""
    resolved = {} if resolved is None else resolved
    normal = (lambda t: " ".join(t.split())) if case else _normal_text
    ids = set(Query.objects.filter(pool=pool).values_list("external_id", flat=True))
    by_text: dict[str, list[str]] = {}
    for qid, text in Query.objects.filter(pool=pool).exclude(text="").values_list("external_id", "text"):
        by_text.setdefault(normal(text), []).append(qid)
    taken = set(ids)
    rows = []
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    lines: dict[str, int] = {}  # new query -> its first line: queries are created in file order
    for r in records:
        if r.query in ids:
            qid = r.query
        else:
            key = normal(r.query)
            matches = by_text.get(key, [])
            if len(matches) > 1:
                shown = r.query if len(r.query) <= 60 else r.query[:60] + "…"
                problems.add(
                    r.line,
                    "query",
                    f"{shown!r} is the text of {len(matches)} queries ({', '.join(sorted(matches)[:5])}); use the query id",
                )
                continue
            if not matches:
                qid = _query_id_for(r.query, taken)
                new_queries[qid] = r.query.strip()
                lines[qid] = r.line
                by_text[key] = matches = [qid]
            qid = matches[0]
        resolved[r.query] = qid
        first = seen.get((qid, r.doc_id))
        if first is not None:
            if first[1] != r.grade:
                problems.add(
                    r.line,
                    "grade",
                    f"query {r.query!r} doc {r.doc_id} is graded {first[1]} on line {first[0]} and {r.grade} here",
                )
            continue
        seen[(qid, r.doc_id)] = (r.line, r.grade)
        rows.append(_Row(r.line, qid, r.doc_id, rater, r.grade))
    for u in unrated:
        key = normal(u.query)
        if not u.doc_id and u.query not in ids and key not in by_text:
            qid = _query_id_for(u.query, taken)
            new_queries[qid] = u.query.strip()
            lines[qid] = u.line
            by_text[key] = [qid]
        if u.query in ids:
            resolved[u.query] = u.query
        elif len(by_text.get(key, ())) == 1:
            resolved[u.query] = by_text[key][0]
    ordered = sorted(new_queries.items(), key=lambda item: lines[item[0]])
    new_queries.clear()
    new_queries.update(ordered)
    return rows


def _rows_from_rater_csv(stream, name: str) -> list[_Row]:
    parsed = formats.parse_rater_csv(stream, name)
    reason = f"can't judge (imported from {os.path.basename(name) or 'a file'})"
    rows = []
    for r in parsed.rows:
        for rater, cell in r.grades.items():
            if cell is None:
                continue
            if cell == formats.CANT_JUDGE:
                rows.append(_Row(r.line, r.query_id, r.doc_id, rater, None, True, reason))
            else:
                rows.append(_Row(r.line, r.query_id, r.doc_id, rater, cell))
    return rows


def _rows_from_jsonl(stream, name: str, problems: _Problems) -> list[_Row]:
    records = formats.parse_judgments_jsonl(stream, name)
    rows = []
    finals: dict[tuple[str, str], int] = {}
    for r in records:
        if r.final:
            if r.grade is None:
                problems.add(r.line, "grade", "a final grade needs a grade 0-4 (not can't judge)")
                continue
            first = finals.get((r.query_id, r.doc_id))
            if first is not None:
                problems.add(
                    r.line,
                    "final",
                    f"query {r.query_id} doc {r.doc_id} has two final grades (lines {first} and {r.line})",
                )
                continue
            finals[(r.query_id, r.doc_id)] = r.line
        rows.append(
            _Row(
                r.line,
                r.query_id,
                r.doc_id,
                r.rater,
                r.grade,
                r.cant_judge,
                r.reason if r.cant_judge else "",
                r.note,
                r.created_at,
                r.updated_at,
                r.final,
            )
        )
    return rows


# --- Writing ----------------------------------------------------------------------------------------


def _check(rows: list[_Row], pool: Pool, problems: _Problems, *, usernames: bool = True) -> None:
    """Grades outside the pool's scale; rater names that cannot be usernames (when accounts may be made)."""
    scale = set(pool.grades)
    shown = ", ".join(str(g) for g in sorted(scale))
    for row in rows:
        if row.grade is not None and (problem := pool.grade_problem(row.grade)):
            if row.grade != formats.DISTRACTOR or pool.distractors_enabled:  # a grade the scale lacks
                problem = f"grade {row.grade} is outside the scale of pool {pool.name} ({shown})"
            problems.add(row.line, "grade", problem)
        if usernames and (len(row.rater) > USERNAME_MAX or not USERNAME.match(row.rater)):
            problems.add(
                row.line,
                "rater",
                f"rater {row.rater!r} is not a valid username (at most {USERNAME_MAX} letters, digits and @.+-_)",
            )


def _place_tags(
    pool: Pool, parsed: formats.RreRatings, resolved: dict[str, str], problems: _Problems
) -> dict[str, list[str]]:
    """{query id: its tags} of the queries of a nested RRE file whose tags change: the group: and topic:
    tags its topics and query groups give (judgments.query_tags.name_tag) replace the query's own such
    tags; its other tags stay. More than MAX_TAGS in all: a problem on the query's line."""
    stated: dict[str, set[str]] = {}
    line: dict[str, int] = {}
    for text, tags in parsed.tags.items():
        if (qid := resolved.get(text)) is not None:
            stated.setdefault(qid, set()).update(tags)
            line.setdefault(qid, parsed.lines[text])
    stored = dict(
        Query.objects.filter(pool=pool, external_id__in=list(stated)).values_list("external_id", "tags")
    )
    out = {}
    for qid, tags in stated.items():
        own = stored.get(qid, [])
        new = normalise([*(t for t in own if not is_place(t)), *tags])
        if len(new) > MAX_TAGS:
            problems.add(line[qid], "tags", f"query {qid} would carry {len(new)} tags with its topics and groups; "
                         f"at most {MAX_TAGS}")  # fmt: skip
        elif new != own:
            out[qid] = new
    return out


def _raters(usernames: set[str]) -> dict[str, int]:
    """Usernames to user pks; missing accounts are created with an unusable password."""
    User = get_user_model()
    field = User.USERNAME_FIELD
    found = dict(User.objects.filter(**{f"{field}__in": usernames}).values_list(field, "pk"))
    missing = sorted(usernames - found.keys())
    if missing:
        users = []
        for username in missing:
            user = User(**{field: username})
            user.set_unusable_password()
            users.append(user)
        User.objects.bulk_create(users, ignore_conflicts=True)
        found = dict(User.objects.filter(**{f"{field}__in": usernames}).values_list(field, "pk"))
    return found


def _write(
    pool: Pool, rows: list[_Row], actor, new_queries: dict[str, str], tags: dict[str, list[str]] | None = None
) -> tuple[int, int, int, int, int]:
    """Store `rows` (creating `new_queries`: {id: text} first, and setting `tags`: {query id: its tags});
    returns (created, updated, unchanged, queries created, documents created). Holds the pool's import
    lock, as every writer of its queries, documents and pairs does (judgments.bulk)."""
    tags = tags or {}
    with connection.cursor() as cursor:
        bulk.lock_pool(cursor, pool.pk)
    queries_before = Query.objects.filter(pool=pool).count()
    documents_before = Document.objects.filter(pool=pool).count()
    if new_queries:
        Query.objects.bulk_create(
            [Query(pool=pool, external_id=q, text=t, tags=tags.get(q, [])) for q, t in new_queries.items()]
        )
    retagged = [
        Query(pk=pk, tags=tags[qid])
        for pk, qid in Query.objects.filter(
            pool=pool, external_id__in=[q for q in tags if q not in new_queries]
        ).values_list("pk", "external_id")
    ]
    Query.objects.bulk_update(retagged, ["tags"], batch_size=5000)
    query_pks = pool_keys.ensure_queries(pool, {r.query for r in rows})
    doc_pks = pool_keys.ensure_documents(pool, {r.doc_id for r in rows})
    rater_pks = _raters({r.rater for r in rows})
    keys = [(query_pks[r.query], doc_pks[r.doc_id]) for r in rows]
    pair_pks = pool_keys.ensure_pairs(pool, set(keys))
    queries_created = Query.objects.filter(pool=pool).count() - queries_before
    documents_created = Document.objects.filter(pool=pool).count() - documents_before

    judgments = [(pair_pks[key], r) for key, r in zip(keys, rows, strict=True) if not r.final]
    finals = [(pair_pks[key], r) for key, r in zip(keys, rows, strict=True) if r.final]
    services.set_actor(actor)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE TEMP TABLE IF NOT EXISTS jl_import_judgments (
                pair_id bigint, rater_id bigint, grade smallint, cant_judge boolean, reason text,
                note text, created_at timestamptz, updated_at timestamptz, PRIMARY KEY (pair_id, rater_id)
            ) ON COMMIT DROP
            """
        )
        cursor.execute("TRUNCATE jl_import_judgments")
        with cursor.copy(
            "COPY jl_import_judgments (pair_id, rater_id, grade, cant_judge, reason, note, created_at, updated_at)"
            " FROM STDIN"
        ) as copy:
            for pair_id, r in judgments:
                copy.write_row(
                    (
                        pair_id,
                        rater_pks[r.rater],
                        r.grade,
                        r.cant_judge,
                        r.reason,
                        r.note,
                        r.created_at,
                        r.updated_at,
                    )
                )
        # Changed judgments first, then new ones: a NULL note or timestamp in the file keeps the stored one.
        cursor.execute(
            """
            UPDATE judgments_judgment j
            SET grade = t.grade, cant_judge = t.cant_judge, cant_judge_reason = t.reason,
                note = COALESCE(t.note, j.note), created_at = COALESCE(t.created_at, j.created_at),
                updated_at = COALESCE(t.updated_at, now())
            FROM jl_import_judgments t
            WHERE j.pair_id = t.pair_id AND j.rater_id = t.rater_id
              AND ((j.grade, j.cant_judge, j.cant_judge_reason) IS DISTINCT FROM (t.grade, t.cant_judge, t.reason)
                   OR j.note <> COALESCE(t.note, j.note)
                   OR j.created_at <> COALESCE(t.created_at, j.created_at)
                   OR j.updated_at <> COALESCE(t.updated_at, j.updated_at))
            RETURNING j.pair_id
            """
        )
        updated = [pair_id for (pair_id,) in cursor.fetchall()]
        cursor.execute(
            """
            INSERT INTO judgments_judgment
                (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note, created_at, updated_at)
            SELECT t.pair_id, t.rater_id, t.grade, t.cant_judge, t.reason, COALESCE(t.note, ''),
                   COALESCE(t.created_at, now()), COALESCE(t.updated_at, t.created_at, now())
            FROM jl_import_judgments t
            WHERE NOT EXISTS (SELECT 1 FROM judgments_judgment j WHERE j.pair_id = t.pair_id AND j.rater_id = t.rater_id)
            RETURNING pair_id
            """
        )
        created = [pair_id for (pair_id,) in cursor.fetchall()]
    changed_finals = []
    if finals:
        by_pk = Pair.objects.in_pool(pool).in_bulk([pk for pk, _ in finals])
        for pair_pk, r in finals:
            pair = by_pk[pair_pk]
            admin = rater_pks[r.rater]
            at = r.updated_at or r.created_at  # None: unknown, keep the stored time if nothing else changed
            if pair.final_grade == r.grade and pair.final_by_id == admin and at in (None, pair.final_at):
                continue
            pair.final_grade, pair.final_by_id, pair.final_at = r.grade, admin, at or timezone.now()
            changed_finals.append(pair)
        Pair.objects.bulk_update(changed_finals, ["final_grade", "final_by", "final_at"], batch_size=2000)
    changed = set(updated) | set(created) | {p.pk for p in changed_finals}
    if changed:
        pair_ids = sorted(changed)
        grades_changed.send(sender=Pool, pool=pool, pair_ids=pair_ids)  # in the transaction (see signals)
    unchanged = len(rows) - len(updated) - len(created) - len(changed_finals)
    return len(created), len(updated) + len(changed_finals), unchanged, queries_created, documents_created


def import_judgments(pool: Pool, stream, *, format: str, name: str, rater=None, actor=None) -> ImportSummary:
    """Import a judgments file of `format` ("csv", "rater-csv", "jsonl" or "rre") into `pool`. All or nothing.

    rater (csv and rre): the user the ratings belong to; default the non-login account "ratings:<file
    name>". actor: who the judgment history records as having made the changes (default each rater).
    Raises FormatError with every problem (line, field, message)."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    problems = _Problems(name)
    new_queries: dict[str, str] = {}
    place_tags: dict[str, list[str]] = {}
    skipped = 0
    if format in ("csv", "rre"):
        username = rater.get_username() if rater is not None else csv_rater_username(name)
        parsed = (
            formats.parse_quepid_csv(stream, name) if format == "csv" else formats.parse_rre(stream, name)
        )
        skipped = len(parsed.unrated)
        resolved: dict[str, str] = {}
        rows = _rows_by_query_text(
            pool,
            parsed.records,
            parsed.unrated,
            username,
            problems,
            new_queries,
            case=format == "rre",
            resolved=resolved,
        )
        if format == "rre" and parsed.nested:  # its topics and query groups: tags of the queries
            place_tags = _place_tags(pool, parsed, resolved, problems)
    elif format == "rater-csv":
        rows = _rows_from_rater_csv(stream, name)
    else:
        rows = _rows_from_jsonl(stream, name, problems)
    # An existing account given as the rater keeps its name, whatever it is.
    _check(rows, pool, problems, usernames=rater is None or format not in ("csv", "rre"))
    problems.raise_if_any()
    raters = sorted({r.rater for r in rows})
    try:
        with transaction.atomic():
            created, updated, unchanged, queries_created, documents_created = _write(
                pool, rows, actor, new_queries, place_tags
            )
    except DatabaseError as exc:
        raise database_refused(name, exc) from None
    return ImportSummary(
        name,
        "judgments",
        len(rows),
        created,
        updated,
        unchanged,
        queries_created=queries_created,
        documents_created=documents_created,
        rater=raters[0] if len(raters) == 1 else f"{len(raters)} raters",
        skipped=skipped,
    )

"""Queries as TSV (qid<TAB>text[<TAB>tags]) or JSON lines with the information need, per-query fields and
tags (judgments.query_tags: in TSV a comma- or space-separated cell, in JSON lines a list)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from judgments import limits
from judgments.query_fields import fields_problem
from judgments.query_tags import join_tags, normalise, split_tags, tags_problem

from .problems import (
    FormatError,
    Problem,
    Reader,
    Stream,
    gc_paused,
    id_problem,
    json_type,
    require_id,
)
from .read import as_iterable, iter_json_objects, iter_lines, json_id, json_line, json_text
from .records import QueryRecord

# --------------------------------------------------------------------------------------------------
# Queries


def _query_text_problem(text: Any) -> str | None:
    if not isinstance(text, str):
        return f"query text must be a string, got {json_type(text)}"
    if not text.strip():
        return "query text is empty"
    if "\x00" in text:
        return "query text contains a NUL character"
    if msg := limits.too_long("query text", text, limits.QUERY_TEXT):
        return msg
    return None


@gc_paused
def parse_queries_tsv(stream: Stream, name: str = "<file>") -> list[QueryRecord]:
    """Queries as ``qid<TAB>text`` lines, or ``qid<TAB>text<TAB>tags`` (tags separated by commas, or by
    spaces when there is no comma; an empty third cell clears the query's tags, a line without one keeps
    them). Duplicate ids are a problem."""
    reader = Reader(name)
    for lineno, text in iter_lines(stream, reader):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        reader.count += 1
        parts = text.split("\t")
        if len(parts) not in (2, 3):
            if len(parts) == 1:
                reader.add(lineno, "line", "expected 'query_id<TAB>text': no tab found")
            else:
                reader.add(
                    lineno,
                    "line",
                    f"expected 2 or 3 tab-separated fields 'query_id<TAB>text[<TAB>tags]', found {len(parts)}",
                )
            continue
        qid, qtext = parts[0], parts[1]
        ok = True
        tags = None
        if len(parts) == 3:
            try:
                tags = split_tags(parts[2])
            except ValueError as exc:
                reader.add(lineno, "tags", str(exc))
                ok = False
        msg = id_problem(qid, query=True)
        if msg:
            reader.add(lineno, "qid", f"query id {msg}")
            ok = False
        msg = _query_text_problem(qtext)
        if msg:
            reader.add(lineno, "text", msg)
            ok = False
        if ok and not reader.twice(qid, lineno, "qid", f"query id {qid} appears twice"):
            reader.keep(QueryRecord(lineno, qid, qtext, "", None, tags))
    return reader.finish("queries")


@gc_paused
def parse_queries_jsonl(stream: Stream, name: str = "<file>") -> list[QueryRecord]:
    """Queries as JSON lines ``{"id", "text", "information_need"?, "fields"?, "tags"?}``; other keys are
    ignored. ``fields``: ``{"locale": "fr-FR", "category": 3}``, values endpoint templates use as
    ``{{query.fields.NAME}}``. ``tags``: ``["head", "category:shoes"]`` (a line without keeps the stored
    ones, ``[]`` clears them)."""
    reader = Reader(name)
    for lineno, obj in iter_json_objects(stream, reader):
        ok = True
        qid, msg = json_id(obj, "id", query=True)
        if msg:
            reader.add(lineno, "id", msg)
            ok = False
        text = obj.get("text")
        if "text" not in obj:
            reader.add(lineno, "text", "text is missing")
            ok = False
        else:
            msg = _query_text_problem(text)
            if msg:
                reader.add(lineno, "text", msg)
                ok = False
        need, msg = json_text(obj, "information_need", limit=limits.INFORMATION_NEED)
        if msg:
            reader.add(lineno, "information_need", msg)
            ok = False
        fields = obj.get("fields")
        if "fields" in obj:
            msg = fields_problem(fields)
            if msg:
                reader.add(lineno, "fields", msg)
                ok = False
        tags = obj.get("tags")
        if "tags" in obj:
            msg = tags_problem(tags)
            if msg:
                reader.add(lineno, "tags", msg)
                ok = False
            else:
                tags = normalise(tags)
        if ok and not reader.twice(qid, lineno, "id", f"query id {qid} appears twice"):
            reader.keep(QueryRecord(lineno, qid, text, need, fields, tags))  # type: ignore[arg-type]
    return reader.finish("queries")


@gc_paused
def parse_queries(stream: Stream, name: str = "<file>") -> list[QueryRecord]:
    """Queries in either format: JSON lines if the first non-blank character is ``{``, else TSV."""
    it = iter(as_iterable(stream))
    head: list = []
    is_json = False
    try:
        for raw in it:
            head.append(raw)
            text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8", "replace")
            text = text.lstrip("\ufeff").strip()
            if text:
                is_json = text.startswith("{")
                break
    except UnicodeDecodeError as exc:  # a text stream that could not decode its input
        message = f"not valid UTF-8 ({exc.reason}); the rest of the file was not read"
        raise FormatError(name, [Problem(len(head) + 1, "encoding", message)]) from None

    def chained() -> Iterator:
        yield from head
        yield from it

    parser = parse_queries_jsonl if is_json else parse_queries_tsv
    return parser(chained(), name)


def _query_tuple(record: Any) -> tuple[Any, Any, Any]:
    if isinstance(record, QueryRecord):
        return record.query_id, record.text, record.information_need
    record = tuple(record)
    if len(record) == 2:
        return record[0], record[1], ""
    if len(record) == 3:
        return record[0], record[1], record[2]
    raise ValueError(f"a query must be a QueryRecord or (query_id, text[, information_need]), got {record!r}")


def write_queries_tsv(records: Iterable[QueryRecord | tuple]) -> Iterator[str]:
    """``qid<TAB>text`` lines, with a third cell of comma-separated tags for a query that has any. The
    information need is not part of this format (use JSON lines). A text containing a tab or line break
    cannot be written (ValueError)."""
    for record in records:
        qid, text, _need = _query_tuple(record)
        tags = record.tags if isinstance(record, QueryRecord) else None
        require_id(qid, "query id", query=True)
        msg = _query_text_problem(text)
        if msg:
            raise ValueError(f"query {qid}: {msg}")
        if "\t" in text or "\n" in text or "\r" in text:
            raise ValueError(
                f"query {qid}: text contains a tab or line break, which TSV cannot hold (use JSON lines)"
            )
        yield f"{qid}\t{text}\t{join_tags(tags)}\n" if tags else f"{qid}\t{text}\n"


def write_queries_jsonl(records: Iterable[QueryRecord | tuple]) -> Iterator[str]:
    """``{"id", "text", "information_need"}`` per line, and ``"fields"`` and ``"tags"`` for a query that has
    any."""
    for record in records:
        qid, text, need = _query_tuple(record)
        fields = record.fields if isinstance(record, QueryRecord) else None
        tags = record.tags if isinstance(record, QueryRecord) else None
        require_id(qid, "query id", query=True)
        msg = _query_text_problem(text)
        if msg:
            raise ValueError(f"query {qid}: {msg}")
        if need is None:
            need = ""
        if not isinstance(need, str) or "\x00" in need:
            raise ValueError(f"query {qid}: information_need must be a string without NUL characters")
        line = {"id": qid, "text": text, "information_need": need}
        if fields:
            line["fields"] = fields
        if tags:
            line["tags"] = tags
        yield json_line(line)

"""Documents as JSON lines: id, title, body, url, other keys kept as extra fields."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from judgments import limits

from .problems import BAD_ID_CHAR, MAX_URL_LENGTH, Reader, Stream, char_desc, excerpt, gc_paused
from .read import iter_json_objects, json_id, json_line, json_text
from .records import DocumentRecord

# --------------------------------------------------------------------------------------------------
# Documents

_DOC_KEYS = ("id", "title", "body", "url")
_URL_SCHEMES = ("http://", "https://", "ftp://", "ftps://")


def _url_problem(url: str) -> str | None:
    if not url:
        return None
    if len(url) > MAX_URL_LENGTH:
        return f"url is {len(url)} characters long (at most {MAX_URL_LENGTH})"
    if not url.lower().startswith(_URL_SCHEMES):
        return f"url {excerpt(url)} must start with http://, https://, ftp:// or ftps://"
    m = BAD_ID_CHAR.search(url)
    if m:
        return f"url {excerpt(url)} contains whitespace or a control character ({char_desc(url, m)})"
    return None


def _document_from_obj(
    obj: Mapping[str, Any], lineno: int
) -> tuple[DocumentRecord | None, list[tuple[str, str]]]:
    errors: list[tuple[str, str]] = []
    doc_id, msg = json_id(obj, "id")
    if msg:
        errors.append(("id", msg))
    values = {}
    for key, limit in (("title", limits.DOCUMENT_TITLE), ("body", limits.DOCUMENT_BODY), ("url", None)):
        values[key], msg = json_text(obj, key, limit=limit)
        if msg:
            errors.append((key, msg))
    if not errors:
        msg = _url_problem(values["url"])
        if msg:
            errors.append(("url", msg))
    if errors:
        return None, errors
    extra = {k: v for k, v in obj.items() if k not in _DOC_KEYS}
    return DocumentRecord(lineno, doc_id, values["title"], values["body"], values["url"], extra), []  # type: ignore[arg-type]


@gc_paused
def parse_documents_jsonl(stream: Stream, name: str = "<file>") -> list[DocumentRecord]:
    """Documents as JSON lines ``{"id", "title"?, "body"?, "url"?, ...}``; other keys go to ``extra``.
    title/body/url must be strings if present (null counts as absent). Duplicate ids are a problem."""
    reader = Reader(name)
    for lineno, obj in iter_json_objects(stream, reader):
        record, errors = _document_from_obj(obj, lineno)
        for key, msg in errors:
            reader.add(lineno, key, msg)
        if record is not None and not reader.twice(
            record.doc_id, lineno, "id", f"doc id {record.doc_id} appears twice"
        ):
            reader.keep(record)
    return reader.finish("documents")


def write_documents_jsonl(records: Iterable[DocumentRecord]) -> Iterator[str]:
    """``{"id", "title", "body", "url", **extra}`` per line."""
    for record in records:
        extra = record.extra or {}
        clash = [k for k in extra if k in _DOC_KEYS]
        if clash:
            raise ValueError(f"document {record.doc_id}: extra may not contain the keys {clash}")
        obj = {"id": record.doc_id, "title": record.title, "body": record.body, "url": record.url, **extra}
        _, errors = _document_from_obj(obj, 0)
        if errors:
            raise ValueError(f"document {record.doc_id!r}: {errors[0][1]}")
        yield json_line(obj)

"""The one table of text limits, in characters, for every path that writes these fields: web forms,
the API, every import format, campaign pages, model judges and the database itself (CHECK
constraints, migration 0014). docs/limits.md lists them for users. No Django imports: the file
formats read it too.

A value over its limit is refused with one line naming the field (and the file's line), never cut,
except the reason a model judge gives, which is cut to NOTE (it is the model's text, not a person's).
"""

from __future__ import annotations

QUERY_TEXT = 10_000  # what a searcher typed: raters read it on every page of the query
INFORMATION_NEED = 20_000  # a paragraph or a few, shown beside the query
DOCUMENT_TITLE = 2_000
DOCUMENT_BODY = 1_000_000  # about 1-4 MB of UTF-8; longer bodies are not read by raters anyway
NOTE = 2_000  # a judgment's note and its can't-judge reason (a rater's or a model judge's)
ID = 200  # query and document ids (the formats' MAX_ID_LENGTH, the models' EXTERNAL_ID_MAX)
URL = 2_000

# (model, field) -> limit: what the models' validators and the database's constraints are built from.
FIELDS: dict[tuple[str, str], int] = {
    ("query", "text"): QUERY_TEXT,
    ("query", "information_need"): INFORMATION_NEED,
    ("document", "title"): DOCUMENT_TITLE,
    ("document", "body"): DOCUMENT_BODY,
    ("judgment", "note"): NOTE,
    ("judgment", "cant_judge_reason"): NOTE,
}


def too_long(what: str, value: str, limit: int) -> str | None:
    """One line saying that `value` is over `limit`, or None."""
    if len(value) > limit:
        return f"{what} is {len(value):,} characters long (at most {limit:,})"
    return None


def cut(value: str, limit: int) -> str:
    """`value` cut to `limit` characters, with an ellipsis when cut (model judges' reasons only)."""
    return value if len(value) <= limit else value[: limit - 1] + "…"

"""What the parsers return: one frozen record type per format."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .problems import RaterCell

# --------------------------------------------------------------------------------------------------
# Records


@dataclass(slots=True)
class QrelRecord:
    line: int
    query_id: str
    doc_id: str
    grade: int


@dataclass(slots=True)
class RunFile:
    """A parsed TREC run: each query's doc ids in final order (queries in order of first appearance)."""

    rankings: dict[str, list[str]]
    tag: str  # the first run tag seen
    tags: list[str] = field(default_factory=list)  # every distinct tag, in order of first appearance

    @property
    def num_entries(self) -> int:
        return sum(len(docs) for docs in self.rankings.values())


@dataclass(slots=True)
class RunColumns:
    """A parsed TREC run as parallel columns, one entry per ranked document, in final order.

    Rows of one query are contiguous; ``ranks`` is the 1-based position in the final order,
    ``scores`` the score column as read, ``lines`` the line each entry came from.
    """

    query_ids: list[str]
    doc_ids: list[str]
    ranks: list[int]
    scores: list[float]
    lines: list[int]
    tag: str
    tags: list[str]

    def __len__(self) -> int:
        return len(self.doc_ids)


@dataclass(slots=True)
class QueryRecord:
    line: int
    query_id: str
    text: str
    information_need: str = ""
    fields: dict[str, Any] | None = None  # None: the file says nothing about fields (TSV)
    tags: list[str] | None = None  # None: the line says nothing about tags (kept as stored)


@dataclass(slots=True)
class DocumentRecord:
    line: int
    doc_id: str
    title: str = ""
    body: str = ""
    url: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class JudgmentCsvRecord:
    line: int
    query: str  # a query id or a query text: the caller decides
    doc_id: str
    grade: int


@dataclass(slots=True)
class RaterCsvRecord:
    line: int
    query_id: str
    doc_id: str
    grades: dict[str, RaterCell]  # every rater of the header: grade 0-4, "X" (can't judge) or None (no grade)


@dataclass(slots=True)
class RaterCsvFile:
    raters: list[str]
    rows: list[RaterCsvRecord]


@dataclass(slots=True)
class JudgmentJsonRecord:
    line: int
    query_id: str
    doc_id: str
    rater: str
    grade: int | None
    cant_judge: bool = False
    reason: str = ""
    note: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    final: bool = False

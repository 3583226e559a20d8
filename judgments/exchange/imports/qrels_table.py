"""A qrels file as columns, for `trec.import_qrels`: its query and document ids once each, and per
judgment the codes of its query and document into those lists and its grade.

`read_common` reads the common shape of qrels file without a Python object per line: printable
ASCII, one space between the four fields, a newline after each line, no comment or blank line, a
grade that is one digit 0-4 and no (query, document) twice. numpy checks the layout and reads the
grades; one `split` gives the ids: a fraction of the time of `formats.parse_qrels` and the text COPY
built from its records. It returns None for any other file, and
the caller then runs `formats.parse_qrels`, which accepts the same files (and more) with the same
result and names every problem by line and field; `from_records` turns its records into columns.

`copy_rows` writes the rows, as database keys, to a table (bigint, bigint, smallint) by binary COPY
(`judgments.pgcopy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from judgments.exchange.formats import MAX_ID_LENGTH, QrelRecord
from judgments.pgcopy.rows import empty_rows, write_rows

from . import fastrun

FIELDS = 4
_ALLOWED = bytes(range(0x21, 0x7F)) + b" \n"
_ZERO = 0x30
_COLUMNS = (("query", ">i8"), ("document", ">i8"), ("grade", ">i2"))  # binary COPY rows


@dataclass
class QrelsTable:
    query_ids: list[str]  # each once, in order of first appearance
    doc_ids: list[str]
    queries: np.ndarray  # per judgment, in file order: an index into query_ids
    docs: np.ndarray  # an index into doc_ids
    grades: np.ndarray

    def __len__(self) -> int:
        return len(self.grades)

    @classmethod
    def from_records(cls, records: Sequence[QrelRecord]) -> QrelsTable:
        query_ids, queries = _codes([r.query_id for r in records])
        doc_ids, docs = _codes([r.doc_id for r in records])
        grades = np.array([r.grade for r in records], dtype=np.int16)
        return cls(query_ids, doc_ids, queries, docs, grades)

    def copy_rows(self, cursor, table: str, query_pks: Mapping[str, int], doc_pks: Mapping[str, int]) -> None:
        """COPY every judgment into `table` (query_id bigint, document_id bigint, grade smallint) as
        (query key, document key, grade), in file order."""
        rows = empty_rows(_COLUMNS, len(self))
        rows["query"] = np.array([query_pks[q] for q in self.query_ids], dtype=np.int64)[self.queries]
        rows["document"] = np.fromiter(map(doc_pks.__getitem__, self.doc_ids), np.int64, len(self.doc_ids))[
            self.docs
        ]
        rows["grade"] = self.grades
        write_rows(cursor, table, ["query_id", "document_id", "grade"], rows)


def _codes(values: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct values in order of first appearance, and the index of every value among them."""
    distinct = list(dict.fromkeys(values))
    index = dict(zip(distinct, range(len(distinct)), strict=True))
    return distinct, np.fromiter(map(index.__getitem__, values), np.int64, len(values))


def read_common(data: bytes) -> QrelsTable | None:
    """The judgments of a qrels file in the common shape (see the module's docstring), else None."""
    layout = fastrun.split_lines(data, FIELDS, _ALLOWED)
    if layout is None:
        return None
    data, buffer, ends, line_starts = layout
    query_lengths, doc_lengths = ends[:, 0] - line_starts, ends[:, 2] - ends[:, 1] - 1
    if max(query_lengths.max(), doc_lengths.max()) > MAX_ID_LENGTH:
        return None
    # The grade: one digit 0-4 (parse_qrels reads "00", "+1" and the like, and refuses the rest).
    if np.any(ends[:, 3] - ends[:, 2] != 2):
        return None
    grades = buffer[ends[:, 2] + 1].astype(np.int16) - _ZERO
    if np.any((grades < 0) | (grades > 4)):
        return None
    fields = data.decode("ascii").split(" ")  # "q", "0", "d", "g\nq", ... : ids never hold a newline
    query_ids, queries = _codes([fields[0], *(f[2:] for f in fields[3:-1:3])])
    doc_ids, docs = _codes(fields[2::3])
    # A (query, document) twice: parse_qrels names both lines.
    pairs = np.sort(queries * len(doc_ids) + docs)
    if np.any(pairs[1:] == pairs[:-1]):
        return None
    return QrelsTable(query_ids, doc_ids, queries, docs, grades)

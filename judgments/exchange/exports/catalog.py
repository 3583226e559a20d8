"""What each role may download: every export of a pool, for the export page, the API and the tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from judgments import access
from judgments.models import Pool, Run

from .files import (
    documents_lines,
    judgments_csv_lines,
    judgments_filename,
    judgments_jsonl_lines,
    quepid_csv_lines,
    queries_lines,
    rater_csv_lines,
    rre_lines,
)
from .grades import combined_stem, qrels_chunks, qrels_filename, ranklib_lines


@dataclass(frozen=True)
class PoolExport:
    """One download of a pool, for the export page, the API and the tests alike."""

    key: str
    title: str
    audience: str  # access.ADMIN: admins only; access.ENGINEER: engineers of the pool and admins
    content_type: str
    make: Callable[[Pool], Iterator[str]]
    filename: Callable[[Pool], str]
    combined: bool = False  # made of combined grades: the page shows the rule and scale beside it
    per_user: bool = False  # make(pool, user): the lines depend on who asks (access.documents_for)

    def open(self, pool: Pool, user=None) -> Iterator[str]:
        """The export's lines for `user` (None: everything, for commands and tests)."""
        return self.make(pool, user) if self.per_user else self.make(pool)


_TEXT = "text/plain; charset=utf-8"
_JSONL = "application/x-ndjson; charset=utf-8"
_CSV = "text/csv; charset=utf-8"

POOL_EXPORTS: dict[str, PoolExport] = {
    e.key: e
    for e in (
        PoolExport("qrels", "TREC qrels (qid 0 docid grade), integer grades", access.ADMIN, _TEXT,
                   qrels_chunks, qrels_filename, combined=True),
        PoolExport("qrels-exact", "TREC qrels with exact (possibly fractional) combined grades", access.ADMIN, _TEXT,
                   lambda p: qrels_chunks(p, rounding="exact"), lambda p: qrels_filename(p, "exact"), combined=True),
        PoolExport("ranklib", "RankLib / LTR labels (grade qid:N # docid query)", access.ADMIN, _TEXT,
                   ranklib_lines, lambda p: f"{combined_stem(p)}.ranklib.txt", combined=True),
        PoolExport("judgments-csv", "Quepid CSV query,docid,rating (query text)", access.ADMIN, _CSV,
                   judgments_csv_lines, lambda p: judgments_filename(p, "csv"), combined=True),
        PoolExport("judgments-csv-ids", "Quepid CSV query,docid,rating (query id)", access.ADMIN, _CSV,
                   lambda p: judgments_csv_lines(p, query_column="id"),
                   lambda p: f"{combined_stem(p)}.ratings-by-id.csv", combined=True),
        PoolExport("judgments-quepid-csv", "Quepid's current CSV export (ratings 3.0, unrated queries as query,,)",
                   access.ADMIN, _CSV, quepid_csv_lines, lambda p: judgments_filename(p, "quepid-csv"), combined=True),
        PoolExport("judgments-rre", "RRE ratings JSON (relevant documents by grade; Quepid imports it)", access.ADMIN,
                   "application/json; charset=utf-8", rre_lines, lambda p: judgments_filename(p, "rre"), combined=True),
        PoolExport("judgments-rater-csv", "Per-rater CSV (one column per rater)", access.ADMIN, _CSV,
                   rater_csv_lines, lambda p: judgments_filename(p, "rater-csv")),
        PoolExport("judgments-jsonl", "Every judgment and final grade, every field (JSON lines)", access.ADMIN, _JSONL,
                   judgments_jsonl_lines, lambda p: judgments_filename(p, "jsonl")),
        PoolExport("queries-tsv", "Queries as TSV (qid<TAB>text)", access.ENGINEER, _TEXT,
                   lambda p: queries_lines(p, "tsv"), lambda p: f"{p.name}.queries.tsv"),
        PoolExport("queries-jsonl", "Queries with information needs (JSON lines)", access.ENGINEER, _JSONL,
                   lambda p: queries_lines(p, "jsonl"), lambda p: f"{p.name}.queries.jsonl"),
        PoolExport("documents", "Documents (JSON lines)", access.ENGINEER, _JSONL,
                   lambda p, user=None: documents_lines(p, None if user is None else access.documents_for(user, p)),
                   lambda p: f"{p.name}.documents.jsonl", per_user=True),
    )
}  # fmt: skip


def may_export(user, export: PoolExport) -> bool:
    """Judgments, qrels and RankLib: admins. Queries and documents: engineers too. Raters: nothing."""
    if access.is_admin(user):
        return True
    return export.audience == access.ENGINEER and access.is_engineer(user)


def may_export_run(user, run: Run) -> bool:
    """Admins any run; engineers their own teams' runs, and others' where the pool shares rankings."""
    return access.may_see_rankings(user, run.configuration)

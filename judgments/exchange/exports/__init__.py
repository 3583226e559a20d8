"""Every export of a pool as a stream of chunks: nothing builds a whole file in memory.

Each export returns a generator of chunks (each a run of complete lines) that a management command
writes to stdout and a view hands to ``StreamingHttpResponse``. The big files (qrels, runs, and
scoring's score exports) are formatted by PostgreSQL and streamed by ``COPY ... TO STDOUT`` many lines
per row, because Python per line would dominate (see ``bench_export``); the others are written by the
Python writers of ``formats`` from rows read through a server-side cursor.

Modules: stream (COPY and cursor readers, ExportError), pgtext (SQL that writes values as the Python
writers do), grades (combined grades, qrels, RankLib), runs (TREC runs), files (queries, documents,
judgment files), catalog (what each role may download). Import the names from this package: each is
loaded from its module on first use, so that `export_qrels` does not import the file formats, the
access rules and the rest (an export command is a process of its own; start-up counts).
"""

from judgments.lazy import lazy_names

_HOMES = {
    "catalog": ("POOL_EXPORTS", "PoolExport", "may_export", "may_export_run"),
    "files": (
        "DELETED_ADMIN", "JUDGMENT_FORMATS", "QUERY_COLUMNS", "QUERY_FORMATS", "RRE_SHAPES", "documents_lines",
        "judgments_csv_lines", "judgments_filename", "judgments_jsonl_lines", "judgments_lines",
        "queries_lines", "quepid_csv_lines", "rater_csv_lines", "raters_of", "rre_lines",
    ),
    "grades": (
        "ROUNDINGS", "combined_grades", "combined_grades_sql", "combined_note", "combined_stem", "qrels_blocks",
        "qrels_chunks", "qrels_filename", "ranklib_lines", "scale_text",
    ),
    "runs": ("run_blocks", "run_chunks", "run_filename", "run_tag"),
    "stream": ("CHUNK_ROWS", "ExportError"),
}  # fmt: skip
__all__ = sorted(name for names in _HOMES.values() for name in names)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)

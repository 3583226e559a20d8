"""Import services: files in, rows out, all or nothing (one transaction; nothing written on a problem).

Every function parses and checks the whole file first. A bad file raises `judgments.exchange.formats.FormatError`
(`.name`, `.problems`: `Problem(line, field, message)`; `str()` gives "file:line: field: message" lines).
`stream` is anything `judgments.exchange.formats` reads: a binary or text file, an iterable of lines, bytes, str.

TREC formats (judgments/exchange/imports/trec.py):

    import_queries(pool, stream, *, name) -> ImportSummary
        TSV "qid<TAB>text" or JSON lines {"id", "text", "information_need"} (sniffed). Creates the
        missing queries, updates the text (and the information need, when given) of existing ones.

    import_qrels(pool, stream, *, name, rater=None, grade_map=None, actor=None) -> ImportSummary
        TREC qrels "qid iter docid grade". Judgments by `rater` (default: the non-login account
        "qrels:<file name>", created if missing); a re-import by the same rater updates changed grades.
        grade_map: {file grade: 0-4 or None (skip)} or its text "-2:0,-1:skip"; without it grades
        other than 0-4 are refused. Unknown queries and documents are created. `actor` is recorded
        in the judgment history (default: the rater). Sends grades_changed in its transaction.

    import_run(configuration, stream, *, name, order="score", submitted_by=None, source="file") -> Run
        TREC run "qid Q0 docid rank score tag" as a new run (judgments.services.record_run).
        order="score": trec_eval's order (score descending as doubles, ties by docid descending,
        rank column ignored); order="rank": the rank column. Sends run_submitted in its transaction.

ImportSummary(name, kind, read, created, updated, unchanged, queries_created, documents_created, rater);
str(summary) is a one-line report.
"""

from .trec import ImportSummary, file_rater, file_rater_username, import_qrels, import_queries, import_run

__all__ = [
    "ImportSummary",
    "file_rater",
    "file_rater_username",
    "import_qrels",
    "import_queries",
    "import_run",
]

"""Reading and writing every file format the app exchanges, with precise, line-numbered errors.

Pure Python (no Django): the views, management commands and API call these functions.

Parsers
-------
Every parser takes a *stream*: a binary file (what Django's ``UploadedFile`` is), a text file, any
iterable of ``bytes`` or ``str`` lines, or a whole ``bytes``/``str`` document. It reads the stream line
by line, validates every field and collects every problem as a :class:`Problem` (1-based line, field,
message). After the *whole* file has been read it either returns the complete validated result or
raises :class:`FormatError` carrying the problems, so a caller never writes part of a bad file.
At most :data:`MAX_PROBLEMS` problems are kept; one last problem then says how many more were cut.
Problems about the file as a whole ("file is empty") have ``line == 0``.

Common rules: input is UTF-8 (a BOM at the start is tolerated; bad bytes are a problem with field
``"encoding"``); in the TREC and TSV formats blank lines and lines whose first non-blank character is
``#`` are skipped (so query ids may not start with ``#``); ids (query ids, doc ids, raters, run tags)
are 1-200 characters with no whitespace and no control characters.

Writers
-------
Writers are generators yielding ``str`` lines that end in ``"\\n"`` (ready for Django's
``StreamingHttpResponse``). They validate what they write with the parsers' rules and raise
``ValueError`` rather than produce a file that the parsers (or trec_eval) would read differently.

Every CSV file is written by ``spreadsheet.csv_line``: cells a spreadsheet would run as a formula
(``= + - @``, tab, CR first) get a leading apostrophe, which the CSV parsers take off again exactly.

Modules: problems (Problem, FormatError, the parsers' skeleton _Reader, shared field rules), records,
read (lines, TREC fields, JSON objects, CSV rows), trec, queries, documents, judgments, quepid (Quepid's
CSV export), rre (RRE ratings JSON), jsonpos, spreadsheet. Import from this package.
"""

from .documents import (  # noqa: F401
    parse_documents_jsonl,
    write_documents_jsonl,
)
from .judgments import (  # noqa: F401
    parse_judgments_csv,
    parse_judgments_jsonl,
    parse_rater_csv,
    write_judgments_csv,
    write_judgments_jsonl,
    write_rater_csv,
)
from .problems import (  # noqa: F401
    CANT_JUDGE,
    DISTRACTOR,
    GRADES,
    JUDGMENT_GRADES,
    MAX_CSV_QUERY_LENGTH,
    MAX_ID_LENGTH,
    MAX_PROBLEMS,
    MAX_URL_LENGTH,
    FormatError,
    Problem,
    Stream,
)
from .quepid import QuepidCsvFile, UnratedRow, parse_quepid_csv, write_quepid_csv  # noqa: F401
from .queries import (  # noqa: F401
    parse_queries,
    parse_queries_jsonl,
    parse_queries_tsv,
    write_queries_jsonl,
    write_queries_tsv,
)
from .records import (  # noqa: F401
    DocumentRecord,
    JudgmentCsvRecord,
    JudgmentJsonRecord,
    QrelRecord,
    QueryRecord,
    RaterCsvFile,
    RaterCsvRecord,
    RunColumns,
    RunFile,
)
from .rre import RreRatings, parse_rre, write_rre  # noqa: F401
from .spreadsheet import csv_line, csv_lines, neutralise, restore  # noqa: F401
from .trec import (  # noqa: F401
    parse_grade_map,
    parse_qrels,
    parse_run,
    parse_run_columns,
    write_qrels,
    write_ranklib,
    write_run,
    write_trec_eval_q,
)

__all__ = [
    "QuepidCsvFile",
    "UnratedRow",
    "parse_quepid_csv",
    "write_quepid_csv",
    "RreRatings",
    "parse_rre",
    "write_rre",
    "MAX_PROBLEMS",
    "MAX_ID_LENGTH",
    "MAX_URL_LENGTH",
    "MAX_CSV_QUERY_LENGTH",
    "DISTRACTOR",
    "GRADES",
    "JUDGMENT_GRADES",
    "CANT_JUDGE",
    "Problem",
    "FormatError",
    "QrelRecord",
    "RunFile",
    "RunColumns",
    "QueryRecord",
    "DocumentRecord",
    "JudgmentCsvRecord",
    "RaterCsvRecord",
    "RaterCsvFile",
    "JudgmentJsonRecord",
    "parse_grade_map",
    "parse_qrels",
    "parse_run",
    "parse_run_columns",
    "parse_queries",
    "parse_queries_tsv",
    "parse_queries_jsonl",
    "parse_documents_jsonl",
    "parse_judgments_csv",
    "parse_rater_csv",
    "parse_judgments_jsonl",
    "write_qrels",
    "write_run",
    "write_ranklib",
    "write_trec_eval_q",
    "write_queries_tsv",
    "write_queries_jsonl",
    "write_documents_jsonl",
    "write_judgments_csv",
    "write_rater_csv",
    "write_judgments_jsonl",
    "csv_line",
    "csv_lines",
    "neutralise",
    "restore",
]

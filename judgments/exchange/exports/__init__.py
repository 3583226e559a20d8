"""Every export of a pool as a stream of chunks: nothing builds a whole file in memory.

Each export returns a generator of chunks (each a run of complete lines) that a management command
writes to stdout and a view hands to ``StreamingHttpResponse``. The big files (qrels, runs, and
scoring's score exports) are formatted by PostgreSQL and streamed by ``COPY ... TO STDOUT`` many lines
per row, because Python per line would dominate (see ``bench_export``); the others are written by the
Python writers of ``formats`` from rows read through a server-side cursor.

Modules: stream (COPY and cursor readers, ExportError), pgtext (SQL that writes values as the Python
writers do), grades (combined grades, qrels, RankLib), runs (TREC runs), files (queries, documents,
judgment files), catalog (what each role may download). Import each name from its module
(`from judgments.exchange.exports.grades import qrels_blocks`): `export_qrels` then does not import the
file formats, the access rules and the rest (an export command is a process of its own; start-up counts).
"""

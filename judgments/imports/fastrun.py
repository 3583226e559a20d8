"""A fast path for the common shape of TREC run file, used by `trec.import_run` before the general parser.

The common shape: printable ASCII, one space between the six fields, a newline after each line, no
comment or blank line, no backslash. Such a file is checked and ordered with whole-file operations
(one `bytes.split`, numpy over the columns) instead of Python code per line, its documents are mapped
to keys with one query, and its rankings go in with COPY: about 5x faster than the general path on
500,000 lines (see `manage.py bench_exchange`).

`import_run_fast` returns None whenever the file is not in that shape or breaks any rule of
`formats.parse_run` (field count, integer rank, finite score, id length, a doc twice in a query, a
rank twice with order="rank", empty file): the caller then runs the general parser, which names every
problem by line and field. For a file it accepts it stores exactly what `formats.parse_run` followed
by `services.record_run` would (tests/exchange/test_fast_run_import.py checks the two agree).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from itertools import repeat
from operator import ne

import numpy as np
import psycopg
from django.db import IntegrityError, connection, transaction

from judgments import services
from judgments.formats import MAX_ID_LENGTH
from judgments.models import Run, SearchConfiguration
from judgments.signals import run_submitted

_PRINTABLE = bytes(range(0x21, 0x7F))
_ALLOWED = _PRINTABLE + b" \n"
_RANK_CHARS = b"0123456789+- "
_SCORE_CHARS = b"0123456789.eE+- "
FIELDS = 6


def as_bytes(stream) -> tuple[bytes | None, object]:
    """The whole file as bytes when the stream is binary (bytes, a binary file, lines of bytes), else
    None; and a stream that still reads the whole file for the general parser."""
    if isinstance(stream, (bytes, bytearray, memoryview)):
        return bytes(stream), stream
    if isinstance(stream, str):
        return None, stream
    read = getattr(stream, "read", None)
    chunks = [read()] if read is not None else list(stream)
    try:
        return b"".join(chunks), chunks
    except TypeError:  # text lines
        return None, chunks


def _columns(data: bytes, order: str):
    """(query ids, doc ids, row order, tag) of a file in the common shape, or None."""
    if not data or data.translate(None, _ALLOWED) or b"\\" in data:
        return None
    if not data.endswith(b"\n"):
        data += b"\n"
    if data[:1] in (b" ", b"#", b"\n") or b"\n#" in data or b"  " in data or b" \n" in data or b"\n " in data:
        return None
    if b"\n\n" in data:
        return None
    tokens = data.split()
    buffer = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buffer == 10)
    n = len(newlines)
    if n == 0 or len(tokens) != FIELDS * n:
        return None
    # Exactly five spaces on every line (the totals above could hide a 5-field and a 7-field line).
    spaces = np.flatnonzero(buffer == 32)
    per_line = np.diff(np.searchsorted(spaces, newlines), prepend=0)
    if not np.all(per_line == FIELDS - 1):
        return None
    query_ids, doc_ids, ranks, scores, tags = (
        tokens[0::6],
        tokens[2::6],
        tokens[3::6],
        tokens[4::6],
        tokens[5::6],
    )
    if max(map(len, query_ids)) > MAX_ID_LENGTH or max(map(len, doc_ids)) > MAX_ID_LENGTH:
        return None
    if max(map(len, tags)) > MAX_ID_LENGTH:
        return None
    # Ranks are integers and scores finite numbers, as formats.parse_run reads them (no "_", no hex).
    if b" ".join(ranks).translate(None, _RANK_CHARS) or b" ".join(scores).translate(None, _SCORE_CHARS):
        return None
    try:
        if order == "rank":
            rank_values = np.fromiter(map(int, ranks), dtype=np.int64, count=n)
        else:
            deque(map(int, ranks), maxlen=0)  # every rank must be an integer, though it is not used
        score_values = np.fromiter(map(float, scores), dtype=np.float64, count=n)
    except (ValueError, OverflowError):
        return None
    if not np.all(np.isfinite(score_values)):
        return None

    # Query codes 0, 1, ... in order of first appearance; runs list each query's lines together.
    starts = np.flatnonzero(np.fromiter(map(ne, query_ids[1:], query_ids[:-1]), dtype=bool, count=n - 1)) + 1
    query_names = [query_ids[0], *(query_ids[i] for i in starts.tolist())]
    if len(set(query_names)) == len(query_names):
        sizes = np.diff(np.concatenate(([0], starts, [n])))
        q = np.repeat(np.arange(len(query_names), dtype=np.int64), sizes)
    else:
        query_code: dict[bytes, int] = {}
        q = np.fromiter(
            (query_code.setdefault(x, len(query_code)) for x in query_ids), dtype=np.int64, count=n
        )
        query_names = list(query_code)
    if order == "rank":
        rows = np.lexsort((rank_values, q))
        sorted_q, sorted_rank = q[rows], rank_values[rows]
        if np.any((sorted_q[1:] == sorted_q[:-1]) & (sorted_rank[1:] == sorted_rank[:-1])):
            return None  # a rank used twice in one query
    else:
        rows = _score_order(q, score_values, doc_ids)
    # A doc twice in one query is refused by the rankings' CHECK constraint when they are stored.
    return query_names, doc_ids, q, rows, tags[0]


def _score_order(q: np.ndarray, score: np.ndarray, doc_ids: list[bytes]) -> np.ndarray:
    """Rows in trec_eval's order: each query's rows by score descending, equal scores by doc id
    descending (byte order). Most files already are; then no sort is needed."""
    same = q[1:] == q[:-1]
    if np.all(np.diff(q) >= 0):  # each query's lines are together
        falling = score[1:] < score[:-1]
        ties = same & (score[1:] == score[:-1])
        if np.all(~same | falling | ties) and all(doc_ids[i + 1] < doc_ids[i] for i in np.flatnonzero(ties)):
            return np.arange(len(q))
    by_name = {doc: rank for rank, doc in enumerate(sorted(set(doc_ids)))}
    name_rank = np.fromiter(map(by_name.__getitem__, doc_ids), dtype=np.int64, count=len(doc_ids))
    return np.lexsort((-name_rank, -score, q))


def _document_keys(pool, doc_ids: list[bytes]) -> np.ndarray:
    """The primary key of the document of every row (documents missing from the pool are created
    without content)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM judgments_document WHERE pool_id = %s", [pool.pk])
        (in_pool,) = cursor.fetchone()
        if in_pool <= 4 * len(doc_ids):
            # Reading every id of the pool (as bytes, like the file's) beats matching them on the server.
            cursor.execute(
                "SELECT convert_to(external_id, 'UTF8'), id FROM judgments_document WHERE pool_id = %s",
                [pool.pk],
            )
            known = {bytes(external_id): pk for external_id, pk in cursor.fetchall()}
        else:
            known = {}
    keys = np.fromiter(map(known.get, doc_ids, repeat(-1)), dtype=np.int64, count=len(doc_ids))
    missing = np.flatnonzero(keys < 0)
    if len(missing):
        wanted = sorted({doc_ids[i] for i in missing.tolist()})
        created = services.ensure_documents(pool, [x.decode("ascii") for x in wanted])
        more = {x: created[x.decode("ascii")] for x in wanted}
        keys[missing] = [more[doc_ids[i]] for i in missing.tolist()]
    return keys


def import_run_fast(
    configuration: SearchConfiguration,
    data: bytes,
    *,
    name: str,
    order: str = "score",
    submitted_by=None,
    source: str = Run.Source.FILE,
) -> Run | None:
    """Store a run file in the common shape as a new run of `configuration`; None if the file is not
    in that shape or has a problem (nothing is written then)."""
    columns = _columns(data, order)
    if columns is None:
        return None
    query_ids, doc_ids, q, rows, tag = columns
    pool = configuration.pool
    try:
        with transaction.atomic():
            return _store(configuration, pool, query_ids, doc_ids, q, rows, tag, name, submitted_by, source)
    except (IntegrityError, psycopg.IntegrityError):  # COPY raises psycopg's own, unwrapped
        return None  # a doc twice in one query: the general parser names both lines


def _store(configuration, pool, query_ids, doc_ids, q, rows, tag, name, submitted_by, source) -> Run:
    """Queries and documents first (created when missing), then the run and its rankings (COPY)."""
    query_names = [x.decode("ascii") for x in query_ids]
    query_pks = services.ensure_queries(pool, query_names)
    query_keys = np.array([query_pks[x] for x in query_names], dtype=np.int64)
    doc_keys = _document_keys(pool, doc_ids)
    run = Run.objects.create(
        configuration=configuration,
        source=source,
        submitted_by=submitted_by,
        tag=tag.decode("ascii")[:200],
        filename=os.path.basename(name)[:255],
    )
    ordered_queries = q[rows]
    ordered_docs = doc_keys[rows]
    starts = np.concatenate(([0], np.flatnonzero(ordered_queries[1:] != ordered_queries[:-1]) + 1))
    ends = np.append(starts[1:], len(rows))
    with connection.cursor() as cursor:
        with cursor.copy("COPY judgments_ranking (run_id, query_id, doc_ids) FROM STDIN") as copy:
            copy.write(
                "".join(_ranking_lines(run.pk, query_keys, ordered_queries, ordered_docs, starts, ends))
            )
    transaction.on_commit(lambda: run_submitted.send(sender=Run, run=run))
    return run


def _ranking_lines(run_pk, query_keys, ordered_queries, ordered_docs, starts, ends) -> Iterable[str]:
    docs = ordered_docs.tolist()
    for start, end, code in zip(
        starts.tolist(), ends.tolist(), ordered_queries[starts].tolist(), strict=True
    ):
        yield f"{run_pk}\t{query_keys[code]}\t{{{','.join(map(str, docs[start:end]))}}}\n"

"""A fast path for the common shape of TREC run file, used by `trec.import_run` before the general parser.

The common shape: printable ASCII, one space between the six fields, a newline after each line, no
comment or blank line, no backslash. Such a file is read without a Python object per line or field:
numpy finds the spaces and newlines and reads every field as rows of 8-byte words (`_Field`), and the
columns are checked, parsed, grouped and ordered as whole arrays. Query and document ids are matched
to the pool's by a hash of those words, checked byte for byte; the pool's ids come as one row of
aggregates, read in a thread while the file is checked. The rankings go in as binary COPY built with
numpy, block by block, the server storing one block while the next is ordered: no Python object per
line or field (`tests/bench/run.py bench_exchange` measures it; docs/performance.md).

`import_run_fast` returns None whenever the file is not in that shape or breaks any rule of
`formats.parse_run` (field count, integer rank, finite score, id length, a doc twice in a query, a
rank twice with order="rank", empty file): the caller then runs the general parser, which names every
problem by line and field. For a file it accepts it stores exactly what `formats.parse_run` followed
by `services.record_run` would (tests/judgments/exchange/test_fast_run_import.py checks the two agree).
"""

from __future__ import annotations

import io
import os
import threading
from dataclasses import dataclass

import numpy as np
import psycopg
from django.db import IntegrityError, connection, transaction
from psycopg.copy import QueuedLibpqWriter

from judgments import pgcopy, pool_keys, services
from judgments.exchange.formats import MAX_ID_LENGTH
from judgments.models import Run, SearchConfiguration
from judgments.pgcopy.rows import array_rows

_ALLOWED = bytes(range(0x21, 0x7F)).replace(b"\\", b"") + b" \n"  # a backslash: the general path
_SPACE, _NEWLINE, _HASH = 0x20, 0x0A, 0x23
FIELDS = 6
# _MASKS[k]: the low k bytes of a little-endian word (a field's last, partly filled word).
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
# The bytes a rank and a score may hold (0: a field's padding); anything else, such as the "_" that
# int() and float() accept, is left to the general parser.
_RANK_BYTES = np.isin(np.arange(256), list(b"\x000123456789+-"))
_SCORE_BYTES = np.isin(np.arange(256), list(b"\x000123456789.eE+-"))
_MIX = np.uint64(0x9E3779B97F4A7C15)
# Read all of a pool's query or document ids when it has at most one per this many bytes of the file
# (4 per line of 16 bytes; counting lines would cost 10 ms); a larger pool is matched on the server
# (pool_keys.ensure_queries, ensure_documents) instead.
_POOL_BYTES_PER_ID = 4
_BLOCK_LINES = 20_000  # lines ordered and sent at a time (see _copy_rankings)


def as_bytes(stream) -> tuple[bytes | None, object]:
    """The whole file as bytes when the stream is binary (bytes, a binary file, lines of bytes), else
    None; and a stream that still reads the whole file for the general parser."""
    if isinstance(stream, (bytes, bytearray, memoryview)):
        return bytes(stream), stream
    if isinstance(stream, str):
        return None, stream
    read = getattr(stream, "read", None)
    if read is not None:
        whole = read()
        # A text file's contents go back as a text stream: the parsers read a list as lines.
        return (None, io.StringIO(whole)) if isinstance(whole, str) else (bytes(whole), whole)
    chunks = list(stream)
    try:
        return b"".join(chunks), chunks
    except TypeError:  # text lines
        return None, chunks


def _words(data: bytes) -> np.ndarray:
    """The little-endian 8-byte word starting at every offset of `data` (a view, padded at the end)."""
    return np.ndarray((len(data),), dtype="<u8", buffer=data + bytes(8), strides=(1,))


@dataclass
class _Field:
    """One field of every line (or one id of every row): where it starts in the file, its length in
    bytes, and its bytes as rows of 8-byte words, zero-padded (ids hold no NUL, so the rows of two
    ids are equal exactly when the ids are)."""

    data: bytes
    starts: np.ndarray
    lengths: np.ndarray
    rows: np.ndarray

    @classmethod
    def read(cls, data: bytes, words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> _Field:
        lengths = ends - starts
        width = -(-int(lengths.max(initial=0)) // 8)
        rows = np.empty((len(starts), width), dtype="<u8")
        if width:
            rows[:, 0] = words[starts] & _MASKS[np.minimum(lengths, 8)]
        last = len(data) - 1
        for k in range(1, width):
            filled = np.maximum(np.minimum(lengths - 8 * k, 8), 0)
            rows[:, k] = words[np.minimum(starts + 8 * k, last)] & _MASKS[filled]
        return cls(data, starts, lengths, rows)

    def __len__(self) -> int:
        return len(self.lengths)

    def take(self, indices: np.ndarray) -> _Field:
        return _Field(self.data, self.starts[indices], self.lengths[indices], self.rows[indices])

    def __getitem__(self, i: int) -> bytes:
        start = int(self.starts[i])
        return self.data[start : start + int(self.lengths[i])]

    def as_strings(self, allowed: np.ndarray) -> np.ndarray | None:
        """Every field as a numpy bytes string (for numpy's number parsing); None if a field holds a
        byte that `allowed` (a table of 256 booleans) does not allow."""
        if not np.all(allowed[self.rows.view(np.uint8)]):
            return None
        return np.ascontiguousarray(self.rows).view(f"S{8 * self.rows.shape[1]}").ravel()

    def all_integers(self) -> bool:
        """Is every field an integer as int() reads it, [+-]?[0-9]+ (bytes past a field's end are 0)?"""
        chars = self.rows.view(np.uint8)
        fits = ((chars - ord("0")) < 10) | (chars == 0)
        sign = (chars[:, 0] == ord("+")) | (chars[:, 0] == ord("-"))
        fits[:, 0] |= sign & (self.lengths > 1)
        return bool(fits.all())

    def hashes(self) -> np.ndarray:
        """A 64-bit hash of every field; equal fields hash equal, whatever the width of the rows."""
        h = self.lengths.astype(np.uint64) * _MIX
        for k in range(self.rows.shape[1]):
            mixed = (h ^ self.rows[:, k]) * _MIX
            mixed ^= mixed >> np.uint64(29)
            h = np.where(self.lengths > 8 * k, mixed, h)
        return h

    def same(self, i: np.ndarray, other: _Field, j: np.ndarray) -> np.ndarray:
        """For every k: is field i[k] of self the same bytes as field j[k] of other?"""
        width = min(self.rows.shape[1], other.rows.shape[1])
        equal = self.lengths[i] == other.lengths[j]
        return equal & np.all(self.rows[i, :width] == other.rows[j, :width], axis=1)

    def descending_keys(self) -> list[np.ndarray]:
        """Sort keys for np.lexsort (least significant first) putting the fields in descending byte order."""
        big_endian = self.rows.byteswap()
        return [~big_endian[:, k] for k in reversed(range(big_endian.shape[1]))]


@dataclass
class _Lines:
    """A run file in the common shape, its layout checked: its queries (in order of first appearance),
    the query of every line (codes into `queries`), its document and the tag of its first line. The
    rank and score columns are read block by block (`order`), while the blocks before are stored."""

    data: bytes
    words: np.ndarray
    spaces: np.ndarray  # (lines, 5): where the spaces of every line are
    queries: _Field
    q: np.ndarray
    docs: _Field
    tag: bytes

    @property
    def query_names(self) -> list[bytes]:
        return [self.queries[i] for i in range(len(self.queries))]

    def blocks(self, size: int) -> list[tuple[int, int]]:
        """Ranges of about `size` lines that split no query (one range when queries interleave)."""
        n = len(self.q)
        if n <= size or np.any(self.q[1:] < self.q[:-1]):
            return [(0, n)]
        query_starts = np.flatnonzero(np.diff(self.q, prepend=-1))
        at = np.searchsorted(query_starts, np.arange(size, n, size))  # the first query from there on
        cuts = np.unique(query_starts[at[at < len(query_starts)]])
        bounds = [0, *cuts.tolist(), n]
        return list(zip(bounds[:-1], bounds[1:], strict=True))

    def order(self, lo: int, hi: int, order: str) -> np.ndarray | None:
        """Lines lo..hi-1 (whole queries) in the order they are stored; None if a rank is not an
        integer, a score not a finite number (as formats.parse_run reads them, with int() and float())
        or, with order="rank", a rank is used twice in one query."""
        spaces = self.spaces[lo:hi]
        ranks = _Field.read(self.data, self.words, spaces[:, 2] + 1, spaces[:, 3])
        scores = _Field.read(self.data, self.words, spaces[:, 3] + 1, spaces[:, 4])
        if not ranks.all_integers():
            return None
        # numpy's parsing of bytes strings accepts and refuses what float() does, once no "_" and no
        # letter but the e of an exponent is left; so does int(), but for a rank beyond int64.
        score_strings = scores.as_strings(_SCORE_BYTES)
        if score_strings is None:
            return None
        try:
            score_values = score_strings.astype(np.float64)
            rank_values = ranks.as_strings(_RANK_BYTES).astype(np.int64) if order == "rank" else None
        except (ValueError, OverflowError):
            return None
        if not np.all(np.isfinite(score_values)):
            return None
        q = self.q[lo:hi]
        if order == "rank":
            rows = np.lexsort((rank_values, q))
            sorted_q, sorted_rank = q[rows], rank_values[rows]
            if np.any((sorted_q[1:] == sorted_q[:-1]) & (sorted_rank[1:] == sorted_rank[:-1])):
                return None  # a rank used twice in one query
        else:
            rows = _score_order(q, score_values, self.docs.take(slice(lo, hi)))
        # A doc twice in one query is refused by the rankings' CHECK constraint when they are stored.
        return rows + lo


def split_lines(data: bytes, fields: int, allowed: bytes = _ALLOWED):
    """A file of `fields` fields a line in the common shape: every byte in `allowed` (printable ASCII,
    space and newline at most), one space between fields, a newline after each line (added to the last
    if missing), no blank or comment line. Returns (the data, its bytes as an array, where every field
    ends: lines x fields, where every line starts), or None for any other file."""
    if not data or data.translate(None, allowed):
        return None
    if not data.endswith(b"\n"):
        data += b"\n"
    buffer = np.frombuffer(data, dtype=np.uint8)
    # Past the check above, the only bytes below "!" are spaces and newlines: where fields end.
    ends = np.flatnonzero(buffer < 0x21)
    if len(ends) % fields:
        return None
    ends = ends.reshape(-1, fields)
    # Spaces then a newline on every line, every field at least one byte (no blank line, no space at
    # either end of a line or next to another), and no line starts a comment.
    kinds = buffer[ends]
    if np.any(kinds[:, :-1] != _SPACE) or np.any(kinds[:, -1] != _NEWLINE):
        return None
    if ends[0, 0] < 1 or np.diff(ends.ravel()).min(initial=2) < 2:
        return None
    line_starts = np.concatenate(([0], ends[:-1, -1] + 1))
    if np.any(buffer[line_starts] == _HASH):
        return None
    return data, buffer, ends, line_starts


def _read_lines(data: bytes) -> _Lines | None:
    """The lines of a file in the common shape, their layout checked (not yet their ranks and
    scores: `_Lines.order`); None for any other file."""
    layout = split_lines(data, FIELDS)
    if layout is None:
        return None
    data, _, ends, line_starts = layout
    # The spaces' offsets live as long as the import: 4 bytes each for a file under 2 GiB (every upload),
    # not 8 (148 MB less for 5.3 million lines).
    offset_type = np.int32 if len(data) < 2**31 else np.int64
    spaces, newlines = ends[:, :-1].astype(offset_type), ends[:, -1].astype(offset_type)
    del layout, ends
    words = _words(data)
    qids = _Field.read(data, words, line_starts, spaces[:, 0])
    docs = _Field.read(data, words, spaces[:, 1] + 1, spaces[:, 2])
    tag_lengths = newlines - spaces[:, 4] - 1
    if max(qids.lengths.max(), docs.lengths.max(), tag_lengths.max()) > MAX_ID_LENGTH:
        return None
    grouped = _query_codes(qids)
    if grouped is None:
        return None
    first_lines, q = grouped
    tag_start = int(spaces[0, 4]) + 1
    tag = data[tag_start : tag_start + int(tag_lengths[0])]
    return _Lines(data, words, spaces, qids.take(first_lines), q, docs, tag)


def _query_codes(qids: _Field) -> tuple[np.ndarray, np.ndarray] | None:
    """(the first line of every query, in order of appearance; the code of every line's query), or
    None when two different ids hash alike."""
    n = len(qids)
    changed = (qids.lengths[1:] != qids.lengths[:-1]) | np.any(qids.rows[1:] != qids.rows[:-1], axis=1)
    starts = np.concatenate(([0], np.flatnonzero(changed) + 1))
    if len({qids[i] for i in starts.tolist()}) == len(starts):  # runs list each query's lines together
        return starts, np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, n)))
    _, first, inverse = np.unique(qids.hashes(), return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not np.all(qids.same(np.arange(n), qids, first[inverse])):
        return None
    appearance = np.argsort(first)
    code = np.empty_like(appearance)
    code[appearance] = np.arange(len(appearance))
    return first[appearance], code[inverse]


def _score_order(q: np.ndarray, score: np.ndarray, docs: _Field) -> np.ndarray:
    """Rows in trec_eval's order: each query's rows by score descending, equal scores by doc id
    descending (byte order). Most files already are; then no sort is needed."""
    same = q[1:] == q[:-1]
    if np.all(q[1:] >= q[:-1]):  # each query's lines are together
        ties = np.flatnonzero(same & (score[1:] == score[:-1]))
        if np.all(~same | (score[1:] <= score[:-1])) and np.all(_descending(docs, ties)):
            return np.arange(len(q))
    return np.lexsort((*docs.descending_keys(), -score, q))


def _descending(docs: _Field, before: np.ndarray) -> np.ndarray:
    """For every line i in `before`: does doc i+1 come before doc i in descending byte order?"""
    first, second = docs.rows[before].byteswap(), docs.rows[before + 1].byteswap()
    differ = first != second
    at = np.argmax(differ, axis=1)
    picked = np.arange(len(before))
    return differ[picked, at] & (second[picked, at] < first[picked, at])


# --- The pool's ids --------------------------------------------------------------------------------


class _Declined(Exception):
    """The file leaves the fast path after writing began (two different ids hashed alike, or a bad
    rank or score in a later block): the transaction is rolled back and the general parser runs."""


@dataclass
class _Known:
    """The external ids of a pool's queries or documents, with their keys."""

    ids: _Field
    keys: np.ndarray

    @classmethod
    def read(cls, cursor, table: str, pool_pk: int, limit: int) -> _Known | None:
        """All of them, or None when there are more than `limit`."""
        cursor.execute(f"SELECT count(*) FROM {table} WHERE pool_id = %s", [pool_pk])
        if cursor.fetchone()[0] > limit:
            return None
        # One row: the ids, one a line (ids hold no whitespace: a CHECK constraint), and their keys
        # (both aggregates read the rows in the same order): about half the time of sending each id's
        # length as well.
        cursor.execute(
            f"SELECT string_agg(external_id, E'\\n'), string_agg(int8send(id), '') FROM {table} WHERE pool_id = %s",
            [pool_pk],
        )
        text, keys = cursor.fetchone()
        return cls.from_text((text or "").encode(), bytes(keys or b""))

    @classmethod
    def from_text(cls, names: bytes, keys: bytes) -> _Known | None:
        """From ids joined by newlines and their keys as big-endian int8s; None if the counts differ."""
        newlines = np.flatnonzero(np.frombuffer(names, dtype=np.uint8) == _NEWLINE)
        starts = np.concatenate(([0], newlines + 1)) if names else np.zeros(0, dtype=np.int64)
        ends = np.append(newlines, len(names)) if names else np.zeros(0, dtype=np.int64)
        if len(starts) * 8 != len(keys):
            return None  # an id with a newline after all: match on the server
        ids = _Field.read(names, _words(names), starts, ends)
        return cls(ids, np.frombuffer(keys, dtype=">i8").astype(np.int64))

    def positions(self, hashes: np.ndarray) -> np.ndarray:
        """For every hash, the position of the id with that hash (any position where there is none).
        A table indexed by the top bits of the hash answers most; ids that share a slot of the table
        are found by binary search. The table is small (2 to 4 slots an id, int32): fresh pages
        cost here, and 256 MB of table and counts took 0.5 s for a pool of 1.2 million documents."""
        own = self.ids.hashes()
        by_hash = np.argsort(own)
        ordered = own[by_hash]
        if np.any(ordered[1:] == ordered[:-1]):
            raise _Declined
        bits = len(own).bit_length() + 1
        shift = np.uint64(64 - bits)
        slots = (ordered >> shift).astype(np.intp)  # sorted, as `ordered` is
        table = np.zeros(1 << bits, dtype=np.int32)
        table[slots] = by_hash
        shared_slot = np.zeros(1 << bits, dtype=bool)
        shared_slot[slots[1:][slots[1:] == slots[:-1]]] = True
        wanted = (hashes >> shift).astype(np.intp)
        at = table[wanted].astype(np.int64)
        shared = np.flatnonzero(shared_slot[wanted])
        at[shared] = by_hash[np.minimum(np.searchsorted(ordered, hashes[shared]), len(own) - 1)]
        return at


class _PoolIds(threading.Thread):
    """Reads the ids and keys of the pool's queries and documents (`_Known`, or None for a pool much
    bigger than the file) on the import's own connection while the main thread checks the file, so
    that the server's work and numpy's overlap. The main thread leaves the connection alone until
    `result()`; psycopg connections may be shared between threads."""

    TABLES = ("judgments_query", "judgments_document")

    def __init__(self, pool_pk: int, limit: int):
        super().__init__(name="fastrun-pool-ids", daemon=True)
        connection.ensure_connection()
        self.raw, self.pool_pk, self.limit = connection.connection, pool_pk, limit
        self.known: dict[str, _Known | None] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.raw.cursor() as cursor:
                for table in self.TABLES:
                    self.known[table] = _Known.read(cursor, table, self.pool_pk, self.limit)
        except BaseException as exc:  # handed to the main thread by result()
            self.error = exc

    def result(self) -> tuple[_Known | None, _Known | None]:
        self.join()
        if self.error is not None:
            raise self.error
        return self.known[self.TABLES[0]], self.known[self.TABLES[1]]


def _keys(pool, ids: _Field, known: _Known | None, create) -> np.ndarray:
    """The key of every id: the pool's, else from `create(pool, ids, rows, hashes)`, which gives the
    keys of ids[rows] (distinct ids), creating the missing ones without content."""
    n = len(ids)
    keys = np.full(n, -1, dtype=np.int64)
    hashes = ids.hashes()
    if known is not None and len(known.keys):
        at = known.positions(hashes)
        found = ids.same(np.arange(n), known.ids, at)
        keys[found] = known.keys[at[found]]
    missing = np.flatnonzero(keys < 0)
    if len(missing):
        _, first, inverse = np.unique(hashes[missing], return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        if not np.all(ids.same(missing, ids, missing[first[inverse]])):
            raise _Declined
        rows = missing[first]
        keys[missing] = create(pool, ids, rows, hashes[rows])[inverse]
    return keys


def _create_by_name(ensure):
    """A `create` for _keys through pool_keys.ensure_queries: one Python string per id (queries are few)."""

    def create(pool, ids: _Field, rows: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        wanted = [ids[i].decode("ascii") for i in rows.tolist()]
        created = ensure(pool, wanted)
        return np.array([created[x] for x in wanted], dtype=np.int64)

    return create


def _create_documents(introduced_by):
    """A `create` for _keys that streams document ids: millions of new ones cost numpy arrays (a few
    bytes an id), not a Python string, set entry and dict entry each (pool_keys.ensure_documents took
    2.8 GB for 5.5 million new ids; bench_upload --new-ids)."""

    def create(pool, ids: _Field, rows: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        _, keys, _ = pool_keys.copy_documents(
            pool, lambda copy: _write_ids(copy, ids, rows), introduced_by=introduced_by, in_written_order=True
        )
        if len(keys) != 8 * len(rows):
            raise _Declined
        return np.frombuffer(keys, dtype=">i8").astype(np.int64)

    return create


def _write_ids(copy, ids: _Field, rows: np.ndarray, block: int = 100_000) -> None:
    """ids[rows] to a COPY in its text format, one a line, `block` ids at a time. The fast path's ids
    hold no backslash, whitespace or control character: nothing to escape."""
    source = np.frombuffer(ids.data, dtype=np.uint8)
    for lo in range(0, len(rows), block):
        starts, lengths = ids.starts[rows[lo : lo + block]], ids.lengths[rows[lo : lo + block]]
        total = int(lengths.sum())
        within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out = np.full(total + len(lengths), _NEWLINE, dtype=np.uint8)
        # Each id's bytes, then its newline: id k starts at (bytes of the ids before) + k.
        out[np.repeat(np.cumsum(lengths) - lengths + np.arange(len(lengths)), lengths) + within] = source[
            np.repeat(starts, lengths) + within
        ]
        copy.write(out.tobytes())


# --- Storing ---------------------------------------------------------------------------------------


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
    pool = configuration.pool
    reading = _PoolIds(pool.pk, limit=len(data) // _POOL_BYTES_PER_ID)
    reading.start()
    try:
        lines = _read_lines(data)
    finally:
        known_queries, known_documents = reading.result()
    if lines is None:
        return None
    try:
        with transaction.atomic():
            query_keys = _keys(pool, lines.queries, known_queries, _create_by_name(pool_keys.ensure_queries))
            doc_keys = _keys(pool, lines.docs, known_documents, _create_documents(configuration))
            run = services.store_run(
                configuration,
                lambda cursor, run: _copy_rankings(cursor, run.pk, lines, order, query_keys, doc_keys),
                source=source,
                submitted_by=submitted_by,
                tag=lines.tag.decode("ascii"),
                filename=os.path.basename(name),
            )
    except (IntegrityError, psycopg.IntegrityError):  # COPY raises psycopg's own, unwrapped
        return None  # a doc twice in one query: the general parser names both lines
    except _Declined:
        return None
    return run


def _copy_rankings(
    cursor, run_pk: int, lines: _Lines, order: str, query_keys: np.ndarray, doc_keys: np.ndarray
) -> None:
    """One binary COPY of the rankings, block by block: psycopg's queued writer sends a block from
    another thread while this one orders the next, and the server checks and stores it meanwhile."""
    raw = cursor.cursor  # psycopg's own: Django's wrapper takes no writer
    columns = ["run_id", "query_id", "doc_ids"]
    with pgcopy.copy_in(raw, "judgments_ranking", columns, writer=QueuedLibpqWriter(raw)) as copy:
        for lo, hi in lines.blocks(_BLOCK_LINES):
            rows = lines.order(lo, hi, order)
            if rows is None:
                raise _Declined
            ordered_queries = lines.q[rows]
            starts = np.flatnonzero(np.diff(ordered_queries, prepend=-1))
            copy.write(ranking_rows(run_pk, query_keys[ordered_queries[starts]], starts, doc_keys[rows]))


def ranking_rows(run_pk: int, query_keys: np.ndarray, starts: np.ndarray, doc_keys: np.ndarray) -> bytes:
    """Binary COPY rows of judgments_ranking (run_id, query_id, doc_ids): row g is query_keys[g] with
    doc_keys[starts[g]:starts[g+1]]."""
    run = np.full(len(starts), run_pk, dtype=np.int64)
    return array_rows([(run, ">i8"), (query_keys, ">i8")], [(doc_keys, ">i8")], starts)

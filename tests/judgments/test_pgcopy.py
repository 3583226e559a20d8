"""judgments.pgcopy: binary COPY in and out through a temporary table, and streams it refuses."""

import numpy as np
import pytest
from django.db import connection

from judgments import pgcopy
from judgments.pgcopy.rows import (
    array_rows,
    empty_rows,
    read_array_rows,
    read_columns,
    read_rows,
    row_dtype,
    stream_rows,
    write_rows,
)

COLUMNS = (("a", ">i8"), ("b", ">f8"), ("c", ">i2"))


@pytest.fixture
def cursor(db):
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE copy_test (a bigint, b double precision, c smallint)")
        yield cursor


def _rows(n):
    rows = empty_rows(COLUMNS, n)
    rows["a"] = np.arange(n) * 3 - 5
    rows["b"] = np.linspace(-1.5, 2.5, n)
    rows["c"] = np.arange(n) % 7
    return rows


def test_written_rows_read_back_as_sql_sees_them(cursor):
    rows = _rows(1000)
    write_rows(cursor, "copy_test", ["a", "b", "c"], rows)
    cursor.execute("SELECT count(*), sum(a), sum(c), min(b), max(b) FROM copy_test")
    assert cursor.fetchone() == (1000, int(rows["a"].sum()), int(rows["c"].sum()), -1.5, 2.5)
    back = read_rows(cursor, "SELECT a, b, c FROM copy_test ORDER BY a", None, row_dtype(*COLUMNS))
    assert back.tobytes() == rows.tobytes()
    a, c = read_columns(
        cursor, "SELECT array_agg(a ORDER BY a), array_agg(c ORDER BY a) FROM copy_test", None, [">i8", ">i2"]
    )
    assert a.tolist() == rows["a"].tolist() and c.tolist() == rows["c"].tolist()


def test_copy_in_writes_blocks_between_header_and_trailer(cursor):
    rows = _rows(30)
    with pgcopy.copy_in(cursor, "copy_test", ["a", "b", "c"]) as copy:
        for block in (rows[:10], rows[10:]):
            copy.write(block.tobytes())
    cursor.execute("SELECT array_agg(a ORDER BY a) FROM copy_test")
    assert cursor.fetchone()[0] == rows["a"].tolist()


@pytest.mark.parametrize("block_bytes", [1, 100, 1 << 20])
def test_stream_rows_yields_every_row_once_in_blocks(cursor, block_bytes):
    rows = _rows(500)
    write_rows(cursor, "copy_test", ["a", "b", "c"], rows)
    dtype = row_dtype(*COLUMNS)
    blocks = list(stream_rows(cursor, "SELECT a, b, c FROM copy_test ORDER BY a", None, dtype, block_bytes))
    assert b"".join(block.tobytes() for block in blocks) == rows.tobytes()
    assert (len(blocks) > 1) == (block_bytes < rows.nbytes)
    empty = list(stream_rows(cursor, "SELECT a, b, c FROM copy_test WHERE false", None, dtype))
    assert [len(block) for block in empty] == [0]


def test_empty_aggregate_reads_as_empty_columns(cursor):
    (a,) = read_columns(cursor, "SELECT array_agg(a) FROM copy_test", None, [">i8"])
    assert a.shape == (0,) and a.dtype == np.int64


def test_streams_other_than_asked_for_raise_copy_error(cursor):
    write_rows(cursor, "copy_test", ["a", "b", "c"], _rows(16))
    # A NULL c makes a row 30 bytes: 16 of them are 15 rows of 32 bytes, which do not line up.
    with pytest.raises(pgcopy.CopyError, match="NULL or unexpected size in column"):
        read_rows(cursor, "SELECT a, b, NULL::int2 FROM copy_test", None, row_dtype(*COLUMNS))
    with pytest.raises(pgcopy.CopyError, match="not 38 bytes each"):
        read_rows(cursor, "SELECT a, b FROM copy_test", None, row_dtype(*COLUMNS[:2], ("c", ">i8")))
    with pytest.raises(pgcopy.CopyError, match="expected one row of 2 columns"):
        read_columns(cursor, "SELECT array_agg(a) FROM copy_test", None, [">i8", ">i8"])
    with pytest.raises(pgcopy.CopyError, match="NULL or unexpected value size"):
        read_columns(cursor, "SELECT array_agg(c) FROM copy_test", None, [">i8"])
    with pytest.raises(pgcopy.CopyError, match="unexpected end"):
        list(stream_rows(cursor, "SELECT a FROM copy_test WHERE a < 4", None, row_dtype(*COLUMNS)))


def test_timestamp_counts_microseconds_from_2000():
    assert pgcopy.timestamp(pgcopy.PG_EPOCH) == 0
    assert pgcopy.timestamp(pgcopy.PG_EPOCH + 1.5) == 1_500_000


@pytest.fixture
def array_table(cursor):
    cursor.execute("CREATE TEMPORARY TABLE array_test (p bigint, q bigint, docs bigint[], grades float8[])")
    return cursor


def _copy_out(cursor, sql: str) -> bytes:
    with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)") as copy:
        return b"".join(bytes(chunk) for chunk in copy)


def test_array_rows_are_postgresqls_own_bytes_and_read_back(array_table):
    cursor = array_table
    starts = np.array([0, 3, 3, 4])  # the third row's arrays are empty
    docs = np.array([7, 8, 9, 10, 11, 12])
    grades = np.array([0.5, -1.0, 4.0, 2.25, 3.0, 1.0])
    rows = array_rows(
        [(np.full(4, 5), ">i8"), (np.array([40, 41, 42, 43]), ">i8")],
        [(docs, ">i8"), (grades, ">f8")],
        starts,
    )
    with pgcopy.copy_in(cursor, "array_test", ["p", "q", "docs", "grades"]) as copy:
        copy.write(rows)
    cursor.execute("SELECT q, docs, grades FROM array_test ORDER BY q")
    assert cursor.fetchall() == [
        (40, [7, 8, 9], [0.5, -1.0, 4.0]),
        (41, [], []),
        (42, [10], [2.25]),
        (43, [11, 12], [3.0, 1.0]),
    ]
    # PostgreSQL sends back exactly the bytes written: the framing is the server's own.
    assert _copy_out(cursor, "SELECT * FROM array_test") == pgcopy.HEADER + rows + pgcopy.TRAILER
    (p, q), [(back_docs, doc_counts), (back_grades, grade_counts)] = read_array_rows(
        cursor, "SELECT p, q, docs, grades FROM array_test", None, [">i8", ">i8"], [">i8", ">f8"]
    )
    assert p.tolist() == [5] * 4 and q.tolist() == [40, 41, 42, 43]
    assert doc_counts.tolist() == grade_counts.tolist() == [3, 0, 1, 2]
    assert back_docs.tolist() == docs.tolist() and back_grades.tolist() == grades.tolist()
    assert back_docs.dtype == np.int64 and back_grades.dtype == np.float64


def _old_cache_rows(pool_id, query, docs, grades) -> bytes:
    """How scoring.grades packed a row of its grade cache by hand before array_rows."""
    import struct

    n = len(docs)
    doc_items = np.empty(n, dtype=[("len", ">i4"), ("value", ">i8")])
    doc_items["len"], doc_items["value"] = 8, docs
    grade_items = np.empty(n, dtype=[("len", ">i4"), ("value", ">f8")])
    grade_items["len"], grade_items["value"] = 8, grades
    return b"".join(
        [
            struct.pack(">hiqiq", 4, 8, pool_id, 8, query),
            struct.pack(">iiiiii", 20 + 12 * n, 1, 0, 20, n, 1),
            doc_items.tobytes(),
            struct.pack(">iiiiii", 20 + 12 * n, 1, 0, 701, n, 1),
            grade_items.tobytes(),
        ]
    )


def test_array_rows_write_the_grade_caches_bytes_as_before():
    docs, grades = np.array([3, 1, 2]), np.array([1.5, -1.0, 4.0])
    rows = array_rows(
        [(np.full(2, 9), ">i8"), (np.array([4, 6]), ">i8")], [(docs, ">i8"), (grades, ">f8")], [0, 2]
    )
    assert rows == _old_cache_rows(9, 4, docs[:2], grades[:2]) + _old_cache_rows(9, 6, docs[2:], grades[2:])


def test_array_rows_other_than_asked_for_raise_copy_error(array_table):
    cursor = array_table
    cursor.execute("INSERT INTO array_test VALUES (1, 2, '{1,2}', '{0.5,1}'), (1, 3, '{4}', '{2}')")
    sql = "SELECT q, docs, grades FROM array_test"
    with pytest.raises(pgcopy.CopyError, match="column 2 \\(an array\\)"):  # float8[] read as int8[]
        read_array_rows(cursor, sql, None, [">i8"], [">i8", ">i8"])
    with pytest.raises(pgcopy.CopyError, match="rows do not have 2 columns"):
        read_array_rows(cursor, sql, None, [">i8"], [">i8"])
    with pytest.raises(pgcopy.CopyError, match="NULL or unexpected value"):
        read_array_rows(cursor, "SELECT q, ARRAY[1, NULL]::int8[] FROM array_test", None, [">i8"], [">i8"])
    with pytest.raises(pgcopy.CopyError, match="NULL or unexpected size in column 0"):
        read_array_rows(cursor, "SELECT NULL::int8, docs FROM array_test", None, [">i8"], [">i8"])
    columns, [(values, counts)] = read_array_rows(
        cursor, "SELECT q, docs FROM array_test WHERE false", None, [">i8"], [">i8"]
    )
    assert columns[0].shape == values.shape == counts.shape == (0,)
    assert counts.dtype == np.int64  # counts index and repeat: np.repeat refuses float counts


def test_column_values_checks_header_rows_and_trailer(cursor):
    cursor.execute("INSERT INTO copy_test (a) VALUES (1), (2), (3)")
    sql = "SELECT CASE WHEN a = 2 THEN NULL ELSE 'line ' || a END FROM copy_test ORDER BY a"
    with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)") as copy:
        chunks = [bytes(chunk) for chunk in copy]
    assert list(pgcopy.column_values(chunks, suffix=b"\n")) == [b"line 1\n", b"line 3\n"]  # NULL left out
    assert list(pgcopy.column_values([pgcopy.HEADER + pgcopy.TRAILER])) == []  # no row at all
    with pytest.raises(pgcopy.CopyError, match="unexpected end"):
        list(pgcopy.column_values(chunks[:-1]))
    with pytest.raises(pgcopy.CopyError, match="unexpected binary COPY stream"):
        list(pgcopy.column_values([b"1\tline\n", *chunks[1:]]))
    with pytest.raises(pgcopy.CopyError, match="not one value"):
        list(pgcopy.column_values([chunks[0], chunks[1][:-1], chunks[-1]]))
    with pytest.raises(pgcopy.CopyError, match="after the trailer"):
        list(pgcopy.column_values([*chunks, chunks[1]]))

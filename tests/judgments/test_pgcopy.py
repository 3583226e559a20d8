"""judgments.pgcopy: binary COPY in and out through a temporary table, and streams it refuses."""

import numpy as np
import pytest
from django.db import connection

from judgments import pgcopy

COLUMNS = (("a", ">i8"), ("b", ">f8"), ("c", ">i2"))


@pytest.fixture
def cursor(db):
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE copy_test (a bigint, b double precision, c smallint)")
        yield cursor


def _rows(n):
    rows = pgcopy.empty_rows(COLUMNS, n)
    rows["a"] = np.arange(n) * 3 - 5
    rows["b"] = np.linspace(-1.5, 2.5, n)
    rows["c"] = np.arange(n) % 7
    return rows


def test_written_rows_read_back_as_sql_sees_them(cursor):
    rows = _rows(1000)
    pgcopy.write_rows(cursor, "copy_test", ["a", "b", "c"], rows)
    cursor.execute("SELECT count(*), sum(a), sum(c), min(b), max(b) FROM copy_test")
    assert cursor.fetchone() == (1000, int(rows["a"].sum()), int(rows["c"].sum()), -1.5, 2.5)
    back = pgcopy.read_rows(
        cursor, "SELECT a, b, c FROM copy_test ORDER BY a", None, pgcopy.row_dtype(*COLUMNS)
    )
    assert back.tobytes() == rows.tobytes()
    a, c = pgcopy.read_columns(
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
    pgcopy.write_rows(cursor, "copy_test", ["a", "b", "c"], rows)
    dtype = pgcopy.row_dtype(*COLUMNS)
    blocks = list(
        pgcopy.stream_rows(cursor, "SELECT a, b, c FROM copy_test ORDER BY a", None, dtype, block_bytes)
    )
    assert b"".join(block.tobytes() for block in blocks) == rows.tobytes()
    assert (len(blocks) > 1) == (block_bytes < rows.nbytes)
    empty = list(pgcopy.stream_rows(cursor, "SELECT a, b, c FROM copy_test WHERE false", None, dtype))
    assert [len(block) for block in empty] == [0]


def test_empty_aggregate_reads_as_empty_columns(cursor):
    (a,) = pgcopy.read_columns(cursor, "SELECT array_agg(a) FROM copy_test", None, [">i8"])
    assert a.shape == (0,) and a.dtype == np.int64


def test_streams_other_than_asked_for_raise_copy_error(cursor):
    pgcopy.write_rows(cursor, "copy_test", ["a", "b", "c"], _rows(16))
    # A NULL c makes a row 30 bytes: 16 of them are 15 rows of 32 bytes, which do not line up.
    with pytest.raises(pgcopy.CopyError, match="NULL or unexpected size in column"):
        pgcopy.read_rows(cursor, "SELECT a, b, NULL::int2 FROM copy_test", None, pgcopy.row_dtype(*COLUMNS))
    with pytest.raises(pgcopy.CopyError, match="not 38 bytes each"):
        pgcopy.read_rows(
            cursor, "SELECT a, b FROM copy_test", None, pgcopy.row_dtype(*COLUMNS[:2], ("c", ">i8"))
        )
    with pytest.raises(pgcopy.CopyError, match="expected one row of 2 columns"):
        pgcopy.read_columns(cursor, "SELECT array_agg(a) FROM copy_test", None, [">i8", ">i8"])
    with pytest.raises(pgcopy.CopyError, match="NULL or unexpected value size"):
        pgcopy.read_columns(cursor, "SELECT array_agg(c) FROM copy_test", None, [">i8"])
    with pytest.raises(pgcopy.CopyError, match="unexpected end"):
        list(
            pgcopy.stream_rows(
                cursor, "SELECT a FROM copy_test WHERE a < 4", None, pgcopy.row_dtype(*COLUMNS)
            )
        )


def test_timestamp_counts_microseconds_from_2000():
    assert pgcopy.timestamp(pgcopy.PG_EPOCH) == 0
    assert pgcopy.timestamp(pgcopy.PG_EPOCH + 1.5) == 1_500_000

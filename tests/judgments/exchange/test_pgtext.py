"""pgtext's CSV pieces: csv_cell is csv_line's cell, and CSV_SPECIAL finds every id whose cell differs."""

import re

from django.db import connection
from hypothesis import given
from hypothesis import strategies as st

from judgments.exchange.exports import pgtext
from judgments.exchange.formats import csv_line

# Ids hold no whitespace (a database constraint); the formula starts and CSV's specials come often.
IDS = st.text(alphabet=st.sampled_from([*"ab1.'\"=+-@,;é日\\"]), min_size=1, max_size=8)


@given(IDS)
def test_csv_special_finds_every_id_whose_cell_is_not_the_id(docid):
    cell = pgtext.csv_cell(docid)
    assert csv_line([docid, "x"]) == f"{cell},x\n"
    if cell != docid:
        assert re.search(pgtext.CSV_SPECIAL, docid)


def test_postgresql_reads_csv_special_as_python_does(db):
    ids = ["a,b", 'q"d', "=doc", "-1", "+x", "'@x", "''=y", "plain", "a=b", "x'-", "日本"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT s ~ %s FROM unnest(%s::text[]) AS s", [pgtext.CSV_SPECIAL, ids])
        found = [row[0] for row in cursor.fetchall()]
    assert found == [bool(re.search(pgtext.CSV_SPECIAL, i)) for i in ids]
    assert found == [True] * 6 + [True, False, False, False, False]

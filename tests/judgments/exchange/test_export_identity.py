"""The Quepid ratings CSV written by PostgreSQL is byte for byte what the Python writer writes.

The reference is the previous path (combined grades read row by row, `formats.write_judgments_csv`): for
every combine rule and grade source, on query texts and doc ids with quotes, commas, line breaks,
backslashes, tabs, non-ASCII, leading and trailing spaces, empty texts and the spreadsheet formula guard.
What the SQL does not write (a carriage return in a query cell, an id the writer refuses) goes to the
writer itself, errors included.
"""

import gc
import re

import pytest

from judgments.exchange import formats
from judgments.exchange.exports import files
from judgments.exchange.exports.files import QUERY_COLUMNS, judgments_csv_lines
from judgments.exchange.exports.grades import combined_grades_sql
from judgments.exchange.exports.stream import named_rows
from judgments.models import CombineRule, Document, Query
from tests.scoring.test_grade_source import SOURCES, mixed_pool  # noqa: F401 (fixture)

TEXTS = [
    'say "hello", world', "line\nbreak", "=SUM(A1:A9)", "  padded  ", "", "-5 degrees", "back\\slash\\n",
    "tab\there", "ünïcødé 日本", "@mention", "'=quoted", "plain text",
]  # fmt: skip
DOC_IDS = ["a,b", 'q"d', "=doc", "-1", "+x", "日本", "back\\slash", "'@x", "plain", "@at"]


def reference(pool, query_column="text") -> str:
    sql, params = combined_grades_sql(pool)

    def rows():
        for qid, docid, grade, _pk, text, _pair in named_rows(sql, params):
            query = (text or "").strip() if query_column == "text" else qid
            yield query or qid, docid, int(grade + 0.5)

    return "".join(formats.write_judgments_csv(rows()))


@pytest.fixture
def tricky(mixed_pool):  # noqa: F811
    pool, _ = mixed_pool
    for query, text in zip(Query.objects.filter(pool=pool).order_by("pk"), TEXTS, strict=False):
        query.text = text
        query.external_id = f"Q{query.pk}=ü" if query.pk % 2 else query.external_id
        query.save()
    for document, docid in zip(
        Document.objects.filter(pool=pool, external_id__startswith="doc").order_by("pk"),
        DOC_IDS,
        strict=False,
    ):
        document.external_id = docid
        document.save()
    return pool


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("rule", list(CombineRule))
def test_ratings_csv_is_the_python_writers_byte_for_byte(tricky, rule, source):
    tricky.combine_rule, tricky.grade_source = rule, source
    tricky.save()
    for column in QUERY_COLUMNS:
        expected = reference(tricky, column)
        assert "".join(judgments_csv_lines(tricky, query_column=column)) == expected
        # the hard cases are there: formula guard, quoted cells, non-ASCII, line breaks inside a cell
        assert expected.count("\n") > 40 and re.search(r"(^|,)'[=+@-]", expected, re.M)
        assert '"a,b"' in expected and "日本" in expected
    assert '"line\nbreak"' in reference(tricky, "text")


def test_the_sql_path_is_the_one_taken(tricky):
    assert files._ratings_csv_sql(tricky, "text") is not None


def test_a_carriage_return_in_a_query_text_goes_to_the_python_writer(tricky):
    Query.objects.filter(pool=tricky).update(text="carriage\rreturn")
    assert files._ratings_csv_sql(tricky, "text") is None
    text = "".join(judgments_csv_lines(tricky))
    assert text == reference(tricky) and '"carriage\rreturn","' in text


def test_an_id_the_writer_refuses_fails_as_before(tricky):
    Document.objects.filter(pool=tricky, external_id="plain").update(external_id="bell\x07")
    assert files._ratings_csv_sql(tricky, "text") is None
    messages = []
    for make in (lambda: "".join(judgments_csv_lines(tricky)), lambda: reference(tricky)):
        try:
            make()
        except ValueError as exc:
            messages.append(str(exc))
    gc.collect()  # the abandoned readers leave their transaction blocks now, not in the next test
    assert len(messages) == 2 and messages[0] == messages[1] and "control character" in messages[0]


def test_an_empty_pool_gets_the_header(pool):
    assert "".join(judgments_csv_lines(pool)) == "query,docid,rating\n" == reference(pool)

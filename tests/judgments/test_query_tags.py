"""Query tags (segments): the rule, the query file formats, the import, the REST API and its ?tag= filter."""

import io

import pytest

from judgments import query_tags
from judgments.exchange import formats as F
from judgments.exchange.exports.files import queries_lines
from judgments.exchange.formats import FormatError, QueryRecord
from judgments.exchange.imports import import_queries
from judgments.models import Query

# --- The rule (pure) -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "tags"),
    [
        ("head", ["head"]),
        ("head,category:shoes", ["category:shoes", "head"]),
        ("head, tail ,head", ["head", "tail"]),
        ("head tail", ["head", "tail"]),
        ("  ", []),
        ("", []),
    ],
)
def test_split_tags_reads_commas_or_spaces(cell, tags):
    assert query_tags.split_tags(cell) == tags


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        ("head,,tail", "a tag is empty"),
        ("head,", "a tag is empty"),
        ("category shoes,head", "contains whitespace"),
        ("x" * 65, "at most 64"),
        ("a\x01b", "control character"),
    ],
)
def test_split_tags_refuses_bad_tags_with_one_line(cell, words):
    with pytest.raises(ValueError, match=words):
        query_tags.split_tags(cell)


def test_tags_problem_of_lists():
    assert query_tags.tags_problem(["head", "category:shoes"]) is None
    assert query_tags.tags_problem("head") == "tags must be a list of strings, got str"
    assert query_tags.tags_problem(["ok", ""]) == "a tag is empty"
    assert query_tags.tags_problem(["a,b"]) == "tag 'a,b' contains a comma"
    assert query_tags.tags_problem([3]) == "a tag must be a string, got int"
    assert "at most 50 tags" in query_tags.tags_problem([f"t{i}" for i in range(51)])
    assert query_tags.tags_problem(["x" * 64]) is None


# --- File formats --------------------------------------------------------------------------------


def test_tsv_third_cell_holds_tags_and_a_two_cell_line_says_nothing():
    records = F.parse_queries("q1\thello\thead,tail\nq2\tworld\nq3\tthree\t\n")
    assert [(r.query_id, r.tags) for r in records] == [("q1", ["head", "tail"]), ("q2", None), ("q3", [])]


def test_jsonl_tags_are_a_list():
    text = '{"id": "q1", "text": "a", "tags": ["tail", "head", "tail"]}\n{"id": "q2", "text": "b"}\n'
    records = F.parse_queries(text)
    assert [(r.query_id, r.tags) for r in records] == [("q1", ["head", "tail"]), ("q2", None)]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("q1\ta\thead\nq2\tb\thead,,tail\n", 2, "tags", "a tag is empty"),
        ("q1\ta\tcategory shoes,x\n", 1, "tags", "contains whitespace"),
        (f"q1\ta\t{'t' * 65}\n", 1, "tags", "at most 64"),
        ('{"id": "q1", "text": "a", "tags": "head"}\n', 1, "tags", "must be a list"),
        (
            '{"id": "q1", "text": "a"}\n{"id": "q2", "text": "b", "tags": ["ok", "two words"]}\n',
            2,
            "tags",
            "whitespace",
        ),
        ('{"id": "q1", "text": "a", "tags": [""]}\n', 1, "tags", "a tag is empty"),
    ],
)
def test_bad_tags_name_the_line_and_field(text, line, field, words):
    with pytest.raises(FormatError) as error:
        F.parse_queries(text)
    [problem] = error.value.problems
    assert (problem.line, problem.field) == (line, field) and words in problem.message


def test_writers_round_trip_tags():
    records = [QueryRecord(1, "q1", "a", "", None, ["category:shoes", "head"]), QueryRecord(2, "q2", "b", "")]
    tsv = "".join(F.write_queries_tsv(records))
    assert tsv == "q1\ta\tcategory:shoes,head\nq2\tb\n"
    assert [r.tags for r in F.parse_queries(tsv)] == [["category:shoes", "head"], None]
    jsonl = "".join(F.write_queries_jsonl(records))
    assert [r.tags for r in F.parse_queries(jsonl)] == [["category:shoes", "head"], None]


# --- Import and export ---------------------------------------------------------------------------


def test_import_sets_keeps_and_clears_tags(pool):
    import_queries(
        pool, io.StringIO("q1\tquery q1\thead,category:shoes\nq2\tquery q2\ttail\nq3\tnew\thead\n"), name="t"
    )
    tags = dict(Query.objects.filter(pool=pool).values_list("external_id", "tags"))
    assert tags == {"q1": ["category:shoes", "head"], "q2": ["tail"], "q3": ["head"]}
    # A line without a tags cell keeps them; an empty cell or [] clears them.
    summary = import_queries(pool, io.StringIO("q1\tquery q1\nq2\tquery q2\t\n"), name="t2")
    assert (summary.updated, summary.unchanged) == (1, 1)
    import_queries(pool, io.StringIO('{"id": "q3", "text": "new", "tags": []}\n'), name="t3")
    tags = dict(Query.objects.filter(pool=pool).values_list("external_id", "tags"))
    assert tags == {"q1": ["category:shoes", "head"], "q2": [], "q3": []}
    assert "q1\tquery q1\tcategory:shoes,head\n" in "".join(queries_lines(pool, "tsv"))
    assert '"tags": ["category:shoes", "head"]' in "".join(queries_lines(pool, "jsonl"))


def test_import_with_a_bad_tag_stores_nothing(pool):
    with pytest.raises(FormatError) as error:
        import_queries(pool, io.StringIO("q1\tchanged\thead\nq9\tnew\tbad tag,x\n"), name="bad.tsv")
    assert (error.value.problems[0].line, error.value.problems[0].field) == (2, "tags")
    assert not Query.objects.filter(external_id="q9").exists()
    assert Query.objects.get(pool=pool, external_id="q1").tags == []
    assert Query.objects.get(pool=pool, external_id="q1").text == "query q1"


def test_import_queries_command_refuses_a_bad_tag_naming_the_line(pool, tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    path = tmp_path / "queries.tsv"
    path.write_text("q1\tquery q1\thead\nq2\tquery q2\thead,,tail\n")
    with pytest.raises(CommandError) as error:
        call_command("import_queries", "--pool", "robust", str(path))
    assert "queries.tsv:2: tags: a tag is empty" in str(error.value)
    assert Query.objects.get(pool=pool, external_id="q1").tags == []


def test_model_validation_refuses_bad_tags(pool):
    """The Django admin's form validates the model: the same rule."""
    from django.core.exceptions import ValidationError

    query = Query.objects.get(pool=pool, external_id="q1")
    query.tags = ["ok", "two words"]
    with pytest.raises(ValidationError, match="contains whitespace"):
        query.full_clean()
    query.tags = ["head", "category:shoes"]
    query.full_clean()


def test_name_tag_turns_any_name_into_a_valid_tag_deterministically():
    from judgments.query_tags import GROUP, TOPIC, name_tag, tag_problem

    assert name_tag(GROUP, "Brand search") == "group:Brand-search"
    assert name_tag(TOPIC, "  Fender,  basses\t(4 strings) ") == "topic:Fender-basses-(4-strings)"
    assert name_tag(GROUP, "tab\there\x01") == "group:tab-here"
    assert name_tag(GROUP, "a\ud800b") == "group:ab"  # a lone surrogate from a JSON escape is dropped
    long = name_tag(GROUP, "x" * 100)
    assert long == "group:" + "x" * 58 and len(long) == 64
    assert name_tag(GROUP, " , \n") is None and name_tag(GROUP, "") is None
    for name in ("Brand search", "é ü", "a,b", "x" * 300, "Ünïcode\u2003space"):
        assert tag_problem(name_tag(GROUP, name)) is None

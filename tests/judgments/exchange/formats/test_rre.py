"""RRE's ratings JSON (judgments.exchange.formats.rre), and Quepid CSV and RRE read into each other:
pure Python, no database.

Built from the formats' published examples under tests/data/quepid and tests/data/rre (see their
READMEs). Topics and query groups are read as tags of their queries and written back from them (their
names in tag form). What RRE JSON cannot hold, so a round trip is identical only up to it: group and
topic descriptions, per-query templates, placeholders other than the query text, formatting (we write
two-space indentation or Quepid's compact JSON); grade 0 is left out unless asked (RRE counts every
listed document as relevant); query ids, raters, can't-judge, notes, timestamps and fractional grades
(as in Quepid CSV: test_quepid.py).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgments.exchange.formats import FormatError
from judgments.exchange.formats.quepid import parse_quepid_csv, write_quepid_csv
from judgments.exchange.formats.rre import parse_rre, write_rre
from tests.judgments.exchange.formats.examples import FUZZ, QUEPID, RRE, messages, triples, where

# ==================================================================================================
# Oracles: how RRE and Quepid read a ratings file, transcribed from their code (not from ours).


def rre_reads(doc: dict) -> dict[str, dict[str, float]]:
    """Query text -> {doc id: gain} as rre-core Engine.evaluateRatings sees it (Engine.java: all(),
    findValue(queryPlaceholder), query-level else group-level relevant_documents, relevantDocuments()
    with gainToArrayMode from the first entry, Func.gainOrRatingNode). A text in several query groups
    is several evaluations in RRE: their documents are merged here, as this app knows one query."""
    assert isinstance(doc["index"], str) and isinstance(doc["id_field"], str)  # requireNonNull

    def all_(node, name):
        return node[name] if name in node else [node]

    def find_value(node, key):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key:
                    return v
                found = find_value(v, key)
                if found is not None:
                    return found
        elif isinstance(node, list):
            for v in node:
                found = find_value(v, key)
                if found is not None:
                    return found
        return None

    def relevant(rd):
        if not rd:
            return {}
        if isinstance(next(iter(rd.values())), list):
            return {str(d): int(grade) for grade, docs in rd.items() for d in docs}
        return {d: (v["gain"] if "gain" in v else v["rating"]) for d, v in rd.items()}

    out = {}
    for topic in all_(doc, "topics"):
        for group in all_(topic, "query_groups"):
            for query in all_(group, "queries"):
                text = find_value(query, doc.get("query_placeholder", "$query"))
                rd = (
                    query["relevant_documents"]
                    if "relevant_documents" in query
                    else group.get("relevant_documents")
                )
                out.setdefault(text, {}).update(relevant(rd))
    return out


def quepid_imports(doc: dict) -> list[tuple[str, str | None, str | None]]:
    """The ratings Quepid's import (app/controllers/api/v1/import/ratings_controller.rb, file_format
    'rre') makes of a file: only root ``queries``, ``placeholders.$query``, relevant_documents keyed by
    grade (``each do |rating_value, doc_ids|``); a query without relevant_documents is still created."""
    ratings = []
    for query in doc["queries"]:
        text = query["placeholders"]["$query"]
        if query.get("relevant_documents") is not None:  # Ruby: {} is truthy, nil is not
            for rating_value, doc_ids in query["relevant_documents"].items():
                assert isinstance(doc_ids, list), "Quepid reads only the grade-keyed shape"
                ratings += [(text, doc_id, rating_value) for doc_id in doc_ids]
        else:
            ratings.append((text, None, None))
    return ratings


# ==================================================================================================
# RRE: reading the published examples


def test_rre_quepid_import_shape_keyed_by_grade():
    parsed = parse_rre((QUEPID / "mock_rre_json.json").read_bytes(), "mock_rre_json.json")
    assert [(r.line, r.query, r.doc_id, r.grade) for r in parsed.records] == [
        (12, "star trek", "193", 1),
        (15, "star trek", "157", 2),
        (16, "star trek", "152", 2),
        (26, "star wars", "12180", 1),
        (29, "star wars", "13532", 2),
        (30, "star wars", "1895", 2),
    ]
    assert (parsed.index, parsed.id_field, parsed.template) == ("Movies Search", "id", "template.json")
    assert parsed.shape == "grade" and parsed.unrated == [] and not parsed.nested


def test_rre_quepid_export_shape_keyed_by_doc_with_unrated_queries():
    parsed = parse_rre((QUEPID / "case_export_rre.json").read_bytes(), "case_export_rre.json")
    assert triples(parsed.records) == [("Second Query", "doca", 3), ("Second Query", "docb", 1)]
    assert [u.query for u in parsed.unrated] == [
        "=cmd",
        "First Query",
        "Third Query",
        "Fourth Query",
        "BLOWUP_QUERY",
    ]
    assert (parsed.index, parsed.id_field, parsed.shape) == ("tmdb", "id", "doc")


def test_rre_own_example_nested_topics_and_group_level_documents_apply_to_every_query_of_the_group():
    parsed = parse_rre((RRE / "ratings_example.json").read_bytes(), "ratings_example.json")
    assert [(r.line, r.query, r.doc_id, r.grade) for r in parsed.records] == [
        (33, "fender", "1", 3),
        (36, "fender", "2", 3),
        (33, "Fender", "1", 3),
        (36, "Fender", "2", 3),
        (33, "Fender bass", "1", 3),
        (36, "Fender bass", "2", 3),
        (65, "jazz", "1", 3),
        (65, "Jazz", "1", 3),
        (65, "Jazz Bass", "1", 3),
    ]
    assert (parsed.index, parsed.id_field, parsed.corpora_file) == ("basses", "_id", "electric_basses.bulk")
    assert parsed.nested and parsed.shape == "doc"


def test_rre_parser_agrees_with_rres_own_reading_of_its_examples():
    for path in (
        RRE / "ratings_example.json",
        RRE / "ratings_example_generic.json",
        QUEPID / "mock_rre_json.json",
    ):
        parsed = parse_rre(path.read_bytes(), path.name)
        ours: dict[str, dict[str, int]] = {q: {} for q in parsed.queries}
        for r in parsed.records:
            ours[r.query][r.doc_id] = r.grade
        assert ours == rre_reads(json.loads(path.read_text())), path.name


def test_rre_rating_is_read_when_there_is_no_gain_and_a_custom_placeholder_is_honoured():
    doc = {
        "index": "i",
        "id_field": "id",
        "query_placeholder": "$q",
        "queries": [
            {"template": {"nested": {"$q": "deep text"}}, "placeholders": {"$q": "later"},
             "relevant_documents": {"d1": {"rating": 2.0}, "d2": {"gain": 1, "rating": 4}}},
        ],
    }  # fmt: skip
    parsed = parse_rre(json.dumps(doc), "f")
    # findValue is depth first in document order: the template's $q comes before placeholders'.
    assert triples(parsed.records) == [("deep text", "d1", 2), ("deep text", "d2", 1)]
    assert rre_reads(doc) == {"deep text": {"d1": 2.0, "d2": 1}}


def test_rre_query_without_relevant_documents_falls_back_to_the_groups_and_null_means_none():
    doc = {
        "index": "i",
        "id_field": "id",
        "query_groups": [
            {"relevant_documents": {"2": ["g"]},
             "queries": [{"placeholders": {"$query": "a"}},
                         {"placeholders": {"$query": "b"}, "relevant_documents": None},
                         {"placeholders": {"$query": "c"}, "relevant_documents": {}}]},
        ],
    }  # fmt: skip
    parsed = parse_rre(json.dumps(doc), "f")
    assert triples(parsed.records) == [("a", "g", 2)]
    assert [u.query for u in parsed.unrated] == ["b", "c"]
    assert rre_reads(doc) == {"a": {"g": 2}, "b": {}, "c": {}}


# --- Refusals: the line and the JSON path of every problem -----------------------------------------


def _query(rd, text="q") -> str:
    return json.dumps(
        {
            "index": "i",
            "id_field": "id",
            "queries": [{"placeholders": {"$query": text}, "relevant_documents": rd}],
        }
    )


@pytest.mark.parametrize(
    ("data", "expected", "says"),
    [
        (_query({"2.5": ["d"]}), [(1, 'queries[0].relevant_documents["2.5"]')], "must be a whole number"),
        (_query({"7": ["d"]}), [(1, 'queries[0].relevant_documents["7"]')], "outside 0-4"),
        (
            _query({"d": {"gain": 2.5}}),
            [(1, "queries[0].relevant_documents.d.gain")],
            "2.5 is not a whole number",
        ),
        (
            _query({"d": {"gain": "3"}}),
            [(1, "queries[0].relevant_documents.d.gain")],
            "RRE reads a string as 0",
        ),
        (_query({"d": {"gain": None}}), [(1, "queries[0].relevant_documents.d.gain")], "must be a number"),
        (_query({"d": {}}), [(1, "queries[0].relevant_documents.d.gain")], "gain is missing"),
        (_query({"d": 3}), [(1, "queries[0].relevant_documents.d")], "every entry must be an object"),
        (
            _query({"1": ["d"], "e": {"gain": 1}}),
            [(1, "queries[0].relevant_documents.e")],
            "every entry must be an array",
        ),
        (_query({"1": ["d"], "2": ["d"]}), [(1, 'queries[0].relevant_documents["2"][0]')], "listed twice"),
        (_query({"1": ["d e"]}), [(1, 'queries[0].relevant_documents["1"][0]')], "whitespace"),
        (_query({"1": [["d"]]}), [(1, 'queries[0].relevant_documents["1"][0]')], "must be a string"),
        (_query([{"d": {"gain": 1}}]), [(1, "queries[0].relevant_documents")], "must be a JSON object"),
        (_query({"1": ["\ud800"]}), [(1, 'queries[0].relevant_documents["1"][0]')], "lone surrogate"),
        (_query({"1": ["d"]}, text="  "), [(1, "queries[0].placeholders.$query")], "query text is empty"),
        ('{"queries": [{"placeholders": {}}]}', [(1, "queries[0].placeholders.$query")], "$query is missing"),
        ('{"queries": {"a": 1}}', [(1, "queries")], "must be an array"),
        ('{"queries": [1]}', [(1, "queries[0]")], "must be a JSON object"),
        ('{"index": 3, "queries": []}', [(1, "index")], "must be a string"),
        ('{"index": "i"}', [(1, "queries")], "no queries"),
        ('{"queries": []}', [(0, "file")], "no queries"),
        ("[1, 2]", [(1, "$")], "a ratings file must be a JSON object, got an array"),
        ('{"queries": [],\n "queries": []}', [(1, "queries")], "appears twice"),
        (
            '{\n"queries": [\n{"placeholders": {"$query": "q"}, "relevant_documents": {"1": ["d"],}}]}',
            [(3, "json")],
            "invalid JSON",
        ),
        ('{"queries": [{"x": NaN}]}', [(0, "json")], "NaN is not valid JSON"),
        ("[" * 5000 + "]" * 5000, [(0, "json")], "nested too deeply"),
        ("", [(0, "file")], "empty"),
        (b'{"queries": "\xff"}', [(1, "encoding")], "not valid UTF-8"),
    ],
)
def test_rre_bad_input_is_refused_naming_line_and_json_path(data, expected, says):
    assert where(parse_rre, data) == expected
    assert says in messages(parse_rre, data)


def test_rre_problem_lines_point_at_the_document_entry_in_a_pretty_printed_file():
    doc = json.loads((QUEPID / "mock_rre_json.json").read_text())
    doc["queries"][1]["relevant_documents"]["2"][1] = "bad id"
    doc["queries"][0]["relevant_documents"]["9"] = ["x"]
    text = json.dumps(doc, indent=2)
    assert where(parse_rre, text) == [
        (18, 'queries[0].relevant_documents["9"]'),
        (33, 'queries[1].relevant_documents["2"][1]'),
    ]
    assert text.splitlines()[32].strip() == '"bad id"'


def test_rre_same_query_in_two_groups_with_different_grades_is_a_problem_and_equal_grades_merge():
    def groups(second_grade):
        return json.dumps({"index": "i", "id_field": "id", "query_groups": [
            {"queries": [{"placeholders": {"$query": "q"}}], "relevant_documents": {"1": ["d", "e"]}},
            {"queries": [{"placeholders": {"$query": "q"}}], "relevant_documents": {second_grade: ["d"]}},
        ]}, indent=1)  # fmt: skip

    assert triples(parse_rre(groups("1"), "f").records) == [("q", "d", 1), ("q", "e", 1)]
    assert where(parse_rre, groups("3")) == [(30, 'query_groups[1].relevant_documents["3"][0]')]
    assert "has grade 1 on line 15 and 3 here" in messages(parse_rre, groups("3"))


# --- Writing: what RRE and Quepid read back --------------------------------------------------------


ROWS = [
    ("star wars", "d3", 3),
    ("star wars", "d0", 0),
    ("star wars", "d1", 1),
    ("star wars", "d3b", 3),
    ("star trek", None, None),
    ("dune", "x", 0),
]


def test_rre_writer_grade_shape_is_read_by_rre_and_by_quepids_import():
    doc = json.loads("".join(write_rre(ROWS, index="tmdb")))
    assert doc["queries"][0]["relevant_documents"] == {"1": ["d1"], "3": ["d3", "d3b"]}  # grades ascending
    assert rre_reads(doc) == {"star wars": {"d1": 1, "d3": 3, "d3b": 3}, "star trek": {}, "dune": {}}
    assert quepid_imports(doc) == [
        ("star wars", "d1", "1"), ("star wars", "d3", "3"), ("star wars", "d3b", "3"),
        ("star trek", None, None), ("dune", None, None),
    ]  # fmt: skip
    assert (doc["index"], doc["id_field"], doc["template"]) == ("tmdb", "id", "template.json")


def test_rre_writer_doc_shape_and_keep_zero():
    doc = json.loads("".join(write_rre(ROWS, index="tmdb", shape="doc", keep_zero=True, id_field="_id")))
    assert doc["queries"][0]["relevant_documents"] == {
        "d3": {"gain": 3}, "d0": {"gain": 0}, "d1": {"gain": 1}, "d3b": {"gain": 3},
    }  # fmt: skip
    assert rre_reads(doc)["dune"] == {"x": 0} and doc["id_field"] == "_id"
    assert "relevant_documents" not in doc["queries"][1]


@pytest.mark.parametrize(
    ("rows", "options"),
    [
        ([("q", "d", 5)], {}),
        ([("q", "d", 1.5)], {}),
        ([("q", "d", 1), ("q", "d", 2)], {}),
        ([("q", "d e", 1)], {}),
        ([("q ", "d", 1)], {}),
        ([("q", "d", 1)], {"shape": "flat"}),
        ([("q", "d", 1)], {"index": ""}),
    ],
)
def test_rre_writer_refuses_bad_rows_and_options(rows, options):
    with pytest.raises(ValueError):
        list(write_rre(rows, **{"index": "i", **options}))


def test_rre_quepid_import_file_round_trips_byte_for_byte():
    original = (QUEPID / "mock_rre_json.json").read_text()
    parsed = parse_rre(original, "x")
    written = "".join(
        write_rre(parsed.rows(), index=parsed.index, id_field=parsed.id_field, template=parsed.template)
    )
    assert written == original


def test_rre_quepid_export_file_round_trips_byte_for_byte_up_to_the_last_line_feed():
    original = (QUEPID / "case_export_rre.json").read_text()
    p = parse_rre(original, "x")
    written = write_rre(
        p.rows(), index=p.index, id_field=p.id_field, template=p.template, shape=p.shape, compact=True
    )
    assert "".join(written) == original + "\n"


def test_rre_nested_example_round_trips_its_judgments_through_the_flat_shape():
    original = parse_rre((RRE / "ratings_example.json").read_bytes(), "x")
    written = "".join(
        write_rre(original.rows(), index=original.index, id_field=original.id_field,
                  corpora_file=original.corpora_file, shape="doc")
    )  # fmt: skip
    again = parse_rre(written, "y")
    assert triples(again.records) == triples(original.records)
    assert (again.index, again.id_field, again.corpora_file) == ("basses", "_id", "electric_basses.bulk")
    assert not again.nested  # topics and query groups are what the round trip loses
    assert rre_reads(json.loads(written)) == rre_reads(json.loads((RRE / "ratings_example.json").read_text()))


def test_quepid_csv_and_rre_carry_the_same_judgments_into_each_other():
    csv = parse_quepid_csv((QUEPID / "case_export.csv").read_bytes(), "x")
    rre = parse_rre("".join(write_rre(csv.rows(), index="tmdb", shape="doc", compact=True)), "y")
    assert triples(rre.records) == triples(csv.records)
    assert [u.query for u in rre.unrated] == [u.query for u in csv.unrated]
    back = parse_quepid_csv("".join(write_quepid_csv(rre.rows())), "z")
    assert triples(back.records) == triples(csv.records)


# ==================================================================================================
# Fuzz: any input is either records or FormatError, never another exception


@FUZZ
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_fuzz_any_input_is_records_or_format_error(data):
    for parse in (parse_quepid_csv, parse_rre):
        try:
            parse(data, "fuzz")
        except FormatError as exc:
            assert exc.problems and all(p.field for p in exc.problems)


def _mostly(good: list, bad: list):
    """Good values nine times in ten: most drawn files are valid, some carry one bad value."""
    return st.sampled_from(good * (3 * len(bad)) + bad)


_texts = _mostly(["q", "Q", "star wars", " padded "], ["", 3, None, ["q"]])
_docs = _mostly(["d1", "d2", "d3"], ["d 4", "", 5])
_grades = _mostly([0, 1, 3, 4, 3.0], [2.5, 7, -1, "3", None, True])
_grade_keys = _mostly(["0", "1", "3", "4", "+2"], ["2.5", "9", "x"])
_by_grade = st.dictionaries(_grade_keys, st.lists(_docs, max_size=3), max_size=3)
_by_doc = st.dictionaries(
    _mostly(["d1", "d2", "d3"], ["d 4"]),
    st.one_of(st.fixed_dictionaries({"gain": _grades}), st.fixed_dictionaries({"rating": _grades})),
    max_size=3,
)
_relevant = st.one_of(_by_grade, _by_doc, _mostly([{}], [None, [], {"d1": {}}, {"d1": 3}]))


@st.composite
def _rre_documents(draw):
    """Mostly well-formed RRE files (flat or nested, either shape) with some bad values mixed in."""

    def query():
        q = {"placeholders": {"$query": draw(_texts)}}
        if draw(st.booleans()):
            q["relevant_documents"] = draw(_relevant)
        return q

    def group():
        g = {"queries": [query() for _ in range(draw(st.integers(0, 3)))]}
        if draw(st.booleans()):
            g["relevant_documents"] = draw(_relevant)
        return g

    doc = {"index": draw(_mostly(["i"], [3])), "id_field": "id"}
    layout = draw(st.sampled_from(["flat", "groups", "topics"]))
    if layout == "flat":
        doc.update(group())
    elif layout == "groups":
        doc["query_groups"] = [group() for _ in range(draw(st.integers(1, 2)))]
    else:
        doc["topics"] = [{"query_groups": [group() for _ in range(draw(st.integers(1, 2)))]}]
    return doc


@FUZZ
@given(_rre_documents())
def test_fuzz_rre_shaped_json_is_records_or_format_error(doc):
    try:
        parsed = parse_rre(json.dumps(doc, indent=1), "fuzz")
    except FormatError as exc:
        assert exc.problems
        return
    assert all(r.grade in range(5) for r in parsed.records)
    # What we read is what RRE reads (every query's documents and grades).
    seen = rre_reads(doc)
    ours: dict[str, dict[str, int]] = {q: {} for q in parsed.queries}
    for r in parsed.records:
        ours[r.query][r.doc_id] = r.grade
    assert ours == {str(text).strip(): docs for text, docs in seen.items()}  # Jackson's asText: 3 is "3"
    written = "".join(write_rre(parsed.rows(), index="i", keep_zero=True))  # grades ascending
    assert sorted(triples(parse_rre(written, "again").records)) == sorted(triples(parsed.records))


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["q1", "q 2", "=q3", "q,4"]), st.sampled_from(["a", "b", "c"]), st.integers(0, 4)
        ),
        unique_by=lambda t: (t[0], t[1]),
        max_size=12,
    ),
    st.sampled_from(["grade", "doc"]),
)
def test_round_trip_property_records_to_files_to_records(rows, shape):
    csv = parse_quepid_csv("".join(write_quepid_csv(rows)), "c") if rows else None
    if rows:
        assert sorted(triples(csv.records)) == sorted(rows)
    rre = parse_rre(
        "".join(write_rre(rows or [("q", None, None)], index="i", shape=shape, keep_zero=True)), "r"
    )
    assert sorted(triples(rre.records)) == sorted(rows)


# ==================================================================================================
# Topics and query groups as tags


def test_rre_topics_and_query_groups_become_tags_of_their_queries():
    parsed = parse_rre((RRE / "ratings_example.json").read_bytes(), "ratings_example.json")
    fender = ["group:Brand-search", "topic:Fender-basses"]
    jazz = ["group:Jazz-bass-search", "topic:Fender-basses"]
    assert parsed.tags == {
        "fender": fender,
        "Fender": fender,
        "Fender bass": fender,
        "jazz": jazz,
        "Jazz": jazz,
        "Jazz Bass": jazz,
    }
    assert parsed.lines["jazz"] == 45
    # a flat file states no place; groups without topics, an unnamed group, a query in two groups
    assert parse_rre((QUEPID / "mock_rre_json.json").read_bytes(), "f").tags == {}
    doc = {
        "index": "i",
        "query_groups": [
            {"name": "head queries", "queries": [{"placeholders": {"$query": "q1"}}, {"placeholders": {"$query": "q2"}}]},
            {"queries": [{"placeholders": {"$query": "q3"}}]},
            {"name": 7, "queries": [{"placeholders": {"$query": "q1"}}]},
        ],
    }  # fmt: skip
    assert parse_rre(json.dumps(doc), "f").tags == {
        "q1": ["group:7", "group:head-queries"],
        "q2": ["group:head-queries"],
        "q3": [],
    }


def test_rre_writer_groups_queries_by_their_tags_and_the_round_trip_keeps_them():
    original = parse_rre((RRE / "ratings_example.json").read_bytes(), "x")
    written = "".join(write_rre(original.rows(), index="basses", shape="doc", tags=original.tags))
    document = json.loads(written)
    assert "queries" not in document
    [topic] = document["topics"]
    assert topic["description"] == "Fender-basses"
    assert [(g["name"], [q["placeholders"]["$query"] for q in g["queries"]]) for g in topic["query_groups"]] == [
        ("Brand-search", ["fender", "Fender", "Fender bass"]),
        ("Jazz-bass-search", ["jazz", "Jazz", "Jazz Bass"]),
    ]  # fmt: skip
    again = parse_rre(written, "y")
    assert again.tags == original.tags and triples(again.records) == triples(original.records)
    assert rre_reads(document) == rre_reads(json.loads((RRE / "ratings_example.json").read_text()))
    # a query without a place among placed ones: an unnamed topic and group; two groups: written in both
    rows = [("a", "d1", 2), ("b", "d2", 1), ("c", None, None)]
    tags = {"a": ["group:g1", "group:g2", "head"], "c": ["topic:t"]}
    again = parse_rre("".join(write_rre(rows, index="i", tags=tags)), "z")
    assert again.tags == {"a": ["group:g1", "group:g2"], "b": [], "c": ["topic:t"]}
    assert triples(again.records) == [("a", "d1", 2), ("b", "d2", 1)]
    # no place tag at all: the flat shape, as before
    assert "queries" in json.loads("".join(write_rre(rows, index="i", tags={"a": ["head"]})))

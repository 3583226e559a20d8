"""Judgment files from Quepid and RRE import into a pool and export back (tests/data/quepid, rre).

What the other format cannot hold is lost, and the README says so: Quepid's unrated pairs
(``query,docid,``) are skipped and counted; ratings come back as ``3.0``; files come back ordered by
query text then doc id.
"""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from judgments.exchange import formats
from judgments.exchange.exports.files import quepid_csv_lines, rre_lines
from judgments.exchange.exports.stream import ExportError
from judgments.exchange.imports.judgments import import_judgments
from judgments.models import Judgment, Pool, Query

DATA = Path(__file__).resolve().parents[2] / "data"


def _import(pool, path: Path, fmt: str):
    return import_judgments(pool, path.read_bytes(), format=fmt, name=path.name)


def _rre_content(text: str) -> dict:
    """Query text -> {doc: grade} of an RRE file, whatever its shape and order."""
    parsed = formats.parse_rre(text)
    out: dict[str, dict[str, int]] = {u.query: {} for u in parsed.unrated}
    for r in parsed.records:
        out.setdefault(r.query, {})[r.doc_id] = r.grade
    return out


def test_quepid_case_export_round_trips_byte_for_byte(db):
    pool = Pool.objects.create(name="quepid")
    source = DATA / "quepid" / "case_export.csv"
    summary = _import(pool, source, "csv")
    assert (summary.created, summary.skipped, summary.queries_created) == (2, 5, 6)
    assert "5 unrated rows skipped" in str(summary)
    texts = list(Query.objects.filter(pool=pool).order_by("pk").values_list("text", flat=True))
    assert texts == ["=cmd", "First Query", "Second Query", "Third Query", "Fourth Query", "BLOWUP_QUERY"]
    exported = "".join(quepid_csv_lines(pool))
    # Every line comes back byte for byte (Quepid writes no final line feed; we always end lines with
    # one). The order is ours, as in every export: by query id (here made from the text), then doc id,
    # not the order Quepid happened to write (its queries' creation order), which no pool can keep.
    header, *lines = exported.splitlines()
    source_header, *source_lines = source.read_text().splitlines()
    assert header == source_header and sorted(lines) == sorted(source_lines)
    ids = dict(Query.objects.filter(pool=pool).values_list("text", "external_id"))
    assert lines[0] == " =cmd,," and lines[1].startswith("BLOWUP_QUERY")  # " =": the formula guard
    keys = [(ids[line.rsplit(",", 2)[0].strip()], line.rsplit(",", 2)[1]) for line in lines]
    assert keys == sorted(keys)


def test_quepid_import_dialog_example_keeps_what_a_pool_can_hold(db):
    pool = Pool.objects.create(name="dialog")
    summary = _import(pool, DATA / "quepid" / "import_modal_example.csv", "csv")
    assert (summary.created, summary.skipped) == (1, 2)  # star wars,3557771, and star trek,,
    # The unrated pair is not held (a pair without a grade is no judgment); the ungraded query is.
    assert (
        "".join(quepid_csv_lines(pool))
        == "query,docid,rating\nstar trek,,\nstar wars,3574597,3.0\n"  # by query id
    )


def test_quepid_rating_that_is_not_whole_is_refused_with_its_line_and_nothing_is_written(db):
    pool = Pool.objects.create(name="strict")
    with pytest.raises(formats.FormatError) as caught:
        import_judgments(
            pool, b"query,docid,rating\nq one,d1,3.0\nq one,d2,2.5\n", format="csv", name="f.csv"
        )
    assert [(p.line, p.field) for p in caught.value.problems] == [(3, "rating")]
    assert not Query.objects.filter(pool=pool).exists() and not Judgment.objects.exists()


@pytest.mark.parametrize("shape", ["grade", "doc"])
def test_quepid_rre_files_round_trip(db, shape):
    pool = Pool.objects.create(name=f"rre-{shape}")
    source = DATA / "quepid" / ("mock_rre_json.json" if shape == "grade" else "case_export_rre.json")
    _import(pool, source, "rre")
    exported = "".join(rre_lines(pool, shape=shape, index=json.loads(source.read_text())["index"]))
    assert _rre_content(exported) == _rre_content(source.read_text())
    document = json.loads(exported)
    assert {"id_field", "index", "queries"} <= document.keys()


def test_rre_ratings_example_imports_through_the_command_and_exports(db, tmp_path):
    source = DATA / "rre" / "ratings_example.json"
    out = StringIO()
    call_command(
        "import_judgments", "--pool", "rre-cmd", "--format", "rre", str(source), stdout=out, stderr=StringIO()
    )
    pool = Pool.objects.get(name="rre-cmd")
    exported = StringIO()
    call_command(
        "export_judgments", "--pool", "rre-cmd", "--format", "rre", "--rre-shape", "doc", stdout=exported
    )
    original = _rre_content(source.read_text())
    graded = {q: {d: g for d, g in docs.items() if g > 0} for q, docs in original.items()}
    assert _rre_content(exported.getvalue()) == graded
    assert Judgment.objects.filter(pair__pool=pool).count() == sum(len(d) for d in original.values())


def test_rre_export_refuses_two_queries_with_one_text(db):
    pool = Pool.objects.create(name="twins")
    Query.objects.create(pool=pool, external_id="q1", text="same")
    Query.objects.create(pool=pool, external_id="q2", text="same")
    with pytest.raises(ExportError, match="q1, q2"):
        rre_lines(pool)


def test_rre_topics_and_query_groups_become_query_tags_and_come_back_as_groups(db):
    """Importing a nested RRE file tags each query with its topic and group; the export writes the queries
    grouped back under them; a second pool importing that export gets the same tags. A re-import
    replaces a query's group:/topic: tags (the file states them) and keeps its other tags."""
    source = DATA / "rre" / "ratings_example.json"
    pool = Pool.objects.create(name="rre-groups")
    Query.objects.create(pool=pool, external_id="jazz", text="jazz", tags=["head", "group:old"])
    _import(pool, source, "rre")
    tags = dict(Query.objects.filter(pool=pool).values_list("text", "tags"))
    fender = ["group:Brand-search", "topic:Fender-basses"]
    assert tags == {
        "fender": fender,
        "Fender": fender,
        "Fender bass": fender,
        "jazz": ["group:Jazz-bass-search", "head", "topic:Fender-basses"],
        "Jazz": ["group:Jazz-bass-search", "topic:Fender-basses"],
        "Jazz Bass": ["group:Jazz-bass-search", "topic:Fender-basses"],
    }
    exported = "".join(rre_lines(pool, shape="doc", index="basses"))
    document = json.loads(exported)
    [topic] = document["topics"]
    groups = {
        g["name"]: sorted(q["placeholders"]["$query"] for q in g["queries"]) for g in topic["query_groups"]
    }
    assert topic["description"] == "Fender-basses"
    assert groups == {
        "Brand-search": ["Fender", "Fender bass", "fender"],
        "Jazz-bass-search": ["Jazz", "Jazz Bass", "jazz"],
    }
    assert _rre_content(exported) == _rre_content(source.read_text())
    copy = Pool.objects.create(name="rre-groups-copy")
    import_judgments(copy, exported.encode(), format="rre", name="exported.json")
    again = dict(Query.objects.filter(pool=copy).values_list("text", "tags"))
    assert again == {**tags, "jazz": ["group:Jazz-bass-search", "topic:Fender-basses"]}  # "head" is not RRE's


def test_rre_import_with_too_many_tags_for_a_query_is_refused_and_writes_nothing(db):
    pool = Pool.objects.create(name="rre-many")
    Query.objects.create(pool=pool, external_id="q", text="q", tags=[f"t{i:02d}" for i in range(50)])
    document = {"index": "i", "query_groups": [{"name": "g", "queries": [{"placeholders": {"$query": "q"}, "relevant_documents": {"d": {"gain": 2}}}]}]}  # fmt: skip
    with pytest.raises(formats.FormatError) as caught:
        import_judgments(pool, json.dumps(document, indent=1).encode(), format="rre", name="many.json")
    [problem] = caught.value.problems
    assert problem.field == "tags" and "query q would carry 51 tags" in problem.message
    assert not Judgment.objects.filter(pair__pool=pool).exists()
    assert Query.objects.get(pool=pool, external_id="q").tags == [f"t{i:02d}" for i in range(50)]

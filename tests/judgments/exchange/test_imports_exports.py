"""Import services for documents and judgments, every export generator, and the commands around them."""

import io
import json
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from judgments import services
from judgments.exchange.exports.files import (
    documents_lines,
    judgments_csv_lines,
    judgments_jsonl_lines,
    queries_lines,
    rater_csv_lines,
)
from judgments.exchange.exports.grades import (
    combined_grades,
    qrels_blocks,
    qrels_chunks,
    qrels_filename,
    ranklib_lines,
)
from judgments.exchange.exports.runs import run_chunks
from judgments.exchange.exports.stream import ExportError
from judgments.exchange.formats import FormatError
from judgments.exchange.imports import import_qrels
from judgments.exchange.imports.documents import import_documents
from judgments.exchange.imports.judgments import import_judgments
from judgments.models import CombineRule, Document, Judgment, JudgmentChange, Pair, Pool, Query

User = get_user_model()


def problems(error) -> list[tuple[int, str]]:
    return [(p.line, p.field) for p in error.value.problems]


def text(chunks) -> str:
    return "".join(chunks)


def lines(chunks) -> list[str]:
    """Lines of an export whose order is the database's (qrels), sorted."""
    return sorted(text(chunks).splitlines())


def pair(pool, qid, docid) -> Pair:
    query = Query.objects.get(pool=pool, external_id=qid)
    document = Document.objects.get(pool=pool, external_id=docid)
    return Pair.objects.get_or_create(pool=pool, query=query, document=document)[0]


# --- Documents -------------------------------------------------------------------------------------


def test_import_documents_creates_updates_and_keeps_extra_keys(pool):
    data = (
        b'{"id": "d1", "title": "Title d1", "body": "Body of d1 about query", "url": ""}\n'
        b'{"id": "d2", "title": "New d2", "body": "b", "url": "https://example.org/d2", "lang": "en", "tags": [1, 2]}\n'
        b'{"id": "d9", "title": "Nine"}\n'
    )
    summary = import_documents(pool, data, name="docs.jsonl")
    assert (summary.read, summary.created, summary.updated, summary.unchanged) == (3, 1, 1, 1)
    d2 = Document.objects.get(pool=pool, external_id="d2")
    assert (d2.title, d2.url, d2.extra) == (
        "New d2",
        "https://example.org/d2",
        {"lang": "en", "tags": [1, 2]},
    )
    assert Document.objects.get(pool=pool, external_id="d9").title == "Nine"


def test_import_documents_with_problems_writes_nothing(pool):
    data = b'{"id": "d7", "title": "ok"}\n{"id": "d 8"}\n{"id": "d9", "note": "nul \\u0000 here"}\n\n{"id": "d7"}\n'
    with pytest.raises(FormatError) as error:
        import_documents(pool, data, name="bad.jsonl")
    assert problems(error) == [(2, "id"), (5, "id")]
    assert not Document.objects.filter(external_id__in=["d7", "d9"]).exists()
    with pytest.raises(FormatError) as error:
        import_documents(pool, b'{"id": "d9", "note": "nul \\u0000 here"}\n', name="nul.jsonl")
    assert problems(error) == [(1, "note")]
    with pytest.raises(FormatError) as error:
        import_documents(pool, b"", name="empty.jsonl")
    assert problems(error) == [(0, "file")]


def test_documents_export_re_imports_into_an_empty_pool_unchanged(pool):
    import_documents(
        pool,
        b'{"id": "d4", "title": "T\\u00e9", "body": "multi\\nline", "x": {"y": [true, null]}}\n',
        name="d",
    )
    exported = text(documents_lines(pool))
    other = Pool.objects.create(name="copy")
    summary = import_documents(other, exported.encode(), name="copy.jsonl")
    assert summary.created == 4
    assert text(documents_lines(other)) == exported
    assert json.loads(exported.splitlines()[-1]) == {
        "id": "d4",
        "title": "Té",
        "body": "multi\nline",
        "url": "",
        "x": {"y": [True, None]},
    }


# --- Judgments: Quepid CSV -------------------------------------------------------------------------


def test_quepid_csv_matches_queries_by_id_or_text(pool, rater):
    Query.objects.filter(pool=pool, external_id="q2").update(text="Cheap  Flights to LISBON")
    data = b"query,docid,rating\nq1,d1,3\ncheap flights to lisbon,d2,1\n q1 ,d9,0\n"
    summary = import_judgments(pool, data, format="csv", name="quepid.csv", rater=rater)
    assert (summary.created, summary.documents_created, summary.rater) == (3, 1, "rita_rater")
    got = {
        (j.pair.query.external_id, j.pair.document.external_id): j.grade
        for j in Judgment.objects.filter(rater=rater)
    }
    assert got == {("q1", "d1"): 3, ("q2", "d2"): 1, ("q1", "d9"): 0}


def test_quepid_csv_ambiguous_query_text_is_a_problem(pool, rater):
    Query.objects.create(pool=pool, external_id="q3", text="query q1")  # same text as q1
    data = b"query,docid,rating\nquery q1,d1,3\nnobody asked this,d1,2\nq2,d1,2\n"
    with pytest.raises(FormatError) as error:
        import_judgments(pool, data, format="csv", name="quepid.csv", rater=rater)
    assert problems(error) == [(2, "query")]
    assert "2 queries (q1, q3)" in error.value.problems[0].message
    assert not Judgment.objects.exists()
    assert not Query.objects.filter(text="nobody asked this").exists()


def test_quepid_csv_unknown_query_text_becomes_a_new_query(pool, rater):
    data = b"query,docid,rating\nnobody asked this,d1,2\nq2,d1,2\n"
    summary = import_judgments(pool, data, format="csv", name="quepid.csv", rater=rater)
    assert summary.queries_created == 1 and summary.created == 2
    new = Query.objects.get(pool=pool, text="nobody asked this")
    assert new.external_id == "nobody_asked_this"
    assert Judgment.objects.filter(pair__query=new, grade=2).count() == 1


def test_quepid_csv_default_rater_is_a_non_login_account_named_after_the_file(pool):
    summary = import_judgments(pool, b"query,docid,rating\nq1,d1,2\n", format="csv", name="/x/my ratings.csv")
    account = User.objects.get(username="ratings-my_ratings.csv")
    assert summary.rater == account.username and not account.has_usable_password()


def test_grade_outside_the_pools_scale_is_refused(pool, rater):
    pool.grade_scale = [{"grade": g, "label": str(g)} for g in (0, 1, 2)]
    pool.save()
    with pytest.raises(FormatError) as error:
        import_judgments(
            pool, b"query,docid,rating\nq1,d1,2\nq1,d2,3\nq1,d3,4\n", format="csv", name="r.csv", rater=rater
        )
    assert problems(error) == [(3, "grade"), (4, "grade")]
    assert "outside the scale of pool robust (0, 1, 2)" in error.value.problems[0].message
    # A grade outside 0-4 is the parser's problem, whatever the pool's scale.
    with pytest.raises(FormatError) as error:
        import_judgments(pool, b"query,docid,rating\nq1,d3,7\n", format="csv", name="r.csv", rater=rater)
    assert problems(error) == [(2, "rating")]
    assert not Judgment.objects.exists()


# --- Judgments: per-rater CSV ----------------------------------------------------------------------


def test_rater_csv_creates_missing_raters_and_cant_judge(pool, rater):
    data = b"query_id,doc_id,rita_rater,newbie\nq1,d1,3,X\nq1,d2,,1\nq5,d1,0,\n"
    summary = import_judgments(pool, data, format="rater-csv", name="raters.csv")
    assert (summary.read, summary.created, summary.queries_created, summary.rater) == (4, 4, 1, "2 raters")
    newbie = User.objects.get(username="newbie")
    assert not newbie.has_usable_password()
    cant = Judgment.objects.get(rater=newbie, pair__document__external_id="d1")
    assert (cant.cant_judge, cant.grade, cant.cant_judge_reason) == (
        True,
        None,
        "can't judge (imported from raters.csv)",
    )
    assert Judgment.objects.get(rater=rater, pair__query__external_id="q5").grade == 0


def test_rater_csv_invalid_username_is_a_problem(pool):
    with pytest.raises(FormatError) as error:
        import_judgments(pool, b"query_id,doc_id,bad/name\nq1,d1,3\n", format="rater-csv", name="r.csv")
    assert problems(error) == [(2, "rater")]
    assert not User.objects.filter(username="bad/name").exists()


# --- Judgments: JSON lines, full fidelity ----------------------------------------------------------


@pytest.fixture
def judged(pool, rater, other_rater, site_admin):
    services.record_judgment(pair(pool, "q1", "d1"), rater, grade=3, note="clear answer")
    services.record_judgment(pair(pool, "q1", "d1"), other_rater, grade=1)
    services.record_judgment(
        pair(pool, "q1", "d2"), rater, cant_judge=True, reason="404 page", note="try later"
    )
    services.record_judgment(pair(pool, "q2", "d3"), other_rater, grade=0)
    services.set_final_grade(pair(pool, "q1", "d1"), 2, site_admin)
    Judgment.objects.filter(rater=rater, pair__document__external_id="d1").update(
        created_at=datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        updated_at=datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC),
    )
    return pool


def test_judgments_jsonl_re_imports_into_an_empty_pool_with_nothing_lost(judged):
    exported = text(judgments_jsonl_lines(judged))
    empty = Pool.objects.create(name="restored")
    summary = import_judgments(empty, exported.encode(), format="jsonl", name="robust.judgments.jsonl")
    assert (summary.read, summary.created, summary.updated) == (5, 4, 1)  # 4 judgments, 1 final grade
    assert text(judgments_jsonl_lines(empty)) == exported
    restored = Judgment.objects.get(
        pair__pool=empty, rater__username="rita_rater", pair__document__external_id="d1"
    )
    assert restored.created_at == datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert restored.note == "clear answer"
    final = Pair.objects.get(pool=empty, document__external_id="d1")
    assert (final.final_grade, final.final_by.username) == (2, "ada_admin")
    assert combined_grades(empty) == combined_grades(judged)
    # Importing the same file again changes nothing.
    again = import_judgments(empty, exported.encode(), format="jsonl", name="again.jsonl")
    assert (again.created, again.updated, again.unchanged) == (0, 0, 5)


def test_judgments_jsonl_creates_missing_raters_without_login(pool):
    line = {
        "query_id": "q1",
        "doc_id": "d1",
        "rater": "visiting_rater",
        "grade": 2,
        "note": "n",
        "created_at": "2023-05-01T10:00:00+02:00",
    }
    import_judgments(pool, (json.dumps(line) + "\n").encode(), format="jsonl", name="j.jsonl")
    judgment = Judgment.objects.get(rater__username="visiting_rater")
    assert judgment.created_at == datetime(2023, 5, 1, 8, 0, tzinfo=UTC)
    assert not judgment.rater.has_usable_password()


def test_judgments_jsonl_problems_name_line_and_field(pool):
    lines = [
        {"query_id": "q1", "doc_id": "d1", "rater": "a", "grade": 5},
        {"query_id": "q1", "doc_id": "d1", "rater": "b", "grade": None, "cant_judge": True},
        {
            "query_id": "q1",
            "doc_id": "d2",
            "rater": "c",
            "grade": None,
            "final": True,
            "cant_judge": True,
            "reason": "x",
        },
        {"query_id": "q 1", "doc_id": "d2", "rater": "c", "grade": 1},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode() + b"{broken\n"
    with pytest.raises(FormatError) as error:
        import_judgments(pool, data, format="jsonl", name="j.jsonl")
    assert problems(error) == [(1, "grade"), (2, "reason"), (4, "query_id"), (5, "json")]
    assert not User.objects.filter(username__in=["a", "b", "c"]).exists()


def test_judgment_import_updates_changed_grades_and_logs_history(pool, rater, site_admin):
    import_judgments(pool, b"query,docid,rating\nq1,d1,1\n", format="csv", name="a.csv", rater=rater)
    summary = import_judgments(
        pool,
        b"query,docid,rating\nq1,d1,4\nq1,d2,2\n",
        format="csv",
        name="b.csv",
        rater=rater,
        actor=site_admin,
    )
    assert (summary.created, summary.updated, summary.unchanged) == (1, 1, 0)
    change = JudgmentChange.objects.get(action="changed")
    assert (change.old_grade, change.new_grade, change.changed_by) == (1, 4, site_admin)


# --- Combined grades and the exports built on them -------------------------------------------------


@pytest.mark.parametrize("rule", list(CombineRule))
def test_combined_grades_agree_with_scoring_for_every_rule(judged, rule, other_rater):
    from scoring.grades import pool_grades

    services.record_judgment(pair(judged, "q2", "d3"), User.objects.get(username="rita_rater"), grade=3)
    judged.combine_rule = rule
    judged.save()
    ours = combined_grades(judged)
    grades = pool_grades(judged)
    query_ids = dict(Query.objects.values_list("pk", "external_id"))
    doc_ids = dict(Document.objects.values_list("pk", "external_id"))
    theirs = {
        (query_ids[q], doc_ids[d]): g for q, d, g in zip(grades.query, grades.doc, grades.grade, strict=True)
    }
    assert ours == theirs
    assert ours[("q1", "d1")] == 2.0  # the final grade wins
    assert ("q1", "d2") not in ours  # can't judge only: no grade


def test_qrels_export_rounds_unless_exact(judged, other_rater):
    Pair.objects.filter(pool=judged).update(final_grade=None)
    assert lines(qrels_chunks(judged, rounding="exact")) == ["q1 0 d1 2", "q2 0 d3 0"]
    services.record_judgment(pair(judged, "q2", "d3"), User.objects.get(username="rita_rater"), grade=3)
    assert lines(qrels_chunks(judged, rounding="exact")) == ["q1 0 d1 2", "q2 0 d3 1.5"]
    assert lines(qrels_chunks(judged)) == ["q1 0 d1 2", "q2 0 d3 2"]
    assert qrels_filename(judged) == "robust.mean.qrels"


def test_qrels_export_streams_in_blocks(pool, rater):
    docs = "".join(f'{{"id": "doc{i}"}}\n' for i in range(6000))
    import_documents(pool, docs.encode(), name="docs")
    qrels = "".join(f"q1 0 doc{i} {i % 5}\n" for i in range(6000))
    import_qrels(pool, qrels.encode(), name="big.qrels", rater=rater)
    blocks = list(qrels_blocks(pool))
    # Blocks of at most 1,000 lines (pairs grouped by id / 1000), each ending a line.
    assert len(blocks) >= 6 and all(block.endswith(b"\n") and block.count(b"\n") <= 1000 for block in blocks)
    assert sorted(b"".join(blocks).decode().splitlines()) == sorted(qrels.splitlines())


def test_an_abandoned_qrels_stream_leaves_the_connection_usable(pool, rater, monkeypatch):
    from django.db import connection

    import_documents(pool, "".join(f'{{"id": "doc{i}"}}\n' for i in range(6000)).encode(), name="docs")
    import_qrels(pool, "".join(f"q1 0 doc{i} 1\n" for i in range(6000)).encode(), name="q", rater=rater)
    connection.ensure_connection()
    cancels = []  # a cancel request can land on the next statement: the stream drains instead
    monkeypatch.setattr(connection.connection, "_try_cancel", lambda *a, **k: cancels.append(a))
    stream = qrels_blocks(pool)
    next(stream)
    stream.close()
    assert cancels == []
    assert Query.objects.filter(pool=pool).count() == 2


def test_ids_with_control_characters_or_backslashes_in_trec_exports(pool, rater, run):
    Document.objects.filter(pool=pool, external_id="d1").update(external_id="d\\1")
    import_qrels(pool, b"q1 0 d\\1 2\n", name="q", rater=rater)
    assert lines(qrels_chunks(pool)) == ["q1 0 d\\1 2"]
    assert text(run_chunks(run)).splitlines()[0] == "q1 Q0 d\\1 1 3 bm25"
    Document.objects.filter(pool=pool, external_id="d\\1").update(external_id="d\x011")
    with pytest.raises(ExportError, match="control character"):
        text(qrels_chunks(pool))
    with pytest.raises(ExportError, match="control character"):
        text(run_chunks(run))


def test_ranklib_numbers_queries_and_says_how(judged):
    lines = text(ranklib_lines(judged)).splitlines()
    assert lines[0].startswith("# Combined grades of pool robust: rule mean")
    assert lines[1:4] == [
        "# qid:N numbers the queries in order of their ids:",
        "# qid:1 = q1",
        "# qid:2 = q2",
    ]
    assert lines[4:] == ["2 qid:1 # d1 query q1", "0 qid:2 # d3 query q2"]
    Query.objects.filter(pool=judged, external_id="q1").update(external_id="301")
    Query.objects.filter(pool=judged, external_id="q2").update(external_id="302")
    assert text(ranklib_lines(judged)).splitlines()[1:] == [
        "# qid:N is the query id.",
        "2 qid:301 # d1 query q1",
        "0 qid:302 # d3 query q2",
    ]


def test_quepid_and_rater_csv_exports(judged):
    assert text(judgments_csv_lines(judged)) == "query,docid,rating\nquery q1,d1,2\nquery q2,d3,0\n"
    assert text(judgments_csv_lines(judged, query_column="id")) == "query,docid,rating\nq1,d1,2\nq2,d3,0\n"
    assert (
        text(rater_csv_lines(judged))
        == "query_id,doc_id,ray_rater,rita_rater\nq1,d1,1,3\nq1,d2,,X\nq2,d3,0,\n"
    )


def test_queries_tsv_refuses_a_text_with_a_tab(pool):
    assert text(queries_lines(pool, "tsv")) == "q1\tquery q1\nq2\tquery q2\n"
    Query.objects.filter(external_id="q2").update(text="a\tb")
    with pytest.raises(ExportError, match="tab or line break"):
        queries_lines(pool, "tsv")
    assert json.loads(text(queries_lines(pool, "jsonl")).splitlines()[1])["text"] == "a\tb"


def test_run_export_uses_configuration_name_when_the_tag_is_unusable(run):
    run.tag = "has space"
    run.save()
    assert text(run_chunks(run)).splitlines()[0] == "q1 Q0 d1 1 3 bm25"


# --- Commands --------------------------------------------------------------------------------------


def test_import_and_export_commands(judged, tmp_path):
    out = io.StringIO()
    call_command("export_judgments", "--pool", "robust", "--format", "jsonl", stdout=out)
    path = tmp_path / "j.jsonl"
    path.write_text(out.getvalue())
    result, err = io.StringIO(), io.StringIO()
    call_command(
        "import_judgments",
        "--pool",
        "fresh",
        "--format",
        "jsonl",
        str(path),
        stdout=result,
        stderr=err,
    )
    assert "5 judgments read: 4 created, 1 updated" in result.getvalue()  # the result, on stdout
    assert err.getvalue() == "Created pool fresh\n"  # a diagnostic, on stderr
    assert Judgment.objects.filter(pair__pool__name="fresh").count() == 4

    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d1", "title": "changed"}\n')
    call_command("import_documents", "--pool", "robust", str(docs), stderr=io.StringIO())
    assert Document.objects.get(pool=judged, external_id="d1").title == "changed"

    for args, first in [
        (["export_qrels", "--pool", "robust"], "q1 0 d1 2"),
        (["export_qrels", "--pool", "robust", "--exact"], "q1 0 d1 2"),
        (["export_ranklib", "--pool", "robust"], "# Combined grades of pool robust"),
        (["export_queries", "--pool", "robust", "--format", "jsonl"], '{"id": "q1"'),
        (["export_documents", "--pool", "robust"], '{"id": "d1", "title": "changed"'),
        (
            ["export_judgments", "--pool", "robust", "--format", "csv", "--query-column", "id"],
            "query,docid,rating",
        ),
        (
            ["export_judgments", "--pool", "robust", "--format", "rater-csv"],
            "query_id,doc_id,ray_rater,rita_rater",
        ),
    ]:
        out, err = io.StringIO(), io.StringIO()
        call_command(*args, stdout=out, stderr=err)
        if args[0] == "export_qrels":  # lines in the database's order (qrels_blocks): any line may be first
            assert first in out.getvalue().splitlines(), args
        else:
            assert out.getvalue().startswith(first), args
        assert err.getvalue() == ""  # no progress bar when stderr is not a terminal


def test_export_run_command(run, configuration):
    out = io.StringIO()
    call_command("export_run", "--pool", "robust", "--configuration", "bm25", stdout=out)
    assert out.getvalue().splitlines() == [
        "q1 Q0 d1 1 3 bm25",
        "q1 Q0 d2 2 2 bm25",
        "q1 Q0 d3 3 1 bm25",
        "q2 Q0 d3 1 2 bm25",
        "q2 Q0 d1 2 1 bm25",
    ]
    with pytest.raises(CommandError, match="no configuration named 'nope'"):
        call_command("export_run", "--pool", "robust", "--configuration", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="No pool named"):
        call_command("export_qrels", "--pool", "nowhere", stdout=io.StringIO())


def test_import_command_reports_problems_and_writes_nothing(pool, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"query_id,doc_id,r1\nq1,d1,3\nq1,d2,9\n")
    with pytest.raises(CommandError) as error:
        call_command(
            "import_judgments", "--pool", "robust", "--format", "rater-csv", str(bad), stderr=io.StringIO()
        )
    assert f"{bad}:3: r1: grade of r1 must be 0-4" in str(error.value)
    assert not Judgment.objects.exists() and not User.objects.filter(username="r1").exists()
    with pytest.raises(CommandError, match="--rater is for --format csv"):
        call_command("import_judgments", "--pool", "robust", "--format", "jsonl", "--rater", "x", str(bad))


def test_an_admin_who_judged_and_adjudicated_a_pair_round_trips(judged, site_admin):
    services.record_judgment(pair(judged, "q1", "d1"), site_admin, grade=4)
    exported = text(judgments_jsonl_lines(judged))
    empty = Pool.objects.create(name="restored")
    import_judgments(empty, exported.encode(), format="jsonl", name="j.jsonl")
    assert text(judgments_jsonl_lines(empty)) == exported
    restored = Pair.objects.get(pool=empty, document__external_id="d1")
    assert (restored.final_grade, restored.final_by) == (2, site_admin)
    assert Judgment.objects.get(pair=restored, rater=site_admin).grade == 4


def test_import_and_export_commands_skip_system_checks_which_the_suite_runs():
    """Every import_*/export_* command is an ExchangeCommand (no system checks per run: they run in
    loops over files); the checks themselves pass here."""
    from django.core.management import get_commands, load_command_class

    from judgments.exchange.cli import ExchangeCommand

    names = [name for name in get_commands() if name.startswith(("import_", "export_"))]
    assert len(names) >= 12
    for name in names:
        command = load_command_class(get_commands()[name], name)
        assert isinstance(command, ExchangeCommand) and command.requires_system_checks == [], name
    call_command("check", fail_level="WARNING")

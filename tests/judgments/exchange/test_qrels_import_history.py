"""The qrels import's fast path (judgments/exchange/imports/qrels_table.py) and the statement-level judgment
history (migration 0004): every created or changed judgment leaves one history row with the right
actor, whoever writes it; an unchanged one leaves none; a bad file writes nothing."""

import numpy as np
import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from judgments import pool_keys, services
from judgments.exchange.formats import FormatError, parse_qrels
from judgments.exchange.imports import import_qrels
from judgments.exchange.imports.qrels_table import QrelsTable, read_common
from judgments.models import Document, Judgment, JudgmentChange, Pair, Query

QRELS = b"q1 0 d1 2\nq1 0 d2 0\nq7 0 d9 4\nq7 0 d1 1\n"


def _history():
    return sorted(
        JudgmentChange.objects.values_list(
            "pair__query__external_id",
            "pair__document__external_id",
            "action",
            "old_grade",
            "new_grade",
            "rater__username",
            "changed_by__username",
        )
    )


# --- History after a qrels import ---------------------------------------------------------------


def test_every_imported_judgment_has_one_created_row_by_the_actor(pool, rater, site_admin):
    summary = import_qrels(pool, QRELS, name="a.qrels", rater=rater, actor=site_admin)
    assert (summary.read, summary.created, summary.updated, summary.unchanged) == (4, 4, 0, 0)
    assert (summary.queries_created, summary.documents_created) == (1, 1)
    who = (rater.username, site_admin.username)
    assert _history() == [
        ("q1", "d1", "created", None, 2, *who),
        ("q1", "d2", "created", None, 0, *who),
        ("q7", "d1", "created", None, 1, *who),
        ("q7", "d9", "created", None, 4, *who),
    ]
    ids = set(Judgment.objects.values_list("pk", flat=True))
    assert set(JudgmentChange.objects.values_list("judgment_id_ref", flat=True)) == ids


def test_without_an_actor_the_file_account_is_recorded(pool):
    import_qrels(pool, QRELS, name="mine.qrels")
    assert set(JudgmentChange.objects.values_list("changed_by__username", flat=True)) == {"qrels:mine.qrels"}


def test_reimport_changing_one_grade_writes_exactly_one_history_row(pool, rater, site_admin):
    import_qrels(pool, QRELS, name="a.qrels", rater=rater)
    before = JudgmentChange.objects.count()
    summary = import_qrels(
        pool, QRELS.replace(b"d9 4", b"d9 3"), name="a.qrels", rater=rater, actor=site_admin
    )
    assert (summary.created, summary.updated, summary.unchanged) == (0, 1, 3)
    assert JudgmentChange.objects.count() == before + 1
    change = JudgmentChange.objects.latest("pk")
    assert (change.action, change.old_grade, change.new_grade) == ("changed", 4, 3)
    assert (change.rater, change.changed_by) == (rater, site_admin)
    # The same file again changes nothing and logs nothing.
    summary = import_qrels(pool, QRELS.replace(b"d9 4", b"d9 3"), name="a.qrels", rater=rater)
    assert (summary.created, summary.updated, summary.unchanged) == (0, 0, 4)
    assert JudgmentChange.objects.count() == before + 1


def test_reimport_over_a_cant_judge_changes_it_back_to_a_grade(pool, rater):
    import_qrels(pool, b"q1 0 d1 2\n", name="a.qrels", rater=rater)
    judgment = Judgment.objects.get()
    services.record_judgment(judgment.pair, rater, cant_judge=True, reason="broken page")
    summary = import_qrels(pool, b"q1 0 d1 2\n", name="a.qrels", rater=rater)
    assert summary.updated == 1
    assert list(
        JudgmentChange.objects.order_by("pk").values_list("action", "new_grade", "new_cant_judge")
    ) == [
        ("created", 2, False),
        ("changed", None, True),
        ("changed", 2, False),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (QRELS + b"q8 0 d8 5\n", "x.qrels:3005: grade: grade must be an integer 0-4"),
        (QRELS + b"q8 0 d8\n", "x.qrels:3005: line: expected 4 whitespace-separated fields"),
        (
            QRELS + b"q1 0 d2 3\n",
            "x.qrels:3005: docid: query q1 doc d2 is judged twice (lines 3002 and 3005)",
        ),
        (QRELS + b"q8 0 " + b"d" * 201 + b" 1\n", "x.qrels:3005: docid: doc id"),
    ],
)
def test_a_bad_line_in_a_large_plain_file_writes_nothing(pool, rater, data, message):
    data = b"".join(b"q%d 0 e%d %d\n" % (i % 50, i, i % 5) for i in range(3000)) + data
    with pytest.raises(FormatError) as error:
        import_qrels(pool, data, name="x.qrels", rater=rater)
    assert str(error.value).startswith(message)
    assert not Judgment.objects.exists() and not JudgmentChange.objects.exists()
    assert not Query.objects.filter(external_id="q8").exists()
    assert not Document.objects.filter(external_id__startswith="e").exists()


def test_a_failing_write_leaves_no_history(pool, rater):
    import_qrels(pool, b"q1 0 d1 2\n", name="a.qrels", rater=rater)
    with pytest.raises(RuntimeError):
        import_qrels(pool, b"q1 0 d1 3\nq1 0 d2 1\n", name="a.qrels", rater=rater, actor=_Broken())
    assert list(JudgmentChange.objects.values_list("action", flat=True)) == ["created"]
    assert Judgment.objects.get().grade == 2


class _Broken:
    @property
    def pk(self):
        raise RuntimeError("no actor")


def test_a_large_import_by_both_paths_stores_the_same(pool, rater, other_rater):
    lines = [b"q%d 0 doc%d %d" % (i % 40, i, (i * 7) % 5) for i in range(6000)]
    plain = b"\n".join(lines) + b"\n"
    other_shape = b"# comment\n" + b"\n".join(line.replace(b" ", b"\t") for line in lines)  # general parser
    assert read_common(plain) is not None and read_common(other_shape) is None
    first = import_qrels(pool, plain, name="a.qrels", rater=rater)
    second = import_qrels(pool, other_shape, name="b.qrels", rater=other_rater)
    assert (first.read, first.created, first.queries_created, first.documents_created) == (
        6000,
        6000,
        38,
        6000,
    )
    assert (second.read, second.created, second.queries_created, second.documents_created) == (
        6000,
        6000,
        0,
        0,
    )
    mine = dict(Judgment.objects.filter(rater=rater).values_list("pair_id", "grade"))
    theirs = dict(Judgment.objects.filter(rater=other_rater).values_list("pair_id", "grade"))
    assert mine == theirs and Pair.objects.filter(pool=pool).count() == 6000
    assert JudgmentChange.objects.filter(action="created").count() == 12000


def test_a_text_stream_goes_through_the_general_parser(pool, rater, tmp_path):
    path = tmp_path / "t.qrels"
    path.write_text("q1 0 d1 2\nq1 0 d2 3\n")
    with path.open() as handle:
        summary = import_qrels(pool, handle, name="t.qrels", rater=rater)
    assert (summary.read, summary.created) == (2, 2)


# --- The fast reader agrees with formats.parse_qrels ---------------------------------------------

_TOKENS = [
    "q1",
    "q2",
    "d1",
    "d2",
    "d3",
    "0",
    "Q0",
    "1",
    "4",
    "5",
    "00",
    "+1",
    "#x",
    "a#b",
    "\\",
    "é",
    "x" * 201,
]
_SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "\n", "\r\n", ""]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_TOKENS), st.sampled_from(_SEPARATORS)), min_size=1, max_size=24))
def test_read_common_reads_what_parse_qrels_reads(parts):
    data = "".join(token + separator for token, separator in parts).encode()
    table = read_common(data)
    if table is None:
        return
    general = QrelsTable.from_records(parse_qrels(data, "x"))  # raises if the fast reader took a bad file
    assert (table.query_ids, table.doc_ids) == (general.query_ids, general.doc_ids)
    for column in ("queries", "docs", "grades"):
        assert np.array_equal(getattr(table, column), getattr(general, column))


def test_read_common_takes_the_common_shape_only():
    assert read_common(b"q1 0 d1 2\nq1 0 d2 4") is not None  # no newline at the end
    for data in (
        b"",
        b"q1 0 d1 2\n\n",
        b"q1 0 d1 2 \n",
        b"q1 0 d1 7\n",
        b"#q1 0 d1 2\n",
        b"q1 0 d1 2\nq1 1 d1 3\n",
    ):
        assert read_common(data) is None, data


# --- Other writers still get their history -------------------------------------------------------


def test_orm_and_sql_writers_get_one_row_per_changed_judgment(pool, rater, other_rater, site_admin):
    pairs = [
        pool_keys.ensure_pairs(pool, [(q.pk, d.pk)])
        for q in Query.objects.all()
        for d in Document.objects.all()
    ]
    pair_ids = [pk for mapping in pairs for pk in mapping.values()]
    first = Pair.objects.get(pk=pair_ids[0])
    services.record_judgment(first, rater, grade=1)
    services.record_judgment(first, rater, grade=1)  # the same: no row
    services.record_judgment(first, rater, grade=3, actor=site_admin)
    services.record_judgment(first, rater, grade=3, note="a note")
    services.set_actor(site_admin)
    Judgment.objects.bulk_create([Judgment(pair_id=pk, rater=other_rater, grade=2) for pk in pair_ids])
    Judgment.objects.filter(rater=other_rater, pair_id__in=pair_ids[:2]).update(grade=4)
    Judgment.objects.filter(rater=other_rater, pair_id__in=pair_ids[2:]).update(grade=2)  # no change: no rows
    Judgment.objects.filter(rater=other_rater, pair_id=pair_ids[-1]).delete()
    with connection.cursor() as cursor:  # one statement inserting one judgment and changing another
        cursor.execute(
            """
            INSERT INTO judgments_judgment AS j
                (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note, created_at, updated_at)
            VALUES (%s, %s, 0, false, '', '', now(), now()), (%s, %s, 1, false, '', '', now(), now())
            ON CONFLICT (pair_id, rater_id) DO UPDATE SET grade = EXCLUDED.grade
            """,
            [pair_ids[1], rater.pk, pair_ids[0], other_rater.pk],
        )
    rows = list(
        JudgmentChange.objects.order_by("pk").values_list(
            "pair_id",
            "rater__username",
            "changed_by__username",
            "action",
            "old_grade",
            "new_grade",
            "new_note",
        )
    )
    r, o, a = rater.username, other_rater.username, site_admin.username
    assert rows[:-2] == [
        (pair_ids[0], r, r, "created", None, 1, ""),
        (pair_ids[0], r, a, "changed", 1, 3, ""),
        (pair_ids[0], r, r, "changed", 3, 3, "a note"),
        *[(pk, o, a, "created", None, 2, "") for pk in pair_ids],
        (pair_ids[0], o, a, "changed", 2, 4, ""),
        (pair_ids[1], o, a, "changed", 2, 4, ""),
        (pair_ids[-1], o, a, "deleted", 2, None, ""),
    ]
    assert set(rows[-2:]) == {
        (pair_ids[1], r, a, "created", None, 0, ""),
        (pair_ids[0], o, a, "changed", 4, 1, ""),
    }

"""Bulk imports (judgments.bulk): the history they write is the row-by-row path's, several imports into
one pool at once lose nothing, and a killed import leaves nothing behind."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from judgments import bulk, pool_keys, services
from judgments.exchange.imports import import_qrels
from judgments.models import Document, Judgment, JudgmentChange, Pair, Pool, Query, Ranking, Run

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")
# (query, document, grade) of a first file, then of a second one by the same rater: grades changed,
# kept, and new pairs (on a new query and document too).
FIRST = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 4), ("q2", "d1", 1)]
SECOND = [("q1", "d1", 3), ("q1", "d2", 0), ("q2", "d3", 1), ("q3", "d9", 4), ("q2", "d2", 2)]


def _qrels(lines) -> bytes:
    return "".join(f"{q} 0 {d} {g}\n" for q, d, g in lines).encode()


def _history(pool: Pool) -> list[tuple]:
    """The pool's judgment history without ids and times: who, what, from and to (sorted)."""
    return sorted(
        JudgmentChange.objects.filter(pair__pool=pool).values_list(
            "pair__query__external_id",
            "pair__document__external_id",
            "rater__username",
            "changed_by__username",
            "action",
            "old_grade",
            "new_grade",
            "old_cant_judge",
            "new_cant_judge",
            "old_note",
            "new_note",
        ),
        key=repr,
    )


@pytest.mark.parametrize("triggers_off", [True, False])
def test_a_bulk_import_writes_the_history_the_row_by_row_path_writes(
    rater, site_admin, monkeypatch, triggers_off
):
    monkeypatch.setattr(bulk, "_may_skip_row_triggers", lambda cursor: triggers_off)
    by_file = Pool.objects.create(name="by-file")
    by_row = Pool.objects.create(name="by-row")
    started = time.time()
    for lines in (FIRST, SECOND):
        import_qrels(by_file, _qrels(lines), name="x.qrels", rater=rater, actor=site_admin)
        with transaction.atomic():  # what the grading page does, one judgment at a time
            queries = pool_keys.ensure_queries(by_row, [q for q, _, _ in lines])
            docs = pool_keys.ensure_documents(by_row, [d for _, d, _ in lines])
            pairs = pool_keys.ensure_pairs(by_row, [(queries[q], docs[d]) for q, d, _ in lines])
            for q, d, g in lines:
                pair = Pair.objects.get(pk=pairs[(queries[q], docs[d])])
                services.record_judgment(pair, rater, grade=g, actor=site_admin)
    expected = _history(by_row)
    assert len(expected) == 4 + 2 + 2  # created, then changed (q1/d1, q2/d3) and created (2 new)
    assert _history(by_file) == expected
    times = JudgmentChange.objects.filter(pair__pool=by_file).values_list("changed_at", flat=True)
    assert all(started - 1 <= t.timestamp() <= time.time() + 1 for t in times)
    got = set(Judgment.objects.filter(pair__pool=by_file).values_list("pair__document__external_id", "grade"))
    assert ("d9", 4) in got and ("d1", 3) in got


def test_the_bulk_path_turns_the_row_triggers_off_on_the_test_database(pool, rater):
    # The test database's role is a superuser, as the embedded server's: the bulk path is the one tested.
    with connection.cursor() as cursor:
        assert bulk._may_skip_row_triggers(cursor)
    seen = []
    real = bulk.rows_checked_in_bulk

    def spy(cursor, references=()):
        context = real(cursor, references)
        seen.append(context)
        return context

    import judgments.exchange.imports.trec as trec

    trec.bulk.rows_checked_in_bulk, saved = spy, real
    try:
        import_qrels(pool, _qrels(FIRST), name="x.qrels", rater=rater)
    finally:
        trec.bulk.rows_checked_in_bulk = saved
    assert seen
    with connection.cursor() as cursor:  # set back to origin for the rest of the transaction
        cursor.execute("SHOW session_replication_role")
        assert cursor.fetchone()[0] == "origin"


def _setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s)", [name])
        return cursor.fetchone()[0]


def test_an_import_runs_with_more_work_mem_and_gives_the_transaction_its_own_back(pool, rater, monkeypatch):
    seen = []
    real = pool_keys.insert_pairs

    def spy(cursor, *args, **kwargs):
        seen.append(_setting("work_mem"))
        return real(cursor, *args, **kwargs)

    monkeypatch.setattr(pool_keys, "insert_pairs", spy)
    before = _setting("work_mem")
    assert before != bulk.WORK_MEM
    import_qrels(pool, _qrels(FIRST), name="x.qrels", rater=rater)  # in the test's transaction
    assert seen == [bulk.WORK_MEM]
    assert _setting("work_mem") == before
    with (
        transaction.atomic(),
        connection.cursor() as cursor,
        bulk.local_settings(cursor, enable_nestloop="off"),
    ):
        assert _setting("enable_nestloop") == "off"
    assert _setting("enable_nestloop") == "on"


def test_a_referenced_row_deleted_meanwhile_fails_like_a_foreign_key(pool):
    gone = Document.objects.create(pool=pool, external_id="gone")
    key = gone.pk
    gone.delete()
    with pytest.raises(IntegrityError, match="1 row"), transaction.atomic(), connection.cursor() as cursor:
        bulk.lock_referenced(
            cursor, "judgments_document", "SELECT unnest(%s::bigint[])", [[key, pool.documents.first().pk]]
        )


def _manage(env, *args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, MANAGE, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs
    )


def test_imports_into_one_pool_at_once_finish_and_lose_nothing(child_env, tmp_path, rater):
    """Three qrels files (overlapping queries and documents, new to the pool) and two runs naming them
    too, as five manage.py processes started together: no deadlock, every row there."""
    queries, docs = [f"q{i}" for i in range(40)], [f"d{i}" for i in range(300)]
    files = []
    for n in range(3):
        lines = [
            (q, d, (i + j + n) % 5) for i, q in enumerate(queries) for j, d in enumerate(docs[n * 50 :][:150])
        ]
        path = tmp_path / f"part{n}.qrels"
        path.write_bytes(_qrels(lines))
        files.append((path, len(lines)))
    runs = []
    for n in range(2):
        path = tmp_path / f"run{n}.run"
        path.write_text(
            "".join(
                f"{q} Q0 {d} {r + 1} {100 - r} run{n}\n"
                for q in queries
                for r, d in enumerate(reversed(docs) if n else docs)
                if r < 100
            )
        )
        runs.append(path)
    processes = [_manage(child_env, "import_qrels", "--pool", "shared", str(path)) for path, _ in files]
    processes += [
        _manage(child_env, "import_run", "--pool", "shared", "--configuration", f"c{n}", str(path))
        for n, path in enumerate(runs)
    ]
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()
    pool = Pool.objects.get(name="shared")
    assert Query.objects.filter(pool=pool).count() == 40
    assert Document.objects.filter(pool=pool).count() == 300
    for path, lines in files:
        assert Judgment.objects.filter(pair__pool=pool, rater__username=f"qrels:{path.name}").count() == lines
    assert Pair.objects.filter(pool=pool).count() == 40 * 250
    assert Run.objects.filter(configuration__pool=pool).count() == 2
    assert Ranking.objects.filter(run__configuration__pool=pool).count() == 80
    assert JudgmentChange.objects.filter(pair__pool=pool, action="created").count() == sum(
        n for _, n in files
    )


def test_an_import_killed_while_writing_leaves_nothing(child_env, tmp_path):
    path = tmp_path / "big.qrels"
    path.write_bytes(_qrels((f"q{i % 500}", f"d{i}", i % 5) for i in range(300_000)))
    process = _manage(child_env, "import_qrels", "--pool", "killed", str(path))
    try:
        deadline = time.monotonic() + 120
        with connection.cursor() as cursor:
            while time.monotonic() < deadline and process.poll() is None:
                cursor.execute(
                    "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
                    " AND query LIKE '%%INSERT INTO judgments_%%' AND state = 'active'"
                )
                if backend := cursor.fetchone():
                    break
                time.sleep(0.02)
        assert process.poll() is None, "the import ended before it was seen writing"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    with connection.cursor() as cursor:  # its server process ends with the statement it was running
        for _ in range(600):
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [backend[0]])
            if not cursor.fetchone()[0]:
                break
            time.sleep(0.2)
    assert not Pool.objects.filter(name="killed").exists()
    assert not Document.objects.filter(external_id="d299999").exists()
    assert not JudgmentChange.objects.filter(rater__username="qrels:big.qrels").exists()

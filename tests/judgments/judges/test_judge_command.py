"""`manage.py judge` against a real Chat Completions server on 127.0.0.1: the judge's account, the pairs it
is asked about, what is stored for each answer shape, the budget, clear errors, and a run killed with
SIGKILL and started again."""

import os
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

from judgments import services as judgment_services
from judgments.judges import services
from judgments.models import JudgeRun, Judgment, JudgmentChange, ModelJudge, Pair
from tests.database import database_url
from tests.judgments.judges.chat_server import FAST, KEY, completion, slow
from tests.judgments.judges.pools import asked, by_document, grade_of, make_pool

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(services, "RETRY", FAST)


def judge(chat_server, *extra, pool="judged", name="gpt-judge"):
    out = StringIO()
    base = ["--pool", pool, "--judge", name, "--base-url", chat_server.base_url, "--model", "test-model"]
    call_command("judge", *base, *extra, stdout=out, stderr=StringIO())
    return out.getvalue()


def stored(name="gpt-judge") -> dict[tuple[str, str], Judgment]:
    rows = Judgment.objects.filter(rater__username=name).select_related("pair__query", "pair__document")
    return {(j.pair.query.external_id, j.pair.document.external_id): j for j in rows}


def test_the_judge_grades_the_queued_pairs_as_ordinary_judgments(db, chat_server, rater):
    pool = make_pool(members=[rater])
    # Not waiting in the queue: a pair never queued, and one a human has graded (raters_per_pair = 1).
    Pair.objects.filter(query__external_id="q1", document__external_id="d1").update(queued_at=None)
    graded = Pair.objects.get(query__external_id="q1", document__external_id="d2")
    judgment_services.record_judgment(graded, rater, grade=4)
    chat_server.handler = by_document

    output = judge(chat_server)

    mine = stored()
    assert len(mine) == 18 and ("q1", "d1") not in mine and ("q1", "d2") not in mine
    assert all(j.grade == grade_of(doc) and j.note == f"doc {doc}" for (_, doc), j in mine.items())
    assert chat_server.calls == 18
    assert "18 grades given, 0 can't judge, 0 failed" in output and "18 calls, 270 tokens" in output
    # A rater account that cannot log in, with history like anyone's.
    user = ModelJudge.objects.get().user
    assert user.username == "gpt-judge" and not user.has_usable_password() and not user.is_active
    assert JudgmentChange.objects.filter(rater=user, action="created").count() == 18
    run = JudgeRun.objects.get()
    assert (run.status, run.total, run.done, run.graded, run.calls, run.tokens) == (
        "finished",
        18,
        18,
        18,
        18,
        270,
    )
    # The queue still waits for the humans: the model's grades do not count toward raters_per_pair.
    from judgments.rating import queue

    assert queue.open_pairs(pool).count() == 18
    # Run again: nothing is asked twice.
    again = judge(chat_server)
    assert chat_server.calls == 18 and "Nothing to judge" in again


def test_all_and_human_graded_choose_other_pairs(db, chat_server, rater):
    pool = make_pool(queries=2, documents=3)
    Pair.objects.filter(pool=pool, query__external_id="q2").update(queued_at=None)
    judgment_services.record_judgment(
        Pair.objects.get(query__external_id="q2", document__external_id="d3"), rater, grade=1
    )
    chat_server.handler = by_document

    judge(chat_server, "--human-graded")
    assert set(stored()) == {("q2", "d3")}
    judge(chat_server, "--all", "--limit", "2")
    assert len(stored()) == 3
    judge(chat_server, "--all")
    assert len(stored()) == 6 and chat_server.calls == 6


def test_answer_shapes_become_grades_or_cant_judge_with_the_raw_answer(db, chat_server):
    make_pool(queries=1, documents=5)
    answers = {
        "d1": '```json\n{"grade": 1, "reason": "fenced"}\n```',
        "d2": 'Sure! My grade: {"grade": "2", "reason": "prose"} Hope this helps.',
        "d3": "I'm sorry, but I can't help with rating this document.",
        "d4": '{"grade": 7, "reason": "off the scale"}',
        "d5": '{"grade": "Highly relevant", "reason": "by label"}',
    }
    chat_server.handler = lambda body: completion(answers[asked(body)[1]])

    output = judge(chat_server)

    mine = {doc: j for (_, doc), j in stored().items()}
    assert (mine["d1"].grade, mine["d1"].note) == (1, "fenced")
    assert (mine["d2"].grade, mine["d2"].note) == (2, "prose")
    assert (mine["d5"].grade, mine["d5"].note) == (3, "by label")
    assert mine["d3"].cant_judge and mine["d3"].cant_judge_reason == answers["d3"]
    assert mine["d3"].note == "no grade in the answer"
    assert mine["d4"].cant_judge and mine["d4"].cant_judge_reason == answers["d4"]
    assert "grade 7 is not one of 0, 1, 2, 3, 4" in mine["d4"].note
    assert "3 grades given, 2 can't judge" in output


def test_a_budget_stops_cleanly_and_a_rerun_continues(db, chat_server):
    make_pool(queries=2, documents=5)
    chat_server.handler = by_document

    output = judge(chat_server, "--max-calls", "4", "--concurrency", "2")

    assert chat_server.calls == 4 and len(stored()) == 4
    assert "4 grades given" in output and "Stopped at the budget: 4 of 4 calls." in output
    assert JudgeRun.objects.get().status == "budget"
    assert ModelJudge.objects.get().concurrency == 2
    judge(chat_server)
    assert chat_server.calls == 10 and len(stored()) == 10
    first_four = {tuple(asked(b)) for b in chat_server.bodies[:4]}
    assert not first_four & {tuple(asked(b)) for b in chat_server.bodies[4:]}


def test_a_token_budget_stops_too(db, chat_server):
    make_pool(queries=2, documents=5)
    chat_server.handler = lambda body: completion('{"grade": 1}', usage=(60, 40, 100))

    output = judge(chat_server, "--max-tokens", "250", "--concurrency", "1")

    assert chat_server.calls == 3 and "Stopped at the budget: 300 tokens used of 250." in output


def test_server_failures_store_nothing_and_are_asked_again(db, chat_server):
    make_pool(queries=1, documents=3)
    failing = {"d2"}

    def handler(body):
        doc = asked(body)[1]
        if doc in failing:
            return completion("", status=500)
        return by_document(body)

    chat_server.handler = handler
    output = judge(chat_server, "--concurrency", "1")
    assert set(doc for _, doc in stored()) == {"d1", "d3"}
    assert "2 grades given, 0 can't judge, 1 failed" in output
    failing.clear()
    judge(chat_server)
    assert len(stored()) == 3


def test_unknown_pool_is_a_clear_error(db, chat_server):
    with pytest.raises(CommandError, match="No pool named 'nope'"):
        judge(chat_server, pool="nope")


def test_a_missing_key_variable_fails_before_any_call(db, chat_server, monkeypatch):
    make_pool(queries=1, documents=2)
    monkeypatch.delenv("JUDGE_TEST_KEY", raising=False)
    with pytest.raises(CommandError, match="The environment variable JUDGE_TEST_KEY is not set"):
        judge(chat_server, "--api-key-env", "JUDGE_TEST_KEY")
    assert chat_server.calls == 0 and not stored()
    # The judge this command created is not kept: no judge, account or run is left behind.
    assert not ModelJudge.objects.exists() and not JudgeRun.objects.exists()
    assert not get_user_model().objects.filter(username="gpt-judge").exists()
    # The key is read from the variable and sent; it is stored and shown nowhere.
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)
    chat_server.handler = by_document
    judge(chat_server, "--api-key-env", "JUDGE_TEST_KEY")
    assert chat_server.headers[-1]["Authorization"] == f"Bearer {KEY}" and len(stored()) == 2
    judge_row = ModelJudge.objects.values().get()
    assert judge_row["api_key_env"] == "JUDGE_TEST_KEY" and KEY not in str(judge_row)
    assert KEY not in str(list(JudgeRun.objects.values()))


def test_an_unreachable_server_fails_after_its_retries(db, chat_server):
    make_pool(queries=1, documents=2)
    with pytest.raises(CommandError, match=r"could not reach http://127\.0\.0\.1:9/v1/chat/completions"):
        call_command(
            "judge", "--pool", "judged", "--judge", "gpt-judge", "--base-url", "http://127.0.0.1:9/v1",
            "--model", "m", stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
    assert not stored() and not ModelJudge.objects.exists() and not JudgeRun.objects.exists()


def test_a_failed_run_of_an_existing_judge_keeps_the_judge(db, chat_server):
    make_pool(queries=1, documents=2)
    chat_server.handler = by_document
    judge(chat_server, "--all", "--limit", "1")
    with pytest.raises(CommandError, match="could not reach") as failed:
        call_command(
            "judge", "--pool", "judged", "--judge", "gpt-judge", "--base-url", "http://127.0.0.1:9/v1",
            "--model", "m", "--all", stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
    assert "not kept" not in str(failed.value)
    assert ModelJudge.objects.count() == 1 and len(stored()) == 1


def test_a_persons_name_cannot_become_a_judge(db, chat_server, rater):
    make_pool(queries=1, documents=1)
    with pytest.raises(CommandError, match="rita_rater is a person's account"):
        judge(chat_server, name=rater.username)


def test_bad_settings_are_refused_and_nothing_is_created(db, chat_server):
    make_pool(queries=1, documents=1)
    with pytest.raises(CommandError, match="API key variable"):
        judge(chat_server, "--api-key-env", "sk-live-1234")  # a key pasted instead of a name
    assert not ModelJudge.objects.exists()


# --- A real process: exit codes, no traceback, killed and resumed ------------------------------------------


def _command(chat_server, *extra, pool="judged"):
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "DEBUG": "1",
        "PYTHONUNBUFFERED": "1",
    }
    args = [sys.executable, "manage.py", "judge", "--pool", pool, "--judge", "gpt-judge"]
    args += ["--base-url", chat_server.base_url, "--model", "test-model", *extra]
    return subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.django_db(transaction=True)
def test_exit_codes_and_one_line_errors_from_a_real_process(chat_server):
    make_pool(queries=1, documents=4)
    chat_server.handler = by_document

    budget = _command(chat_server, "--max-calls", "2", "--concurrency", "1")
    out, err = budget.communicate(timeout=60)
    assert budget.returncode == 0, err
    assert "2 grades given" in out and "Stopped at the budget" in out

    missing = _command(chat_server, "--api-key-env", "SURELY_UNSET_JUDGE_KEY")
    out, err = missing.communicate(timeout=60)
    assert missing.returncode == 1 and "Traceback" not in err
    assert "CommandError: The environment variable SURELY_UNSET_JUDGE_KEY is not set" in err

    unknown = _command(chat_server, pool="nope")
    out, err = unknown.communicate(timeout=60)
    assert unknown.returncode == 1 and err.strip().splitlines()[-1] == "CommandError: No pool named 'nope'"


@pytest.mark.django_db(transaction=True)
def test_a_judge_killed_mid_run_keeps_what_it_stored_and_a_rerun_asks_only_the_rest(chat_server):
    make_pool(queries=4, documents=10)  # 40 pairs
    # 0.25 s an answer, 2 at once: the 40 take 5 s, so the kill below lands mid-run even on a fast machine.
    chat_server.handler = slow(0.25, by_document)

    process = _command(chat_server, "--concurrency", "2")
    deadline = time.monotonic() + 60
    while chat_server.calls < 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert chat_server.calls >= 16
    time.sleep(1.2)  # at least one flush of the answers that arrived
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    kept = {key: j.grade for key, j in stored().items()}
    first_calls = chat_server.calls
    assert 0 < len(kept) < 40
    assert all(grade == grade_of(doc) for (_, doc), grade in kept.items())

    again = _command(chat_server, "--concurrency", "4")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err

    asked_again = [asked(b) for b in chat_server.bodies[first_calls:]]
    kept_texts = {(f"query{q[1:]}", doc) for q, doc in kept}
    assert not kept_texts & set(asked_again)  # nothing stored was asked again
    final = stored()
    assert len(final) == 40 and all(j.grade == grade_of(doc) for (_, doc), j in final.items())
    assert f"{40 - len(kept)} grades given" in out
    runs = list(JudgeRun.objects.order_by("pk").values_list("status", flat=True))
    assert runs == ["running", "finished"]  # the killed one never got to say it ended


@pytest.mark.django_db(transaction=True)
def test_sigterm_stops_the_run_cleanly_keeping_every_answer_that_arrived(chat_server):
    make_pool(queries=4, documents=10)
    chat_server.handler = slow(0.05, by_document)

    process = _command(chat_server, "--concurrency", "2")
    deadline = time.monotonic() + 60
    while chat_server.calls < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)

    assert process.returncode == 1 and "Traceback" not in err
    assert "CommandError: Interrupted; the answers that arrived are stored, run again to continue." in err
    run = JudgeRun.objects.get()
    kept = stored()
    assert run.status == "cancelled" and 0 < len(kept) < 40
    # Every answer that reached the command was stored; at most the calls in flight (2) were lost.
    assert len(kept) == run.graded and chat_server.calls - len(kept) <= 2
    assert f"{len(kept)} grades given" in out


def test_http_request_lines_only_at_verbosity_two_and_counts_in_words(db, chat_server, caplog):
    make_pool(queries=1, documents=2)
    chat_server.handler = by_document
    caplog.set_level("DEBUG")
    output = judge(chat_server, "--limit", "1")
    assert "1 grade given" in output and "1 call," in output and "(1 of 1 pair," in output
    assert not [r for r in caplog.records if r.getMessage().startswith("HTTP Request")]
    judge(chat_server, "--verbosity", "2")
    assert [r for r in caplog.records if r.getMessage().startswith("HTTP Request")]
    import logging

    assert logging.getLogger("httpx").getEffectiveLevel() == logging.WARNING  # as the settings leave it

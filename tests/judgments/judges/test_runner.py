"""Many pairs through a judge on a real HTTP server: outcomes per answer shape, usage summed, bounded
concurrency, budget and cancel mid-run, fatal errors, callbacks in the caller's thread, resuming."""

import functools
import re
import threading
import time

import pytest

from judgments.judges.answers import parse_answer
from judgments.judges.client import Budget
from judgments.judges.prompt import PairText, allowed_grades, build_messages
from judgments.judges.runner import CANT_JUDGE, FAILED, GRADED, Job, describe, judge_pairs
from tests.judgments.judges.chat_server import completion, error, user_text

ANSWERS = {  # query -> what the fake model says
    "json": ('{"grade": 3, "reason": "Lists the fares."}', (100, 10, 110)),
    "fenced": ('```json\n{"grade": 2, "reason": "Partly."}\n```', (90, 12, 102)),
    "prose": ('Sure! Here is my grade: {"grade": "4", "reason": "Exact."} Hope it helps.', (95, 20, 115)),
    "refusal": ("I'm sorry, but I can't help with that.", (80, 9, 89)),
    "too-high": ('{"grade": 7, "reason": "Amazing."}', (85, 8, 93)),
    "distractor": ('{"grade": -1, "reason": "Looks right, misleads."}', (88, 11, 99)),
}


def _query_of(body: dict) -> str:
    return re.search(r"## Query\n(.*)\n", user_text(body)).group(1)


def _model(body: dict):
    content, usage = ANSWERS[_query_of(body)]
    return completion(content, usage=usage)


def _jobs(queries, distractor=False):
    return [
        Job(query, build_messages(PairText(query=query, body="A document."), distractor=distractor))
        for query in queries
    ]


def _numbered(n):
    return _jobs([f"q{i}" for i in range(n)])


def _graded_by_number(body):
    return completion(f'{{"grade": {int(_query_of(body)[1:]) % 5}, "reason": "r"}}', usage=(20, 5, 25))


def test_each_answer_shape_becomes_the_right_outcome_and_usage_is_summed(chat_server):
    chat_server.handler = _model
    outcomes = {}
    with chat_server.client() as client:
        summary = judge_pairs(
            client, _jobs(ANSWERS), concurrency=3, on_result=lambda o: outcomes.__setitem__(o.key, o)
        )
    assert {k: (o.status, o.grade) for k, o in outcomes.items()} == {
        "json": (GRADED, 3),
        "fenced": (GRADED, 2),
        "prose": (GRADED, 4),
        "refusal": (CANT_JUDGE, None),
        "too-high": (CANT_JUDGE, None),
        "distractor": (CANT_JUDGE, None),  # -1 is not allowed: this pool has no distractor grade
    }
    assert outcomes["json"].reason == "Lists the fares."
    assert outcomes["refusal"].reason == "I'm sorry, but I can't help with that."
    assert outcomes["too-high"].problem == "grade 7 is not one of 0, 1, 2, 3, 4"
    assert outcomes["fenced"].usage.total_tokens == 102 and outcomes["fenced"].calls == 1
    assert (summary.graded, summary.cant_judge, summary.failed, summary.stopped) == (3, 3, 0, "")
    assert (summary.calls, summary.total) == (6, 6) and chat_server.calls == 6
    assert summary.prompt_tokens == sum(u[0] for _, u in ANSWERS.values())
    assert summary.completion_tokens == sum(u[1] for _, u in ANSWERS.values())
    assert summary.tokens == sum(u[2] for _, u in ANSWERS.values()) == 608
    assert describe(summary).startswith("3 graded, 3 can't judge, 0 failed, 6 calls, 608 tokens in ")


def test_a_pool_with_distractors_accepts_minus_one(chat_server):
    chat_server.handler = _model
    outcomes = []
    parse = functools.partial(parse_answer, allowed=allowed_grades(distractor=True))
    with chat_server.client() as client:
        judge_pairs(client, _jobs(["distractor"], distractor=True), parse=parse, on_result=outcomes.append)
    assert (outcomes[0].status, outcomes[0].grade) == (GRADED, -1)
    assert "-1 = Distractor" in user_text(chat_server.bodies[0])


def test_answers_without_usage_count_zero_and_are_reported(chat_server):
    chat_server.handler = lambda body: completion('{"grade": 1}', usage=None)
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(3))
    assert (summary.graded, summary.tokens, summary.calls_without_usage) == (3, 0, 3)
    assert "3 answers without token counts" in describe(summary)


def test_concurrency_is_bounded_and_used(chat_server):
    def handler(body):
        time.sleep(0.15)
        return _graded_by_number(body)

    chat_server.handler = handler
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(12), concurrency=3)
    assert summary.graded == 12
    assert chat_server.max_in_flight == 3


def test_callbacks_run_in_the_callers_thread_one_per_pair(chat_server):
    chat_server.handler = _graded_by_number
    threads, progress = set(), []
    with chat_server.client() as client:
        judge_pairs(
            client,
            _numbered(8),
            concurrency=4,
            on_result=lambda o: threads.add(threading.get_ident()),
            on_progress=progress.append,
        )
    assert threads == {threading.get_ident()}
    assert [p.done for p in progress] == list(range(1, 9))
    assert progress[-1].calls == 8 and progress[-1].tokens == 200 and progress[-1].total == 8


def test_budget_reached_mid_run_makes_no_call_past_it(chat_server):
    chat_server.handler = _graded_by_number
    stored = []
    budget = Budget(max_calls=5)
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(20), concurrency=3, budget=budget, on_result=stored.append)
    assert chat_server.calls == 5 and budget.calls == 5
    assert len(stored) == 5 and summary.graded == 5
    assert summary.stopped == "budget" and summary.message == "Stopped at the budget: 5 of 5 calls."


def test_token_budget_stops_once_the_tokens_are_used(chat_server):
    chat_server.handler = _graded_by_number  # 25 tokens an answer
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(20), concurrency=1, budget=Budget(max_tokens=100))
    assert (chat_server.calls, summary.graded, summary.tokens) == (4, 4, 100)
    assert summary.stopped == "budget" and "100 tokens used of 100" in summary.message


def test_jobs_are_pulled_lazily(chat_server):
    chat_server.handler = _graded_by_number
    pulled = []

    def jobs():
        for job in _numbered(100):
            pulled.append(job.key)
            yield job

    with chat_server.client() as client:
        judge_pairs(client, jobs(), concurrency=2, budget=Budget(max_calls=4))
    assert len(pulled) <= 4 + 2


def test_cancel_mid_run_keeps_every_answer_that_arrived(chat_server):
    def handler(body):
        time.sleep(0.05)
        return _graded_by_number(body)

    chat_server.handler = handler
    cancel = threading.Event()
    stored = []

    def store(outcome):
        stored.append(outcome.key)
        if len(stored) == 3:
            cancel.set()

    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(30), concurrency=3, cancel=cancel, on_result=store)
    assert summary.stopped == "cancelled"
    assert 3 <= len(stored) <= 3 + 2  # the calls in flight at the cancel finish and are kept
    assert len(stored) == chat_server.calls == summary.graded
    assert sorted(stored) == sorted(_query_of(b) for b in chat_server.bodies)


def test_cancel_from_another_thread_while_calls_are_in_flight(chat_server):
    def handler(body):
        time.sleep(0.3)
        return _graded_by_number(body)

    chat_server.handler = handler
    cancel = threading.Event()
    threading.Timer(0.45, cancel.set).start()
    stored = []
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(30), concurrency=2, cancel=cancel, on_result=stored.append)
    assert summary.stopped == "cancelled" and 2 <= len(stored) < 30
    assert len(stored) == chat_server.calls  # nothing answered was dropped


def test_cancel_during_retries_leaves_the_pair_unfinished(chat_server):
    chat_server.handler = lambda body: error(429, headers={"Retry-After": "3"})
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    stored = []
    started = time.monotonic()
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(5), concurrency=2, cancel=cancel, on_result=stored.append)
    assert time.monotonic() - started < 2
    assert stored == [] and summary.unfinished == 2 and summary.stopped == "cancelled"


def test_a_fatal_error_stops_the_run(chat_server):
    chat_server.handler = lambda body: error(401, "Invalid API key")
    stored = []
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(10), concurrency=1, on_result=stored.append)
    assert chat_server.calls == 1 and summary.failed == 1 and summary.stopped == "failed"
    assert stored[0].status == FAILED and "HTTP 401" in stored[0].problem
    assert summary.message.startswith("Stopped: HTTP 401 from http://127.0.0.1:")


def test_failures_in_a_row_stop_the_run_but_a_recovery_resets_the_count(chat_server):
    def handler(body):
        number = int(_query_of(body)[1:])
        return error(400, "bad") if number in (0, 1, 3, 4, 5, 6, 7, 8) else _graded_by_number(body)

    chat_server.handler = handler
    with chat_server.client() as client:
        summary = judge_pairs(client, _numbered(20), concurrency=1, max_consecutive_failures=3)
    assert (summary.failed, summary.graded, chat_server.calls) == (5, 1, 6)
    assert summary.message.startswith("Stopped after 3 failures in a row; last: HTTP 400")


def test_a_run_killed_mid_way_resumes_where_it_stopped(chat_server):
    chat_server.handler = _graded_by_number
    store = {}  # stands for the database

    def store_then_die(outcome):
        store[outcome.key] = outcome.grade
        if len(store) == 4:
            raise KeyboardInterrupt

    jobs = _numbered(10)
    with chat_server.client() as client:
        with pytest.raises(KeyboardInterrupt):
            judge_pairs(client, jobs, concurrency=2, on_result=store_then_die)
        kept = dict(store)
        assert len(kept) == 4
        remaining = [job for job in jobs if job.key not in store]  # what a re-run asks for
        summary = judge_pairs(
            client, remaining, concurrency=2, on_result=lambda o: store.update({o.key: o.grade})
        )
    assert summary.graded == 6 and summary.stopped == ""
    assert store == {f"q{i}": i % 5 for i in range(10)}
    assert all(store[key] == grade for key, grade in kept.items())
    asked = [_query_of(b) for b in chat_server.bodies]
    assert not set(kept) & set(asked[-6:])  # nothing stored was asked again


def test_concurrency_must_be_positive(chat_server):
    with chat_server.client() as client, pytest.raises(ValueError):
        judge_pairs(client, [], concurrency=0)

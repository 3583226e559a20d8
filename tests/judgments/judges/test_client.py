"""One Chat Completions call against a real HTTP server on 127.0.0.1: wire format, retries, Retry-After,
timeouts, budget, cancel, and an API key that never leaks."""

import logging
import socket
import threading
import time
from datetime import UTC, datetime

import pytest
from werkzeug import Response

from judgments.judges.client import (
    Budget,
    CallFailed,
    ChatClient,
    ConfigError,
    Endpoint,
    RetryPolicy,
    Stopped,
    Usage,
    retry_after_seconds,
)
from tests.judgments.judges.chat_server import FAST, KEY, completion, error, slow

MESSAGES = [{"role": "system", "content": "Grade."}, {"role": "user", "content": "q / d"}]


def _sequence(*responses):
    """A handler answering with each response in turn, then the last one forever."""
    queue = list(responses)
    lock = threading.Lock()

    def handler(body):
        with lock:
            item = queue.pop(0) if len(queue) > 1 else queue[0]
        return item if isinstance(item, Response) else item()

    return handler


def test_request_and_answer_follow_the_chat_completions_wire_format(chat_server):
    chat_server.handler = lambda body: completion('{"grade": 3, "reason": "Good."}', usage=(120, 12, 132))
    with chat_server.client(api_key_env="JUDGE_KEY", temperature=0.2, max_tokens=50) as client:
        reply = client.complete(MESSAGES)
    assert reply.content == '{"grade": 3, "reason": "Good."}'
    assert reply.usage == Usage(120, 12, 132) and reply.usage_reported
    assert reply.finish_reason == "stop" and reply.calls == 1
    (body,) = chat_server.bodies
    assert body == {
        "model": "test-model",
        "messages": MESSAGES,
        "temperature": 0.2,
        "max_tokens": 50,
        "stream": False,
    }
    assert "response_format" not in body
    assert chat_server.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_no_key_variable_means_no_authorization_header(chat_server):
    with chat_server.client() as client:
        client.complete(MESSAGES)
    assert "Authorization" not in chat_server.headers[0]


def test_a_named_but_unset_key_variable_is_a_clear_error():
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", api_key_env="MISSING_JUDGE_KEY")
    with pytest.raises(ConfigError, match="environment variable MISSING_JUDGE_KEY is not set"):
        ChatClient(endpoint, environ={})


def test_a_base_url_without_scheme_is_a_clear_error():
    with pytest.raises(ConfigError, match="must start with http"):
        ChatClient(Endpoint("127.0.0.1:11434/v1", "m"), environ={})


def test_missing_usage_counts_zero_and_is_noted(chat_server):
    chat_server.handler = lambda body: completion('{"grade": 1}', usage=None)
    budget = Budget()
    with chat_server.client() as client:
        reply = client.complete(MESSAGES, budget=budget)
    assert reply.usage == Usage(0, 0, 0) and not reply.usage_reported
    assert (budget.calls, budget.tokens, budget.calls_without_usage) == (1, 0, 1)


def test_usage_without_total_adds_prompt_and_completion(chat_server):
    chat_server.handler = lambda body: Response(
        '{"choices": [{"message": {"content": "3"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}',
        content_type="application/json",
    )
    with chat_server.client() as client:
        assert client.complete(MESSAGES).usage == Usage(7, 2, 9)


def test_a_null_content_with_a_refusal_returns_the_refusal_text(chat_server):
    chat_server.handler = lambda body: Response(
        '{"choices": [{"message": {"content": null, "refusal": "I cannot help."}}]}',
        content_type="application/json",
    )
    with chat_server.client() as client:
        assert client.complete(MESSAGES).content == "I cannot help."


def test_429_waits_as_long_as_retry_after_asks(chat_server):
    chat_server.handler = _sequence(error(429, "slow down", headers={"Retry-After": "1"}), completion("2"))
    started = time.monotonic()
    with chat_server.client() as client:
        reply = client.complete(MESSAGES)
    assert time.monotonic() - started >= 1.0
    assert reply.content == "2" and reply.calls == 2 and chat_server.calls == 2


def test_retry_after_ms_is_honoured_too(chat_server):
    headers = {"retry-after-ms": "300"}
    chat_server.handler = _sequence(error(429, headers=headers), error(503, headers=headers), completion("2"))
    started = time.monotonic()
    with chat_server.client() as client:
        assert client.complete(MESSAGES).calls == 3
    assert time.monotonic() - started >= 0.6


def test_a_retry_after_beyond_the_limit_fails_at_once(chat_server):
    chat_server.handler = lambda body: error(429, "quota", headers={"Retry-After": "3600"})
    started = time.monotonic()
    with chat_server.client() as client, pytest.raises(CallFailed, match="asks to wait 3600 s, more than"):
        client.complete(MESSAGES)
    assert time.monotonic() - started < 1 and chat_server.calls == 1


def test_500s_are_retried_then_succeed(chat_server):
    chat_server.handler = _sequence(error(500), error(502), completion('{"grade": 4}'))
    with chat_server.client() as client:
        reply = client.complete(MESSAGES)
    assert reply.calls == 3 and chat_server.calls == 3


def test_500_forever_gives_up_after_the_allowed_attempts(chat_server, caplog):
    chat_server.handler = lambda body: error(500, "boom")
    with chat_server.client() as client, pytest.raises(CallFailed) as failed:
        client.complete(MESSAGES)
    assert str(failed.value).startswith("gave up after 4 calls: HTTP 500 from http://127.0.0.1:")
    assert chat_server.calls == FAST.attempts and not failed.value.fatal
    assert len([r for r in caplog.records if "retrying" in r.getMessage()]) == 3


def test_a_timeout_is_retried_and_the_next_answer_used(chat_server):
    chat_server.handler = _sequence(lambda: slow(1.0, lambda b: completion("0"))({}), completion("3"))
    with chat_server.client(timeout=0.3) as client:
        reply = client.complete(MESSAGES)
    assert reply.content == "3" and reply.calls == 2


def test_timeouts_forever_fail_with_a_clear_message(chat_server):
    chat_server.handler = slow(1.0, lambda body: completion("0"))
    retry = RetryPolicy(attempts=2, backoff=0.01)
    with chat_server.client(retry=retry, timeout=0.2) as client, pytest.raises(CallFailed) as failed:
        client.complete(MESSAGES)
    assert str(failed.value) == "gave up after 2 calls: no answer within 0.2 s"


def test_an_unreachable_server_fails_as_fatal():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ChatClient(Endpoint(f"http://127.0.0.1:{port}/v1", "m"), retry=FAST, environ={})
    with client, pytest.raises(CallFailed, match=r"could not reach http://127.0.0.1:\d+/v1/chat/completions"):
        client.complete(MESSAGES)


def test_a_non_json_200_is_retried(chat_server):
    chat_server.handler = _sequence(Response("<html>proxy hiccup</html>"), completion("1"))
    with chat_server.client() as client:
        assert client.complete(MESSAGES).calls == 2


def test_a_json_answer_without_choices_fails_with_the_servers_message(chat_server):
    chat_server.handler = lambda body: Response('{"error": {"message": "model is loading"}}')
    with chat_server.client() as client, pytest.raises(CallFailed, match="no choices: model is loading"):
        client.complete(MESSAGES)
    assert chat_server.calls == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_and_not_found_errors_are_fatal_and_not_retried(chat_server, status):
    chat_server.handler = lambda body: error(status, "nope")
    with chat_server.client() as client, pytest.raises(CallFailed) as failed:
        client.complete(MESSAGES)
    assert failed.value.fatal and failed.value.status == status and chat_server.calls == 1
    assert ("ending in /v1" in str(failed.value)) == (status == 404)


def test_400_fails_this_call_only(chat_server):
    chat_server.handler = lambda body: error(400, "context too long")
    with (
        chat_server.client() as client,
        pytest.raises(CallFailed, match="HTTP 400.*context too long") as failed,
    ):
        client.complete(MESSAGES)
    assert not failed.value.fatal and chat_server.calls == 1


def test_the_key_never_appears_in_errors_logs_or_reprs(chat_server, caplog):
    caplog.set_level(logging.DEBUG)
    echo = f"Incorrect API key provided: {KEY}. Find your key at ..."
    chat_server.handler = _sequence(error(500, echo), error(401, echo))
    client = chat_server.client(api_key_env="JUDGE_KEY")
    with client, pytest.raises(CallFailed) as failed:
        client.complete(MESSAGES)
    assert chat_server.headers[0]["Authorization"] == f"Bearer {KEY}"  # it was sent...
    shown = [str(failed.value), repr(failed.value), repr(client), repr(client._key), caplog.text]
    assert all(KEY not in text for text in shown)  # ...and shown nowhere
    assert "Incorrect API key provided: ***" in str(failed.value)
    assert "$JUDGE_KEY" in repr(client)
    assert failed.value.__cause__ is None and failed.value.__context__ is None


def test_a_spent_budget_makes_no_call(chat_server):
    budget = Budget(max_calls=1)
    with chat_server.client() as client:
        client.complete(MESSAGES, budget=budget)
        with pytest.raises(Stopped) as stopped:
            client.complete(MESSAGES, budget=budget)
    assert stopped.value.reason == "budget" and chat_server.calls == 1 and budget.calls == 1


def test_retries_count_against_the_budget(chat_server):
    chat_server.handler = lambda body: error(503)
    budget = Budget(max_calls=2)
    with chat_server.client() as client, pytest.raises(Stopped, match="budget"):
        client.complete(MESSAGES, budget=budget)
    assert chat_server.calls == 2 and budget.calls == 2


def test_the_token_budget_closes_once_reached(chat_server):
    chat_server.handler = lambda body: completion("2", usage=(40, 10, 50))
    budget = Budget(max_tokens=100)
    with chat_server.client() as client:
        client.complete(MESSAGES, budget=budget)
        client.complete(MESSAGES, budget=budget)
        with pytest.raises(Stopped):
            client.complete(MESSAGES, budget=budget)
    assert (budget.calls, budget.tokens, budget.prompt_tokens, budget.reached) == (2, 100, 80, "tokens")


def test_cancel_during_a_backoff_stops_without_another_call(chat_server):
    cancel = threading.Event()

    def handler(
        body,
    ):  # the cancel comes 0.3 s after the first answer, during the 4 s wait, however slow the machine
        threading.Timer(0.3, cancel.set).start()
        return error(429, headers={"Retry-After": "4"})

    chat_server.handler = handler
    started = time.monotonic()
    with chat_server.client() as client, pytest.raises(Stopped, match="cancelled"):
        client.complete(MESSAGES, cancel=cancel)
    assert time.monotonic() - started < 3 and chat_server.calls == 1


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"Retry-After": "-3"}, 0.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),
        ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "nan"}, None),
        ({}, None),
    ],
)
def test_retry_after_values(headers, expected):
    now = datetime(2015, 10, 21, 7, 28, tzinfo=UTC)
    assert retry_after_seconds(headers, now=now) == expected

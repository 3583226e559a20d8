"""One Chat Completions call to an OpenAI-compatible server: retries, Retry-After, a budget, a secret key.

Works with OpenAI (``https://api.openai.com/v1``), Ollama (``http://127.0.0.1:11434/v1``), vLLM
(``http://host:8000/v1``) and llama.cpp's server (``http://host:8080/v1``): the same wire format.
The request is ``POST {base_url}/chat/completions`` with ``model``, ``messages``, ``temperature``,
``max_tokens``; the answer is ``choices[0].message.content`` and ``usage`` (``prompt_tokens``,
``completion_tokens``, ``total_tokens``; a server that sends none counts 0 and the reply says so).
``response_format`` is not sent (not every server supports it): the prompt asks for JSON.

Plain httpx rather than the ``openai`` package: the call is one POST, and the retry rules must be ours
(the budget checked before *every* attempt, a cancel honoured during waits, ``Retry-After`` obeyed and
capped), which the package's own retries would hide; it also insists on an API key that Ollama and
llama.cpp do not need. One :class:`ChatClient` is shared by the runner's threads (httpx's pool is
thread-safe).

Retries: timeouts, connection errors, 408/409/425/429 and 5xx, by the one outbound rule
(judgments.outbound.RetryPolicy: ``Retry-After`` or backoff with jitter, capped).
Other 4xx fail at once; 401, 403 and 404 are ``fatal`` (every call would fail the same way).

The API key comes from the environment variable whose *name* the endpoint holds. It is sent as a Bearer
token and nowhere else: reprs, log lines and error messages show ``***`` where a server echoed it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from judgments.outbound import RetryPolicy, retry_after_seconds

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
FATAL_STATUSES = frozenset({401, 403, 404})
SNIPPET_CHARS = 300


class JudgeError(Exception):
    """Anything that kept a call from giving an answer; the message is safe to show."""


class ConfigError(JudgeError):
    """The endpoint cannot work as set up (no key in the named variable, a bad URL)."""


class Stopped(JudgeError):
    """No further call was made: the budget is spent or the run was cancelled (``reason``)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class CallFailed(JudgeError):
    """The server gave no usable answer (after retries where they made sense)."""

    def __init__(self, message: str, *, status: int | None = None, fatal: bool = False):
        super().__init__(message)
        self.status = status
        self.fatal = fatal


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask; ``api_key_env`` is the NAME of the variable holding the key ("" for none)."""

    base_url: str
    model: str
    api_key_env: str = ""
    temperature: float = 0.0
    max_tokens: int = 400
    timeout: float = 60.0

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def display_url(self) -> str:
        """The URL without any user:password part, for messages."""
        return re.sub(r"//[^/@]*@", "//", self.url)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    content: str
    usage: Usage
    usage_reported: bool
    finish_reason: str
    calls: int  # HTTP requests this answer took, retries included


class Budget:
    """At most ``max_calls`` HTTP requests and ``max_tokens`` tokens for a run (None: no limit). Thread-safe.

    A call may start only while both are under their limit; it is counted when it starts, so the call
    limit is exact. Tokens are known only from answers: calls already in flight when the token limit is
    reached finish and are counted (at most the run's concurrency past it).
    """

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None):
        self.max_calls, self.max_tokens = max_calls, max_tokens
        self.calls = self.prompt_tokens = self.completion_tokens = self.tokens = 0
        self.calls_without_usage = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Budget(calls={self.calls}/{self.max_calls}, tokens={self.tokens}/{self.max_tokens})"

    @property
    def reached(self) -> str:
        """Which limit is reached ("calls", "tokens"), or "" while calls may still start."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return "calls"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return "tokens"
        return ""

    def start_call(self) -> bool:
        """Count one call if the budget allows it; False (nothing counted) when it does not."""
        with self._lock:
            if self.reached:
                return False
            self.calls += 1
            return True

    def add(self, usage: Usage, reported: bool = True) -> None:
        with self._lock:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.tokens += usage.total_tokens
            self.calls_without_usage += not reported


class _Secret:
    """The API key; its repr never shows it."""

    def __init__(self, value: str):
        self._value = value

    def __repr__(self) -> str:
        return "'***'" if self._value else "None"

    def reveal(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        return text.replace(self._value, "***") if self._value else text


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def read_reply(data: object, calls: int) -> Reply:
    """The answer's text and usage from a Chat Completions response body; CallFailed when it has none."""
    if not isinstance(data, dict):
        raise CallFailed("the server's answer is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        error = data.get("error")
        detail = f": {error.get('message', error) if isinstance(error, dict) else error}" if error else ""
        raise CallFailed(f"the server's answer has no choices{detail}"[:SNIPPET_CHARS])
    message = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
    content = message.get("content")
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str) or not content.strip():
        content = message.get("refusal") if isinstance(message.get("refusal"), str) else ""
    usage = data.get("usage")
    reported = isinstance(usage, dict) and any(
        _count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
    )
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    total = _count(usage.get("total_tokens")) or prompt + completion
    finish = choices[0].get("finish_reason")
    return Reply(
        content, Usage(prompt, completion, total), reported, finish if isinstance(finish, str) else "", calls
    )


class ChatClient:
    """Asks one endpoint; share one instance between threads, close it when done (or use ``with``)."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        retry: RetryPolicy | None = None,
        environ: Mapping[str, str] | None = None,
        max_connections: int = 8,
        transport: httpx.BaseTransport | None = None,
    ):
        if not endpoint.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"The base URL must start with http:// or https:// (got {endpoint.base_url!r})."
            )
        environ = os.environ if environ is None else environ
        key = ""
        if endpoint.api_key_env:
            key = environ.get(endpoint.api_key_env, "")
            if not key:
                raise ConfigError(
                    f"The environment variable {endpoint.api_key_env} is not set; it should hold the "
                    f"API key for {endpoint.display_url}."
                )
        self.endpoint = endpoint
        self.retry = retry or RetryPolicy()
        self._key = _Secret(key)
        self._http = httpx.Client(
            timeout=httpx.Timeout(endpoint.timeout),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
            follow_redirects=False,
        )

    def __repr__(self) -> str:
        key = f"key from ${self.endpoint.api_key_env}" if self.endpoint.api_key_env else "no key"
        return f"<ChatClient {self.endpoint.display_url} model={self.endpoint.model!r} {key}>"

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key.reveal():
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers

    def _snippet(self, response: httpx.Response) -> str:
        text = " ".join(response.text.split())
        return self._key.scrub(text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else ""))

    def complete(self, messages: list[dict], *, budget: Budget | None = None, cancel=None) -> Reply:
        """The model's answer to ``messages``. Raises Stopped (no call made: budget or cancel),
        CallFailed (with a safe message), never an httpx error. ``cancel``: a threading.Event."""
        endpoint, url = self.endpoint, self.endpoint.url
        body = {
            "model": endpoint.model,
            "messages": messages,
            "temperature": endpoint.temperature,
            "max_tokens": endpoint.max_tokens,
            "stream": False,
        }
        for attempt in range(1, self.retry.attempts + 1):
            if cancel is not None and cancel.is_set():
                raise Stopped("cancelled")
            if budget is not None and not budget.start_call():
                raise Stopped("budget")
            retry_after, fatal = None, False
            try:
                response = self._http.post(url, json=body, headers=self._headers())
            except httpx.TimeoutException:
                problem = f"no answer within {endpoint.timeout:g} s"
            except httpx.TransportError as error:
                problem = f"could not reach {endpoint.display_url} ({type(error).__name__})"
                fatal = isinstance(error, httpx.ConnectError)
            else:
                status = response.status_code
                if 200 <= status < 300:
                    try:
                        data = response.json()
                    except ValueError:
                        problem = f"HTTP {status} but not JSON: {self._snippet(response)}"
                    else:
                        try:
                            reply = read_reply(data, attempt)
                        except CallFailed as error:
                            raise CallFailed(self._key.scrub(str(error)), status=status) from None
                        if budget is not None:
                            budget.add(reply.usage, reply.usage_reported)
                        return reply
                else:
                    problem = f"HTTP {status} from {endpoint.display_url}: {self._snippet(response)}"
                    if status not in RETRY_STATUSES:
                        if status == 404:
                            problem += " (is the base URL right, usually ending in /v1, and the model name?)"
                        raise CallFailed(problem, status=status, fatal=status in FATAL_STATUSES)
                    retry_after = retry_after_seconds(response.headers)
            if attempt == self.retry.attempts:
                raise CallFailed(f"gave up after {attempt} calls: {problem}", fatal=fatal)
            if self.retry.asks_too_long(retry_after):
                raise CallFailed(
                    f"{problem}; the server asks to wait {retry_after:g} s, more than the "
                    f"{self.retry.max_retry_after:g} s allowed"
                )
            delay = self.retry.delay(attempt, retry_after)
            log.warning(
                "%s; retrying in %.1f s (call %d of %d)", problem, delay, attempt, self.retry.attempts
            )
            if cancel is not None:
                if cancel.wait(delay):
                    raise Stopped("cancelled")
            else:
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

"""A real Chat Completions server on 127.0.0.1 (pytest-httpserver, one thread per request) and helpers.

The fixture ``chat_server`` (exported by this folder's conftest) answers ``POST /v1/chat/completions`` with whatever handler a test installs; a
handler gets the request's JSON body and returns a werkzeug Response (see ``completion``).
"""

import json
import threading
import time

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from judgments.judges.client import ChatClient, Endpoint, RetryPolicy

PATH = "/v1/chat/completions"
KEY = "sk-test-0123456789abcdefSECRET"
FAST = RetryPolicy(attempts=4, backoff=0.01, max_backoff=0.05, max_retry_after=5)


def completion(content, usage=(10, 5, 15), finish_reason="stop", status=200, headers=None) -> Response:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        ],
    }
    if usage is not None:
        body["usage"] = dict(zip(("prompt_tokens", "completion_tokens", "total_tokens"), usage, strict=True))
    return Response(json.dumps(body), status=status, headers=headers, content_type="application/json")


def error(status: int, message: str = "error", headers=None) -> Response:
    body = json.dumps({"error": {"message": message, "type": "server_error"}})
    return Response(body, status=status, headers=headers, content_type="application/json")


def user_text(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


class ChatServer:
    """The server plus what it saw: ``bodies`` (JSON requests, in arrival order), ``headers``, and the
    most requests it ever handled at once."""

    def __init__(self, server: HTTPServer):
        self.server = server
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0
        self.handler = lambda body: completion('{"grade": 2, "reason": "ok"}')

    @property
    def base_url(self) -> str:
        return self.server.url_for("/v1")

    @property
    def calls(self) -> int:
        return len(self.bodies)

    def endpoint(self, **options) -> Endpoint:
        return Endpoint(base_url=self.base_url, model="test-model", **options)

    def client(self, retry=FAST, **options) -> ChatClient:
        return ChatClient(self.endpoint(**options), retry=retry, environ={"JUDGE_KEY": KEY})

    def _dispatch(self, request: Request) -> Response:
        body = json.loads(request.get_data())
        with self.lock:
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self.handler(body)
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture(scope="session")
def _http_server():
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)  # stopping one takes 0.5 s: one per session
    server.start()
    yield server
    if server.is_running():
        server.stop()


@pytest.fixture
def chat_server(_http_server):
    chat = ChatServer(_http_server)
    _http_server.clear()
    _http_server.expect_request(PATH, method="POST").respond_with_handler(chat._dispatch)
    yield chat
    _http_server.clear()


def slow(seconds: float, response_factory):
    """A handler that waits, then answers (a model taking its time)."""

    def handler(body):
        time.sleep(seconds)
        return response_factory(body)

    return handler

"""Send a pool's queries to a search endpoint and collect each query's top hits. No Django.

`capture(spec, queries, depth)` asks the engine once per query with bounded concurrency and returns,
per query, its hits or a failure carrying the engine's own words. It never raises for anything the
engine does (refused connections, timeouts, 429, 500, HTML error pages, malformed JSON, odd hits); it
raises only for a caller's mistake (bad arguments) or an unusable definition (`EndpointError`, e.g. the
secret's environment variable is unset), before sending anything.

Why threads and not asyncio: callers are synchronous (a management command, the task worker, a view),
the Django ORM is synchronous, and the concurrency is small (8 by default, tens at most). A few worker
threads, each with its own keep-alive connection, spend their time in socket calls
that release the GIL, so they are as fast as an event loop here, work from any context (no "event loop
already running" inside Playwright-driven tests or async views), and the progress callback runs in the
caller's own thread (where its database connection lives): workers hand results to the caller's thread
through a queue.

Why the standard library's http.client and not httpx: against a fast local engine the client's CPU time
per request decides whether the engine or we are the bottleneck (tests/bench/bench_capture.py), and on a
small machine the engine and we share the CPU. Measured per request (a 6 kB answer, keep-alive, one
thread): http.client 0.16 ms; urllib3 0.24 ms through a bare connection, 0.29-0.36 through its pool;
httpcore 0.26 ms through a bare connection, 0.32 through its pool; httpx.Client 0.58 ms. So each worker
thread keeps one keep-alive `http.client` connection of its own (no pool, no lock), with what the
capture needs of a client around it (`_Origin`): TLS verified against certifi's bundle (as httpx does),
the environment's HTTP proxy (CONNECT tunnel for https, absolute URLs for http), IDNA host names and
percent-encoded URLs, one transparent re-send when a kept-alive connection turns out closed by the
engine, and errors named after the phase that failed.

Retries: connection errors, timeouts, 408, 429 and 5xx (not 501/505) are retried up to `retries` times
by the one outbound rule (judgments.outbound: backoff with jitter, or a `Retry-After`, capped at
`max_retry_after`); a `Retry-After` also pauses every worker.
`cancel` (a threading.Event) stops the capture: no new request starts, waits end at once, and
`capture` returns `cancelled=True` without waiting for requests in flight (they end within `timeout`,
their answers dropped). Secrets are scrubbed from every message. `progress` is called at most every
`progress_interval` seconds as results arrive, and with a positive interval also while none arrives (a
heartbeat: the caller can store it, and check its own cancel flag, even while the engine stalls);
`on_result` with each query's result as it arrives (both in the caller's thread).
"""

from __future__ import annotations

import base64
import functools
import http.client
import os
import platform
import queue
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import certifi

from judgments.endpoints.answers import EngineError, Explanation, read_explanations
from judgments.endpoints.engines import EndpointError, EndpointSpec
from judgments.endpoints.templates import TemplateError
from judgments.outbound import RetryPolicy, retry_after_seconds

DEFAULT_DEPTH = 100
DEFAULT_CONCURRENCY = 8
USER_AGENT = f"judgment-lists-capture (Python/{platform.python_version()} http.client)"


@dataclass(slots=True)
class QueryResult:
    """One query's outcome: `hits` [(doc id, score or None)] in engine order, or `error`."""

    query_id: str
    hits: list[tuple[str, float | None]] | None = None
    error: str | None = None
    duplicates: list[str] = field(default_factory=list)
    total: int | None = None
    total_relation: str | None = None
    attempts: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


class Progress(NamedTuple):
    done: int
    total: int
    failures: int
    elapsed: float

    @property
    def rate(self) -> float:
        """Queries per second so far."""
        return self.done / self.elapsed if self.elapsed > 0 else 0.0


@dataclass(slots=True)
class CaptureResult:
    """Every finished query's result in the order the queries were given (a cancelled capture holds
    only those that finished)."""

    results: list[QueryResult]
    total: int
    cancelled: bool = False
    elapsed: float = 0.0

    @property
    def failures(self) -> list[QueryResult]:
        return [r for r in self.results if not r.ok]

    @property
    def ok(self) -> bool:
        """Every query answered with hits (zero hits counts as an answer)."""
        return not self.cancelled and len(self.results) == self.total and not self.failures


def _transport_error(exc: Exception, phase: str, timeout: float) -> EngineError:
    """A failure of the connection (not of the engine's answer) as a query's error, named after the
    `phase` it happened in; retryable, but for a certificate that fails verification."""
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError
        return EngineError(f"timed out after {timeout:g} s {phase}", retryable=True)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return EngineError(f"could not connect to the engine: TLS certificate rejected: {exc.verify_message}")
    if isinstance(exc, _ProxyRefused):
        return EngineError(f"the proxy refused the request: {exc}", retryable=True)
    if phase == "connecting" and isinstance(exc, OSError):
        return EngineError(f"could not connect to the engine: {exc}", retryable=True)
    if isinstance(exc, http.client.HTTPException | OSError):
        return EngineError(f"the connection broke while {phase}: {exc or type(exc).__name__}", retryable=True)
    return EngineError(f"unexpected failure: {type(exc).__name__}: {exc}")


class _ProxyRefused(OSError):
    """The proxy answered the CONNECT of an https tunnel with an error."""


def _ascii_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path?query) of `url` ready for the wire: the host IDNA-encoded, the path
    and query percent-encoded where they hold what a request line cannot (spaces, non-ASCII); escapes
    written already are kept."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise EndpointError(f"the host name {host!r} cannot be written in ASCII (IDNA): {exc}") from None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    safe = "/%:@!$&'()*+,;=?~-._"
    target = urllib.parse.quote(parts.path or "/", safe=safe)
    if parts.query:
        target += "?" + urllib.parse.quote(parts.query, safe=safe)
    return parts.scheme, host, port, target


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """Certificates and host names verified against certifi's bundle, or the trust store that
    SSL_CERT_FILE / SSL_CERT_DIR name (a private CA; httpx, which the judges use, honours them too);
    made once (loading the bundle takes milliseconds, and try-a-query captures one query at a time)."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if cafile or capath:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    return ssl.create_default_context(cafile=certifi.where())


class _Origin:
    """How to reach the endpoint's origin: directly or through the environment's HTTP proxy, TLS
    verified. `connect()` opens a connection (one per worker thread); `target()` is the request target
    for a URL (absolute through a plain-HTTP proxy, else the path and query)."""

    def __init__(self, url: str, timeout: float):
        self.scheme, self.host, self.port, _ = _ascii_url(url)
        self.timeout = timeout
        default = 443 if self.scheme == "https" else 80
        netloc_host = f"[{self.host}]" if ":" in self.host else self.host
        self.netloc = netloc_host if self.port == default else f"{netloc_host}:{self.port}"
        self.context = _tls_context() if self.scheme == "https" else None
        self.proxy: tuple[str, int] | None = None
        self.proxy_headers: dict[str, str] = {}
        proxy = None
        if not urllib.request.proxy_bypass(self.host):
            proxy = urllib.request.getproxies().get(self.scheme)
        if proxy:
            if "://" not in proxy:
                proxy = "http://" + proxy
            parts = urllib.parse.urlsplit(proxy)
            if parts.scheme != "http" or not parts.hostname:
                raise EndpointError(
                    f"the environment's {self.scheme} proxy {parts.scheme}://{parts.hostname} is not an "
                    "http:// proxy (the only kind a capture goes through)"
                )
            self.proxy = (parts.hostname, parts.port or 80)
            if parts.username is not None:
                user = urllib.parse.unquote(parts.username)
                password = urllib.parse.unquote(parts.password or "")
                token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
                self.proxy_headers["Proxy-Authorization"] = f"Basic {token}"

    def connect(self) -> http.client.HTTPConnection:
        if self.proxy is None:
            host, port = self.host, self.port
        else:
            host, port = self.proxy
        if self.scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self.context)
            if self.proxy is not None:
                conn.set_tunnel(self.host, self.port, headers=self.proxy_headers)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            if self.proxy is not None and "Tunnel connection failed" in str(exc):
                raise _ProxyRefused(str(exc)) from None
            raise
        # Nagle's algorithm would hold a body written apart from its headers back until the engine
        # acknowledged them.
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def target(self, url: str) -> str:
        if self.proxy is not None and self.scheme == "http":
            return f"http://{self.netloc}{_ascii_url(url)[3]}"
        return _ascii_url(url)[3]


class _Answer(NamedTuple):
    status: int
    reason: str
    headers: dict[str, str]  # names lower-cased
    content: bytes


def _decoded(content: bytes, encoding: str) -> bytes:
    """The body without a Content-Encoding we did not ask for (gzip or deflate); others are left as is."""
    encoding = encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompress(content, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        try:
            return zlib.decompress(content)
        except zlib.error:
            return zlib.decompress(content, -zlib.MAX_WBITS)
    return content


class _Run:
    """One capture's shared state: the request loop every worker thread runs."""

    def __init__(
        self, spec, headers, origin, cancel, depth, timeout, retries, backoff, max_backoff, max_retry_after
    ):
        self.spec, self.origin, self.cancel = spec, origin, cancel
        self.depth, self.timeout = depth, timeout
        # Headers prepared once: Host (from the URL), ours, the endpoint's (names as given, values latin-1).
        prepared = {"host": ("Host", origin.netloc), "user-agent": ("User-Agent", USER_AGENT)}
        prepared.update({"accept-encoding": ("Accept-Encoding", "identity")})
        if origin.proxy is not None and origin.scheme == "http":
            prepared.update({n.lower(): (n, v) for n, v in origin.proxy_headers.items()})
        prepared.update({name.lower(): (name, value) for name, value in headers.items()})
        self.headers = dict(prepared.values())
        self.targets: dict[str, str] = {}  # request targets of URLs that do not change per query
        self.local = threading.local()  # each worker thread's own keep-alive connection
        self.retry = RetryPolicy(retries + 1, backoff, max_backoff, max_retry_after)
        self.stop = threading.Event()  # set by the caller's thread when the capture ends or is cancelled
        self.pause_until = 0.0  # a Retry-After pauses every worker, not only the one that got it
        self.secrets = spec.secrets()

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def ask(self, query_id: str, text: str, fields=None) -> QueryResult | None:
        """The query's result after retries; None if the capture was stopped meanwhile. A query lacking a
        field the template uses fails at once, naming the query (nothing is sent)."""
        started = time.monotonic()
        try:
            method, url, body = self.spec.build_request(text, query_id, self.depth, fields)
        except TemplateError as exc:
            return self._failed(query_id, str(exc), 0, started)
        attempt = 0
        while True:
            attempt += 1
            pause = self.pause_until - time.monotonic()
            if (pause > 0 and self.stop.wait(pause)) or self.stopping():
                return None
            retry_after = response = None
            try:
                response = self.send(method, url, body)
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
                got = self.spec.parse(
                    response.status,
                    response.reason,
                    response.headers.get("content-type", ""),
                    response.content,
                    self.depth,
                )
                seconds = time.monotonic() - started
                return QueryResult(
                    query_id, got.hits, None, got.duplicates, got.total, got.total_relation, attempt, seconds
                )
            except EngineError as exc:
                error = exc
                if response is not None and 300 <= response.status < 400 and "location" in response.headers:
                    error = EngineError(f"{exc.message} (redirected to {response.headers['location']})")
            except Exception as exc:  # every other failure becomes this query's error, never a traceback
                error = EngineError(f"unexpected failure: {type(exc).__name__}: {exc}")
            if not error.retryable or attempt >= self.retry.attempts:
                return self._failed(query_id, error.message, attempt, started)
            if self.retry.asks_too_long(retry_after):
                limit = self.retry.max_retry_after
                wait = f"the engine asks to wait {retry_after:.0f} s (more than the {limit:g} s allowed)"
                return self._failed(query_id, f"{error.message}; {wait}", attempt, started)
            delay = self.retry.delay(attempt, retry_after)
            if retry_after is not None:  # the engine is overloaded: every worker pauses, not only this one
                self.pause_until = max(self.pause_until, time.monotonic() + delay)
            if self.stop.wait(delay) or self.stopping():
                return None

    def stopping(self) -> bool:
        return self.stop.is_set() or self.cancel.is_set()

    def send(self, method: str, url: str, body: bytes | None) -> _Answer:
        """One request on this thread's connection; EngineError (retryable or not) if the connection
        fails. A kept-alive connection the engine closed meanwhile is replaced and the request sent again
        once (a search has no side effect), not counted as an attempt."""
        target = self.targets.get(url)
        if target is None:
            target = self.origin.target(url)
            if body is not None:  # a JSON or form body: the same URL for every query
                self.targets[url] = target
        for fresh in (False, True):
            conn = getattr(self.local, "conn", None)
            reused = conn is not None
            phase = "connecting"
            try:
                if conn is None:
                    conn = self.local.conn = self.origin.connect()
                phase = "sending the request"
                conn.request(method, target, body, self.headers)
                phase = "waiting for the answer"
                response = conn.getresponse()
                content = response.read()
            except Exception as exc:
                self.hang_up()
                stale = isinstance(
                    exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError
                )
                if reused and not fresh and stale:
                    continue
                raise _transport_error(exc, phase, self.timeout) from None
            if response.will_close:
                self.hang_up()
            fields = {name.lower(): value for name, value in response.getheaders()}
            if "content-encoding" in fields:
                content = _decoded(content, fields["content-encoding"])
            return _Answer(response.status, response.reason, fields, content)
        raise AssertionError("unreachable")

    def hang_up(self) -> None:
        """Close this thread's connection, if it has one."""
        conn = getattr(self.local, "conn", None)
        self.local.conn = None
        if conn is not None:
            conn.close()

    def _failed(self, query_id: str, message: str, attempts: int, started: float) -> QueryResult:
        if attempts > 1:
            message += f" (after {attempts} attempts)"
        return QueryResult(
            query_id, error=self.scrub(message), attempts=attempts, seconds=time.monotonic() - started
        )

    def work(self, todo: queue.SimpleQueue, done: queue.SimpleQueue) -> None:
        try:
            self._work(todo, done)
        finally:
            self.hang_up()

    def _work(self, todo: queue.SimpleQueue, done: queue.SimpleQueue) -> None:
        while not self.stopping():
            try:
                index, query_id, text, fields = todo.get_nowait()
            except queue.Empty:
                return
            try:
                result = self.ask(query_id, text, fields)
            except Exception as exc:  # a bug here must not leave the caller waiting for this query
                result = self._failed(
                    query_id, f"unexpected failure: {type(exc).__name__}: {exc}", 1, time.monotonic()
                )
            if result is None:
                return
            done.put((index, result))


def capture(
    spec: EndpointSpec,
    queries: Sequence[tuple],
    depth: int = DEFAULT_DEPTH,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = 10.0,
    retries: int = 3,
    backoff: float = 0.5,
    max_backoff: float = 10.0,
    max_retry_after: float = 60.0,
    cancel: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
    progress_interval: float = 0.25,
    on_result: Callable[[QueryResult], None] | None = None,
) -> CaptureResult:
    """Ask `spec` every (query_id, text) or (query_id, text, fields) of `queries` for its top `depth`
    hits. See the module doc."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a whole number of at least 1, not {depth!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of at least 1, not {concurrency!r}")
    if not timeout > 0 or retries < 0:
        raise ValueError("timeout must be positive and retries at least 0")
    ids = [item[0] for item in queries]
    if len(set(ids)) != len(ids):
        raise ValueError("query ids repeat: each query is asked once")
    headers = spec.request_headers()  # EndpointError (unset secret variable) before any request
    started = time.monotonic()
    total = len(queries)
    cancel = cancel or threading.Event()

    def report(done: int, failures: int) -> None:
        if progress is not None:
            progress(Progress(done, total, failures, time.monotonic() - started))

    workers_n = max(1, min(concurrency, total))
    origin = _Origin(spec.url, timeout)  # EndpointError (an unusable proxy) before any request
    run = _Run(spec, headers, origin, cancel, depth, timeout, retries, backoff, max_backoff, max_retry_after)
    todo: queue.SimpleQueue = queue.SimpleQueue()
    finished: queue.SimpleQueue = queue.SimpleQueue()
    for index, (query_id, text, *fields) in enumerate(queries):
        todo.put((index, query_id, text, fields[0] if fields else None))
    workers = [
        threading.Thread(target=run.work, args=(todo, finished), name=f"capture-{i}", daemon=True)
        for i in range(workers_n)
    ]
    for worker in workers:
        worker.start()
    results: list[QueryResult | None] = [None] * total
    done = failures = 0
    last_report = started
    try:
        while done < total and not cancel.is_set():
            try:
                index, result = finished.get(timeout=0.05)
            except queue.Empty:
                if not any(w.is_alive() for w in workers) and finished.empty():
                    break  # cannot happen unless a worker died outside its guard; do not wait forever
                if progress_interval > 0 and time.monotonic() - last_report >= progress_interval:
                    report(done, failures)  # a heartbeat while every worker waits (slow engine, Retry-After)
                    last_report = time.monotonic()
                continue
            results[index] = result
            if on_result is not None:
                on_result(result)
            done += 1
            failures += not result.ok
            if progress is not None and time.monotonic() - last_report >= progress_interval:
                report(done, failures)
                last_report = time.monotonic()
    finally:
        run.stop.set()  # workers close their connections as they stop (in flight: within `timeout`)
    report(done, failures)
    kept = [r for r in results if r is not None]
    return CaptureResult(
        kept, total, cancelled=cancel.is_set() and done < total, elapsed=time.monotonic() - started
    )


@dataclass(slots=True)
class Probe:
    """One query asked once: its hits (with the engine's explanations when asked) or its error."""

    hits: list[tuple[str, float | None]] | None = None
    error: str | None = None
    total: int | None = None
    seconds: float = 0.0
    explanations: dict[str, Explanation] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


def probe(
    spec: EndpointSpec,
    text: str,
    query_id: str = "test",
    depth: int = 10,
    *,
    fields: Mapping[str, Any] | None = None,
    timeout: float = 10.0,
    explain: bool = False,
) -> Probe:
    """Ask `spec` one query once, no retry (a person is waiting): the endpoint form's Test and try a
    query. A failure is the engine's own words or the phase that failed (connecting, sending the
    request, waiting for the answer), secrets scrubbed. EndpointError for an unusable definition."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a whole number of at least 1, not {depth!r}")
    headers = spec.request_headers()
    origin = _Origin(spec.url, timeout)
    run = _Run(spec, headers, origin, threading.Event(), depth, timeout, 0, 0.0, 0.0, 0.0)
    started = time.monotonic()
    try:
        method, url, body = spec.build_request(text, query_id, depth, fields, explain=explain)
        answer = run.send(method, url, body)
        got = spec.parse(
            answer.status, answer.reason, answer.headers.get("content-type", ""), answer.content, depth
        )
    except EngineError as exc:
        return Probe(error=run.scrub(exc.message), seconds=time.monotonic() - started)
    except TemplateError as exc:  # e.g. a query without a field the template uses
        return Probe(error=run.scrub(str(exc)), seconds=time.monotonic() - started)
    except Exception as exc:  # as in a capture: the page shows it, never a traceback
        return Probe(
            error=run.scrub(f"unexpected failure: {type(exc).__name__}: {exc}"),
            seconds=time.monotonic() - started,
        )
    finally:
        run.hang_up()
    explanations = read_explanations(spec.kind, answer.content) if explain else {}
    return Probe(got.hits, None, got.total, time.monotonic() - started, explanations)

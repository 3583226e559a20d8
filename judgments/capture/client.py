"""Send a pool's queries to a search endpoint and collect each query's top hits. No Django.

`capture(spec, queries, depth)` asks the engine once per query with bounded concurrency and returns,
per query, its hits or a failure carrying the engine's own words. It never raises for anything the
engine does (refused connections, timeouts, 429, 500, HTML error pages, malformed JSON, odd hits); it
raises only for a caller's mistake (bad arguments) or an unusable definition (`EndpointError`, e.g. the
secret's environment variable is unset), before sending anything.

Why threads and not asyncio: callers are synchronous (a management command, the task worker, a view),
the Django ORM is synchronous, and the concurrency is small (8 by default, tens at most). A few worker
threads sharing one httpx transport (thread-safe, one keep-alive pool) spend their time in socket calls
that release the GIL, so they are as fast as an event loop here, work from any context (no "event loop
already running" inside Playwright-driven tests or async views), and the progress callback runs in the
caller's own thread (where its database connection lives): workers hand results to the caller's thread
through a queue.

Why httpx's connection pool (httpcore) and not `httpx.Client`: against a fast local engine the client's
CPU time per request decides whether the engine or we are the bottleneck (tests/bench/bench_capture.py).
`httpx.Client` costs ~0.5 ms a request in its layers (cookies, URL merging, redirects, auth), and even
`httpx.HTTPTransport.handle_request` ~0.25 ms more than the pool beneath it (its Request and Response
models, header normalisation, stream wrappers). So `httpx.HTTPTransport` is built as usual (keep-alive
limits, TLS verification, the environment's proxy, TCP_NODELAY) and requests go straight to its pool as
`httpcore.Request`s with headers prepared once; httpcore's exceptions are mapped here.

Retries: connection errors, timeouts, 408, 429 and 5xx (not 501/505) are retried up to `retries` times
with exponential backoff and jitter; a `Retry-After` (seconds or an HTTP date) replaces the backoff and
pauses every worker, and one longer than `max_retry_after` fails the query at once rather than waiting.
`cancel` (a threading.Event) stops the capture: no new request starts, waits end at once, and
`capture` returns `cancelled=True` without waiting for requests in flight (they end within `timeout`,
their answers dropped). Secrets are scrubbed from every message. `progress` is called at most every
`progress_interval` seconds as results arrive, and with a positive interval also while none arrives (a
heartbeat: the caller can store it, and check its own cancel flag, even while the engine stalls).
"""

from __future__ import annotations

import email.utils
import math
import queue
import random
import socket
import threading
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

import httpcore
import httpx

from .answers import EngineError
from .engines import EndpointSpec

DEFAULT_DEPTH = 100
DEFAULT_CONCURRENCY = 8
USER_AGENT = f"judgment-lists-capture (httpx/{httpx.__version__})"


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


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header in seconds from now: delay-seconds or an HTTP date; None if absent or bad."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _transport_error(exc: Exception, timeout: float) -> EngineError:
    """httpcore's (or httpx's) exception as a query's error, retryable where trying again may help."""
    if isinstance(exc, httpcore.TimeoutException | httpx.TimeoutException):
        phase = {
            "ConnectTimeout": "connecting",
            "ReadTimeout": "waiting for the answer",
            "WriteTimeout": "sending the request",
            "PoolTimeout": "waiting for a free connection",
        }.get(type(exc).__name__, "")
        return EngineError(f"timed out after {timeout:g} s {phase}".rstrip(), retryable=True)
    if isinstance(exc, httpcore.ConnectError | httpx.ConnectError):
        return EngineError(f"could not connect to the engine: {exc}", retryable=True)
    if isinstance(
        exc, httpcore.ReadError | httpcore.WriteError | httpcore.RemoteProtocolError | httpx.TransportError
    ):
        return EngineError(f"the connection broke: {exc or type(exc).__name__}", retryable=True)
    if isinstance(exc, httpcore.ProxyError):
        return EngineError(f"the proxy refused the request: {exc}", retryable=True)
    if isinstance(exc, httpcore.NetworkError | httpcore.ProtocolError | httpx.HTTPError):
        return EngineError(f"the request failed: {type(exc).__name__}: {exc}")
    return EngineError(f"unexpected failure: {type(exc).__name__}: {exc}")


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
        self, spec, headers, transport, cancel, depth, timeout, retries, backoff, max_backoff, max_retry_after
    ):
        self.spec, self.pool, self.cancel = spec, transport._pool, cancel
        self.depth, self.timeout = depth, timeout
        # Headers as httpcore wants them, prepared once: Host (from the URL), ours, the endpoint's.
        url = httpx.URL(spec.url)
        prepared = {"host": ("Host", url.netloc.decode("ascii")), "user-agent": ("User-Agent", USER_AGENT)}
        prepared.update({"accept-encoding": ("Accept-Encoding", "identity")})
        prepared.update({name.lower(): (name, value) for name, value in headers.items()})
        self.headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in prepared.values()]
        self.extensions = {"timeout": httpx.Timeout(timeout).as_dict()}
        self.urls: dict[str, httpcore.URL] = {}  # parsed once when the URL does not change per query
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.max_retry_after = max_retry_after
        self.stop = threading.Event()  # set by the caller's thread when the capture ends or is cancelled
        self.pause_until = 0.0  # a Retry-After pauses every worker, not only the one that got it
        self.secrets = spec.secrets()

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def ask(self, query_id: str, text: str) -> QueryResult | None:
        """The query's result after retries; None if the capture was stopped meanwhile."""
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            pause = self.pause_until - time.monotonic()
            if (pause > 0 and self.stop.wait(pause)) or self.stopping():
                return None
            retry_after = response = None
            try:
                method, url, body = self.spec.build_request(text, query_id, self.depth)
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
                error = _transport_error(exc, self.timeout)
            if not error.retryable or attempt > self.retries:
                return self._failed(query_id, error.message, attempt, started)
            if retry_after is not None and retry_after > self.max_retry_after:
                wait = f"the engine asks to wait {retry_after:.0f} s (more than the {self.max_retry_after:g} s allowed)"
                return self._failed(query_id, f"{error.message}; {wait}", attempt, started)
            if retry_after is not None:
                delay = retry_after
                self.pause_until = max(self.pause_until, time.monotonic() + delay)
            else:
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                delay *= 0.5 + random.random() / 2  # jitter: workers that failed together retry apart
            if self.stop.wait(delay) or self.stopping():
                return None

    def stopping(self) -> bool:
        return self.stop.is_set() or self.cancel.is_set()

    def send(self, method: str, url: str, body: bytes | None) -> _Answer:
        parsed = self.urls.get(url)
        if parsed is None:
            parsed = httpcore.URL(str(httpx.URL(url)))  # httpx's URL: percent-encoding, IDNA
            if body is not None:  # a JSON body: the same URL for every query
                self.urls[url] = parsed
        headers = self.headers
        if body is not None:
            headers = [*headers, (b"Content-Length", str(len(body)).encode("ascii"))]
        request = httpcore.Request(
            method.encode("ascii"), parsed, headers=headers, content=body, extensions=self.extensions
        )
        response = self.pool.handle_request(request)
        try:
            content = response.read()
        finally:
            response.close()
        fields = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in response.headers}
        if "content-encoding" in fields:
            content = _decoded(content, fields["content-encoding"])
        reason = response.extensions.get("reason_phrase", b"").decode("latin-1")
        return _Answer(response.status, reason, fields, content)

    def _failed(self, query_id: str, message: str, attempts: int, started: float) -> QueryResult:
        if attempts > 1:
            message += f" (after {attempts} attempts)"
        return QueryResult(
            query_id, error=self.scrub(message), attempts=attempts, seconds=time.monotonic() - started
        )

    def work(self, todo: queue.SimpleQueue, done: queue.SimpleQueue) -> None:
        while not self.stopping():
            try:
                index, query_id, text = todo.get_nowait()
            except queue.Empty:
                return
            try:
                result = self.ask(query_id, text)
            except Exception as exc:  # a bug here must not leave the caller waiting for this query
                result = self._failed(
                    query_id, f"unexpected failure: {type(exc).__name__}: {exc}", 1, time.monotonic()
                )
            if result is None:
                return
            done.put((index, result))


def capture(
    spec: EndpointSpec,
    queries: Sequence[tuple[str, str]],
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
) -> CaptureResult:
    """Ask `spec` every (query_id, text) of `queries` for its top `depth` hits. See the module doc."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a whole number of at least 1, not {depth!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of at least 1, not {concurrency!r}")
    if not timeout > 0 or retries < 0:
        raise ValueError("timeout must be positive and retries at least 0")
    ids = [query_id for query_id, _ in queries]
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
    transport = _transport(spec.url, workers_n)
    run = _Run(
        spec, headers, transport, cancel, depth, timeout, retries, backoff, max_backoff, max_retry_after
    )
    todo: queue.SimpleQueue = queue.SimpleQueue()
    finished: queue.SimpleQueue = queue.SimpleQueue()
    for index, (query_id, text) in enumerate(queries):
        todo.put((index, query_id, text))
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
            done += 1
            failures += not result.ok
            if progress is not None and time.monotonic() - last_report >= progress_interval:
                report(done, failures)
                last_report = time.monotonic()
    finally:
        run.stop.set()
        _close_when_idle(transport, workers)
    report(done, failures)
    kept = [r for r in results if r is not None]
    return CaptureResult(
        kept, total, cancelled=cancel.is_set() and done < total, elapsed=time.monotonic() - started
    )


def _transport(url: str, connections: int) -> httpx.HTTPTransport:
    """A keep-alive pool of `connections`, through the proxy the environment names for `url` if any.
    TCP_NODELAY: httpcore writes a request's headers and body apart, and Nagle's algorithm would hold
    the body back until the engine acknowledged the headers."""
    parts = urllib.parse.urlsplit(url)
    proxy = None
    if not urllib.request.proxy_bypass(parts.hostname or ""):
        proxy = urllib.request.getproxies().get(parts.scheme)
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    return httpx.HTTPTransport(limits=limits, proxy=proxy, socket_options=nodelay)


def _close_when_idle(client: httpx.HTTPTransport, workers: list[threading.Thread]) -> None:
    """Close the transport now if no request is in flight, else once the last one ends (in the background:
    a cancelled capture returns without waiting for its requests)."""
    if not any(w.is_alive() for w in workers):
        client.close()
        return

    def closer():
        for w in workers:
            w.join()
        client.close()

    threading.Thread(target=closer, name="capture-close", daemon=True).start()

"""Work a request does once its response is sent: `defer(fn)`, and the middleware that runs it.

A rater's grade is rescored (and the pool's stability re-measured) right after the grade commits
(scoring.receivers), about half of a submit's statements. None of it changes the page the rater gets
back (the next pair and the progress bar), so inside a request it runs after the response is sent: the
server calls the response's close() once the body is out (WSGI), and Django's test client does the same
before returning, so tests see the work done. Outside a request (commands, the task worker, services
called directly) `defer` runs the function at once. The task committed with the grade still covers a
process that dies before the work is done (scoring.receivers).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

_pending: contextvars.ContextVar[list[Callable[[], object]] | None] = contextvars.ContextVar(
    "after_response", default=None
)


def defer(fn: Callable[[], object]) -> None:
    """Run `fn` after the current request's response is sent; at once outside a request."""
    pending = _pending.get()
    if pending is None:
        fn()
    else:
        pending.append(fn)


def _run(pending: list[Callable[[], object]]) -> None:
    for fn in pending:
        try:
            fn()
        except Exception:  # the response is gone: log, and let the next one run
            logger.exception("work deferred after a response failed")
    pending.clear()


class AfterResponseMiddleware:
    """First in MIDDLEWARE: collects what `defer` is given while the request runs, and hands it to the
    response's closers (HttpResponseBase.close runs them, then sends request_finished)."""

    def __init__(self, get_response: Callable):
        self.get_response = get_response

    def __call__(self, request):
        pending: list[Callable[[], object]] = []
        token = _pending.set(pending)
        try:
            response = self.get_response(request)
        finally:
            _pending.reset(token)
        if pending:
            response._resource_closers.append(lambda: _run(pending))
        return response

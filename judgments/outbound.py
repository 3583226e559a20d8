"""The one retry rule for outbound HTTP: the capture client (http.client, to search engines) and the model
judges' client (httpx, to Chat Completions servers) both follow it. No Django imports.

A failed attempt that may succeed later waits what the server asks (`Retry-After` in seconds or as an
HTTP date, or `retry-after-ms`), else an exponential backoff (`backoff`, doubling, at most `max_backoff`)
with jitter, so workers that failed together retry apart. A server asking for longer than
`max_retry_after` fails the call at once rather than stalling it. `attempts` counts every call, the first
one included. Which answers are worth another attempt is each protocol's business (its client says).
"""

from __future__ import annotations

import email.utils
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # calls per request, the first one included
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_backoff: float = 30.0
    max_retry_after: float = 120.0  # a server asking longer fails the call

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return retry_after
        return min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)

    def asks_too_long(self, retry_after: float | None) -> bool:
        """The server asks to wait longer than this policy waits: fail the call now."""
        return retry_after is not None and retry_after > self.max_retry_after


def retry_after_seconds(headers: Mapping[str, str] | str | None, now: datetime | None = None) -> float | None:
    """Seconds a response asks to wait, from its headers (``retry-after-ms``, else ``Retry-After``) or
    from one Retry-After value: delay-seconds or an HTTP date, never negative; None if absent or bad."""
    if headers is None or isinstance(headers, str):
        headers = {"retry-after": headers or ""}
    headers = {str(k).lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = (headers.get(name) or "").strip()
        if not value:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            seconds = (when - (now or datetime.now(UTC))).total_seconds()
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None

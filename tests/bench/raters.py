"""Raters grading through a running server over HTTP, as the grading page's script does: log in, ask for the
next pair (the `X-Rating-Fragment` answer), think, post a grade, get the next pair in the same answer.

Used by the `make run` load test (tests/judgments/rating/test_make_run_load.py) and by bench_grading. No Django
here: the caller checks what the database holds against what the server acknowledged.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import secrets
import ssl
import threading
import time
from dataclasses import dataclass, field

import httpx

FRAGMENT = {"X-Rating-Fragment": "1"}
PAIR = re.compile(r'data-pair="(\d+)"')
LEFT = re.compile(r"<strong>(\d+)</strong> left")
# One TLS context for every client: httpx builds (and loads the CA certificates into) one per client
# otherwise, 27 ms each, 5 s for the load test's 192 connections before a single request.
_TLS = ssl.create_default_context()


@dataclass
class Load:
    """What the raters saw. `acknowledged`: (username, pair id, grade) the server said it saved."""

    acknowledged: list[tuple[str, int, int]] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)  # POST of a grade -> its answer (next pair)
    page_ms: list[float] = field(default_factory=list)  # GET of the next pair
    refused: list[str] = field(default_factory=list)  # 200 answers that did not save (queue rules)
    errors: list[str] = field(default_factory=list)  # anything but a 200, or no answer at all
    requests: int = 0
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, attribute: str, value) -> None:
        with self.lock:
            getattr(self, attribute).append(value)


def log_in(base: str, username: str, password: str, timeout: float = 60) -> httpx.Client:
    """An httpx client holding a session of `username`, logged in through the login page."""
    client = httpx.Client(base_url=base, timeout=timeout, verify=_TLS)
    page = client.get("/accounts/login/")
    page.raise_for_status()
    answer = client.post(
        "/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"]},
        headers={"Referer": f"{base}/accounts/login/"},
    )
    if answer.status_code != 302:
        raise RuntimeError(f"{username} could not log in: HTTP {answer.status_code}")
    return client


def with_session(base: str, session_key: str, timeout: float = 60) -> httpx.Client:
    """An httpx client holding an existing session (e.g. from Django's test Client's force_login): no
    password hashing in the measurement. Its CSRF cookie is one of its own, as a browser's would be."""
    client = httpx.Client(base_url=base, timeout=timeout, verify=_TLS)
    host = httpx.URL(base).host  # the domain the server's own cookies get: one csrftoken, not two
    client.cookies.set("sessionid", session_key, domain=host)
    client.cookies.set("csrftoken", secrets.token_hex(16), domain=host)  # 32 characters: a valid secret
    return client


def browser_like(client: httpx.Client, connections: int) -> list[httpx.Client]:
    """`connections` clients sharing `client`'s session, each keeping its own connection open: a browser
    keeps several keep-alive connections to a site, and grading requests go over any of them."""
    others = [
        httpx.Client(base_url=client.base_url, cookies=client.cookies, timeout=client.timeout, verify=_TLS)
        for _ in range(connections - 1)
    ]
    return [client, *others]


def grade_concurrently(
    clients: dict[str, list[httpx.Client]],
    pool: str,
    *,
    think: tuple[float, float] = (0.0, 0.0),
    seconds: float | None = None,
    idle_limit: float = 30.0,
    seed: int = 0,
) -> Load:
    """Every rater grades in its own thread until the pool has nothing left for them (or `seconds` pass),
    sending their requests over their clients in turn. Think time: uniform in `think` seconds between
    receiving a pair and posting its grade."""
    load = Load()
    start = threading.Barrier(len(clients), timeout=120)
    grade_url = f"/pools/{pool}/grade/"

    def timed(kind: str, send) -> httpx.Response | None:
        began = time.perf_counter()
        try:
            response = send()
        except httpx.HTTPError as error:
            load.add("errors", f"{kind}: {error!r}")
            return None
        finally:
            with load.lock:
                load.requests += 1
        load.add("submit_ms" if kind == "POST" else "page_ms", (time.perf_counter() - began) * 1000)
        if response.status_code != 200:
            load.add("errors", f"{kind} {response.request.url.path}: HTTP {response.status_code}")
            return None
        return response

    def rater(username: str, connections: list[httpx.Client], rng: random.Random) -> None:
        turns = itertools.cycle(connections)
        client = connections[0]
        try:
            start.wait()
            began = time.monotonic()
            idle_since = None
            html = ""
            response = timed("GET", lambda: next(turns).get(grade_url, headers=FRAGMENT))
            while True:
                if seconds is not None and time.monotonic() - began > seconds:
                    return
                html = response.text if response is not None else ""
                found = PAIR.search(html)
                if found is None:
                    left = LEFT.search(html)
                    if response is not None and (left is None or int(left.group(1)) == 0):
                        return  # nothing left for this rater
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > idle_limit:
                        return  # the rest stays held by others
                    time.sleep(0.2)  # the rest is held by others right now (or the request failed)
                    response = timed("GET", lambda: next(turns).get(grade_url, headers=FRAGMENT))
                    continue
                idle_since = None
                pair_id = int(found.group(1))
                time.sleep(rng.uniform(*think))
                grade = rng.randint(0, 4)
                response = timed(
                    "POST",
                    lambda pair_id=pair_id, grade=grade: next(turns).post(
                        f"/pools/{pool}/grade/{pair_id}/",
                        data={"grade": str(grade), "csrfmiddlewaretoken": client.cookies["csrftoken"]},
                        headers={**FRAGMENT, "Referer": str(client.base_url) + grade_url},
                    ),
                )
                if response is None:
                    continue
                if f"Saved {grade} " in response.text:
                    load.add("acknowledged", (username, pair_id, grade))
                else:
                    notice = re.search(r'class="rating-notice[^"]*"[^>]*>([^<]*)', response.text)
                    load.add("refused", f"{username} pair {pair_id}: {notice.group(1) if notice else '?'}")
        except Exception as error:  # a thread must not die silently
            load.add("errors", f"{username}: {error!r}")

    threads = [
        threading.Thread(target=rater, args=(name, client, random.Random(seed * 1000 + i)), daemon=True)
        for i, (name, client) in enumerate(clients.items())
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    load.seconds = time.perf_counter() - began
    return load


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]

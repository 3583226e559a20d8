"""Twenty raters request and grade pairs at the same time through the web views, on the real database.

Each thread has its own test Client and its own database connection (closed at the end). The queue's
guarantees are checked from both sides: what each rater was served, and what the database holds.
"""

import random
import re
import threading
import time
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judgments.models import Judgment, JudgmentChange, Pair
from judgments.rating.views import FRAGMENT_HEADER

N_RATERS = 20
N_QUERIES, DOCS_PER_QUERY, RATERS_PER_PAIR = 10, 12, 2
PAIR_ID = re.compile(r'data-pair="(\d+)"')
LEFT = re.compile(r"<strong>(\d+)</strong> left")


@pytest.fixture
def busy_pool(transactional_db, pool, make_rater, queued):
    pool.raters_per_pair = RATERS_PER_PAIR
    pool.save()
    for q in range(N_QUERIES):
        for d in range(DOCS_PER_QUERY):
            queued(pool, f"cq{q:02d}", f"cd{d:02d}", priority=1000 - q)
    return pool, [make_rater(f"crowd{i:02d}") for i in range(N_RATERS)]


def test_twenty_raters_grading_at_once(busy_pool):
    pool, raters = busy_pool
    grade_url = reverse("rating:grade", args=[pool.name])
    headers = {FRAGMENT_HEADER: "1"}
    clients = []
    for rater in raters:
        client = Client()
        client.force_login(rater)
        clients.append(client)
    connection.close()  # the threads open their own connections

    first_pairs: dict[int, int | None] = {}
    served_not_mine: list = []  # (rater, pair, holder) when a served pair was not held by the rater
    refused: list = []  # POST answers that did not save
    posted: Counter = Counter()  # (rater, pair) -> successful POSTs
    holds: dict[int, list] = defaultdict(list)  # pair -> [(rater, held from, held to)] as the client saw it
    errors: list = []
    everyone_served = threading.Barrier(N_RATERS, timeout=60)

    def next_pair_of(html: str) -> int | None:
        found = PAIR_ID.search(html)
        return int(found.group(1)) if found else None

    def check_hold(rater, pair_id):
        holder = Pair.objects.filter(pk=pair_id).values_list("held_by_id", flat=True).first()
        if holder != rater.pk:
            served_not_mine.append((rater.pk, pair_id, holder))

    def work(client, rater, seed):
        rng = random.Random(seed)
        try:
            html = client.get(grade_url, headers=headers).content.decode()
            pair_id = next_pair_of(html)
            first_pairs[rater.pk] = pair_id
            if pair_id:
                check_hold(rater, pair_id)
            everyone_served.wait()  # nobody grades before all twenty hold their first pair
            idle = 0
            while True:
                if pair_id is None:
                    left = LEFT.search(html)
                    if left is None or int(left.group(1)) == 0 or idle > 400:
                        return
                    idle += 1  # the rest is held by others right now: ask again shortly
                    time.sleep(0.02)
                    html = client.get(grade_url, headers=headers).content.decode()
                    pair_id = next_pair_of(html)
                    if pair_id:
                        check_hold(rater, pair_id)
                    continue
                held_from = time.monotonic()
                time.sleep(rng.random() * 0.01)  # reading the document
                grade = rng.randint(0, 4)
                held_to = time.monotonic()
                response = client.post(
                    reverse("rating:grade-pair", args=[pool.name, pair_id]),
                    {"grade": str(grade)},
                    headers=headers,
                )
                html = response.content.decode()
                if response.status_code != 200 or f"Saved {grade} " not in html:
                    refused.append((rater.pk, pair_id, response.status_code))
                else:
                    posted[(rater.pk, pair_id)] += 1
                    holds[pair_id].append((rater.pk, held_from, held_to))
                pair_id = next_pair_of(html)
                if pair_id:
                    check_hold(rater, pair_id)
        except Exception as exc:  # reported below; a thread must not die silently
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [
        threading.Thread(target=work, args=(c, r, i))
        for i, (c, r) in enumerate(zip(clients, raters, strict=True))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a rater thread hung"
    assert errors == []

    # Twenty raters asking at the same moment, 120 pairs free: twenty different pairs.
    assert None not in first_pairs.values() and len(set(first_pairs.values())) == N_RATERS
    # Nobody was served a pair another rater held, and no answer was refused.
    assert served_not_mine == [] and refused == []
    for pair_id, spans in holds.items():
        for i, (a, start_a, end_a) in enumerate(spans):
            for b, start_b, end_b in spans[i + 1 :]:
                assert a == b or end_a <= start_b or end_b <= start_a, (
                    f"pair {pair_id} held by {a} and {b} at once"
                )

    # Every grade stored exactly once; every pair has exactly the grades wanted, from different raters.
    judgments = list(Judgment.objects.filter(pair__pool=pool).values_list("pair_id", "rater_id"))
    assert (
        len(judgments)
        == len(set(judgments))
        == sum(posted.values())
        == N_QUERIES * DOCS_PER_QUERY * RATERS_PER_PAIR
    )
    assert set(posted.values()) == {1}
    assert set(Counter(pair for pair, _ in judgments).values()) == {RATERS_PER_PAIR}
    assert JudgmentChange.objects.filter(pair__pool=pool, action="created").count() == len(judgments)
    assert not JudgmentChange.objects.filter(pair__pool=pool).exclude(action="created").exists()
    # All twenty took part, and no hold is left behind.
    assert len({rater for _, rater in judgments}) == N_RATERS
    assert not Pair.objects.filter(pool=pool, held_by__isnull=False).exists()


def test_a_submit_locks_its_pair_and_not_the_pool(transactional_db, pool, rater, queued):
    """Two raters' submits in one pool run side by side: the submit holds its pair's row, not the pool's
    (a FOR UPDATE over the joined rows used to take the pool row too, queueing every submit of the pool)."""
    import psycopg
    from django.db import transaction

    from judgments.rating import grading

    pair = queued(pool, "q1", "d1")
    pair.held_by, pair.held_until = rater, timezone.now() + timedelta(hours=1)
    pair.save(update_fields=["held_by", "held_until"])
    with transaction.atomic():
        grading.save_grade(pair, rater, grade=2)
        with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
            other.execute("SELECT 1 FROM judgments_pool WHERE id = %s FOR UPDATE NOWAIT", [pool.pk])
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("SELECT 1 FROM judgments_pair WHERE id = %s FOR UPDATE NOWAIT", [pair.pk])
    assert Judgment.objects.get(pair=pair, rater=rater).grade == 2

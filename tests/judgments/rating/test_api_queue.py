"""`POST /api/judgments/` obeys the judging queue (grading.save_grade), as the grading page does: a new grade
only for a pair that is queued, not settled by an admin, short of grades and not held by another rater;
many raters posting one pair at once store no more grades than it wants."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments.exchange.exports.grades import combined_grades
from judgments.models import Judgment, JudgmentChange, Pair
from judgments.rating import grading, queue

URL = "/api/judgments/"


def _client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _post(user, qid="q1", docid="d1", **body):
    return _client(user).post(
        URL, {"pool": "robust", "query_id": qid, "doc_id": docid, **body}, format="json"
    )


def _refused(response):
    assert response.status_code == 409, (response.status_code, response.content)
    body = response.json()
    assert body["problems"] and body["problems"][0]["field"] == "doc_id"
    return body["detail"]


def test_a_pair_that_is_not_queued_cannot_be_graded(pool, rater):
    from judgments import pool_keys

    assert _post(rater, grade=3).status_code == 400  # not even a pair yet
    query, document = pool.queries.get(external_id="q1"), pool.documents.get(external_id="d1")
    pool_keys.ensure_pairs(pool, [(query.pk, document.pk)])  # a pair (e.g. of a run), never queued
    assert "not in the judging queue" in _refused(_post(rater, grade=3))
    assert not Judgment.objects.exists()


def test_a_queued_pair_can_be_graded_once_per_rater_then_changed(pool, rater):
    queue.add_pairs(pool, [("q1", "d1")])
    assert _post(rater, grade=3).status_code == 201
    assert _post(rater, grade=1, note="second thoughts").status_code == 200
    assert list(Judgment.objects.values_list("grade", "note")) == [(1, "second thoughts")]


def test_a_complete_pair_refuses_a_new_grade_but_its_graders_may_change_theirs(pool, rater, other_rater):
    queue.add_pairs(pool, [("q1", "d1")])  # raters_per_pair = 1
    assert _post(rater, grade=2).status_code == 201
    assert "all the grades it needs" in _refused(_post(other_rater, grade=4))
    assert _post(rater, grade=4).status_code == 200
    assert list(Judgment.objects.values_list("rater__username", "grade")) == [(rater.username, 4)]


def test_a_settled_pair_refuses_a_new_grade(pool, rater, site_admin):
    from judgments import services

    queue.add_pairs(pool, [("q1", "d1")])
    pair = Pair.objects.get(pool=pool, query__external_id="q1", document__external_id="d1")
    services.set_final_grade(pair, 4, site_admin)
    assert "settled" in _refused(_post(rater, grade=0))
    assert not Judgment.objects.exists()


def test_a_pair_another_rater_holds_is_refused_until_the_hold_expires(pool, rater, other_rater):
    queue.add_pairs(pool, [("q1", "d1")])
    held = grading.next_pair_for(other_rater, pool)
    assert held.query.external_id == "q1"
    assert "another rater is grading" in _refused(_post(rater, grade=3))
    Pair.objects.filter(pk=held.pk).update(held_until=timezone.now() - timedelta(seconds=1))
    assert _post(rater, grade=3).status_code == 201


def test_cant_judge_does_not_turn_into_a_grade_on_a_complete_pair(pool, rater, other_rater):
    queue.add_pairs(pool, [("q1", "d1")])
    assert _post(rater, cant_judge=True, reason="paywall").status_code == 201
    assert _post(other_rater, grade=3).status_code == 201  # the pair had no real grade yet
    assert "all the grades it needs" in _refused(_post(rater, grade=1))
    assert Judgment.objects.get(rater=rater).cant_judge


# --- Many raters, one pair, at once ------------------------------------------------------------------

N_RATERS, RATERS_PER_PAIR = 24, 2


@pytest.mark.slow
def test_many_raters_posting_one_pair_at_once_store_only_the_grades_it_wants(
    transactional_db, pool, make_rater
):
    pool.raters_per_pair = RATERS_PER_PAIR
    pool.save()
    queue.add_pairs(pool, [("q1", "d1")])
    raters = [make_rater(f"api{i:02d}") for i in range(N_RATERS)]
    clients = [_client(r) for r in raters]
    grades = {r.pk: i % 5 for i, r in enumerate(raters)}  # different grades: a wrong mean would show
    connection.close()  # the threads open their own connections

    answers: dict[int, int] = {}
    errors: list = []
    start = threading.Barrier(N_RATERS, timeout=60)

    def post(client, rater):
        try:
            start.wait()
            response = client.post(
                URL,
                {"pool": "robust", "query_id": "q1", "doc_id": "d1", "grade": grades[rater.pk]},
                format="json",
            )
            answers[rater.pk] = response.status_code
        except Exception as exc:  # reported below; a thread must not die silently
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(c, r)) for c, r in zip(clients, raters, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a rater thread hung"
    assert errors == []

    assert Counter(answers.values()) == {201: RATERS_PER_PAIR, 409: N_RATERS - RATERS_PER_PAIR}
    accepted = {rater for rater, code in answers.items() if code == 201}
    stored = dict(Judgment.objects.filter(pair__pool=pool).values_list("rater_id", "grade"))
    assert set(stored) == accepted  # every 201 was stored, nothing else was
    assert stored == {r: grades[r] for r in accepted}
    assert JudgmentChange.objects.filter(pair__pool=pool).count() == RATERS_PER_PAIR
    assert combined_grades(pool) == {("q1", "d1"): sum(stored.values()) / RATERS_PER_PAIR}

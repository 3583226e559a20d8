"""judgments.after_response: work deferred in a request runs once the response is closed (sent), work
deferred elsewhere at once; a grade's rescoring is such work, and is done when the client has the page."""

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import reverse

from judgments import after_response
from judgments.rating import grading
from scoring.models import QueryScore
from tests.judgments.rating.conftest import queued_pair


def test_deferred_work_runs_when_the_response_is_closed():
    done = []

    def view(request):
        after_response.defer(lambda: done.append("first"))
        after_response.defer(lambda: 1 / 0)  # a failure is logged, and the next still runs
        after_response.defer(lambda: done.append("second"))
        assert done == []
        return HttpResponse("page")

    response = after_response.AfterResponseMiddleware(view)(RequestFactory().get("/"))
    assert done == []
    response.close()
    assert done == ["first", "second"]


def test_outside_a_request_deferred_work_runs_at_once():
    done = []
    after_response.defer(lambda: done.append(1))
    assert done == [1]


@pytest.mark.django_db(transaction=True)  # real commits: the rescoring runs on the grade's commit
def test_a_grade_is_rescored_by_the_time_the_client_has_the_next_pair(client, pool, rater, run, monkeypatch):
    ran_after = []
    run_pending = after_response._run
    monkeypatch.setattr(
        after_response, "_run", lambda pending: ran_after.append(len(pending)) or run_pending(pending)
    )
    pair = queued_pair(pool, "q1", "d1")
    assert not QueryScore.objects.filter(run=run, query_id=pair.query_id, ndcg_10__gt=0).exists()
    assert grading.next_pair_for(rater, pool) == pair
    client.force_login(rater)
    response = client.post(
        reverse("rating:grade-pair", args=[pool.name, pair.pk]),
        {"action": "grade", "grade": "3"},
        headers={"X-Rating-Fragment": "1"},
    )
    assert response.status_code == 200
    assert ran_after == [1]  # the rescoring, after the response
    assert QueryScore.objects.filter(run=run, query_id=pair.query_id, ndcg_10__gt=0).exists()

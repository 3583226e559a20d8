"""A grade posted from the grading page reads each thing once (issue 23, item 1: the submit p95 of 32
raters on a fresh pool). Every statement is a round trip and, through the ORM, a compile: the pair read
twice, the rater's pause checked twice and the progress counts read twice cost a submit about a quarter
of its statements. The budget is what one submit runs today, rescoring after the commit included."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judgments import raters
from tests.bench.raters import FRAGMENT, PAIR

# Statements of one submit inside a test's transaction (savepoints for transactions): before its answer
# (the grade, then the next pair and its page), and with the rescoring after the commit (here the first
# grade of the pool: its stability is measured too).
PAGE_BUDGET = 21
BUDGET = 42


def _submit(client, pool, django_capture_on_commit_callbacks) -> tuple[str, list[str]]:
    url = reverse("rating:grade", args=[pool.name])
    served = PAIR.search(client.get(url, headers=FRAGMENT).content.decode())
    assert served, "the grading page serves a pair"
    with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{url}{served.group(1)}/", {"grade": "2"}, headers=FRAGMENT)
    assert response.status_code == 200
    return response.content.decode(), [q["sql"] for q in captured.captured_queries]


@pytest.mark.django_db
def test_a_grade_posted_from_the_grading_page_reads_each_thing_once(
    client, pool, rater, queued, django_capture_on_commit_callbacks
):
    for d in ("d1", "d2", "d3"):
        queued(pool, "q1", d)
    client.force_login(rater)
    page, statements = _submit(client, pool, django_capture_on_commit_callbacks)
    assert "Saved 2" in page and PAIR.search(page), "saved, and the next pair served in the same answer"
    assert "<strong>2</strong> left" in page  # the progress the page shows, read once (below)
    # What the answer waited for: everything before the rescoring (its pool lock) begins.
    answer = statements[: next(i for i, sql in enumerate(statements) if "pg_advisory_xact_lock" in sql)]

    pair_reads = [sql for sql in answer if sql.startswith('SELECT "judgments_pair"."id"')]
    assert len(pair_reads) == 2, "the graded pair (locked) and the next pair, each read once"
    assert sum("FOR UPDATE" in sql for sql in pair_reads) == 1
    assert sum("FROM judgments_tally" in sql for sql in answer) == 1, "the progress counts, read once"
    assert sum("judgments_raterstatus" in sql and "paused" in sql for sql in answer) == 2, (
        "the pause, checked with the lock and with the next pair"
    )
    assert len(answer) <= PAGE_BUDGET, "\n".join(answer)
    assert len(statements) <= BUDGET, "\n".join(statements)


@pytest.mark.django_db
def test_a_paused_rater_posting_a_grade_is_refused_and_told_so(
    client, pool, rater, site_admin, queued, django_capture_on_commit_callbacks
):
    """The pause read with the lock still refuses, and the next page (read with the next pair) says so."""
    queued(pool, "q1", "d1")
    client.force_login(rater)
    url = reverse("rating:grade", args=[pool.name])
    served = PAIR.search(client.get(url, headers=FRAGMENT).content.decode())
    raters.set_paused(pool, rater, True, site_admin)
    response = client.post(f"{url}{served.group(1)}/", {"grade": "2"}, headers=FRAGMENT)
    page = response.content.decode()
    assert "paused your grading" in page and "Your grading is paused" in page
    assert not PAIR.search(page)


@pytest.mark.django_db
def test_a_grade_posted_for_a_pair_of_another_pool_is_not_found(client, pool, rater, queued):
    from judgments.models import Pool

    other = Pool.objects.create(name="elsewhere")
    other.members.add(rater)
    pair = queued(other, "q1", "d1")
    client.force_login(rater)
    response = client.post(
        reverse("rating:grade-pair", args=[pool.name, pair.pk]), {"grade": "2"}, headers=FRAGMENT
    )
    assert response.status_code == 404
    assert not pair.judgments.exists()

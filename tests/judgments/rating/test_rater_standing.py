"""An admin pauses a rater, or leaves a rater's grades out of the combined grade (judgments.raters):
from the people page; scores follow; the history records it."""

import pytest

from judgments import raters
from judgments.exchange.exports.grades import combined_grades
from judgments.models import Judgment, RaterStatusChange
from judgments.rating import grading, queue


@pytest.fixture
def two_grades(pool, queued, rater, other_rater):
    pool.raters_per_pair = 2
    pool.save()
    pair = queued(pool, "q1", "d1")
    for user, grade in ((rater, 4), (other_rater, 0)):
        grading.save_grade(grading.next_pair_for(user, pool), user, grade=grade)
    return pair


def test_excluding_a_rater_takes_their_grades_out_and_back(pool, two_grades, rater, site_admin, client):
    assert combined_grades(pool)[("q1", "d1")] == 2.0
    client.force_login(site_admin)
    response = client.post(
        f"/campaign/pools/robust/people/{rater.pk}/standing/", {"what": "excluded", "value": "1"}
    )
    assert response.status_code == 302
    assert combined_grades(pool)[("q1", "d1")] == 0.0  # only the other rater's grade counts
    assert Judgment.objects.get(rater=rater).grade == 4  # kept
    assert queue.open_pairs(pool).filter(pk=two_grades.pk).exists()  # it wants another grade now
    change = RaterStatusChange.objects.get()
    assert (change.action, change.changed_by, change.judgments) == ("excluded", site_admin, 1)
    raters.set_excluded(pool, rater, False, site_admin)
    assert combined_grades(pool)[("q1", "d1")] == 2.0
    assert RaterStatusChange.objects.count() == 2


def test_a_paused_rater_gets_no_pair_and_cannot_add_a_grade(pool, queued, rater, site_admin, client):
    pair = queued(pool, "q1", "d1")
    served = grading.next_pair_for(rater, pool)
    client.force_login(site_admin)
    client.post(f"/campaign/pools/robust/people/{rater.pk}/standing/", {"what": "paused", "value": "1"})
    assert grading.next_pair_for(rater, pool) is None
    with pytest.raises(queue.QueueError, match="paused"):
        grading.save_grade(served, rater, grade=2)
    assert not Judgment.objects.exists()
    page = client.get("/campaign/pools/robust/people/").content.decode()
    assert "paused" in page and "Resume grading" in page
    client.force_login(rater)
    grading_page = client.get("/pools/robust/grade/").content.decode()
    assert "Your grading is paused" in grading_page and "Nothing to grade right now" not in grading_page
    assert "still need" not in grading_page  # not "other raters are on them right now"
    raters.set_paused(pool, rater, False, site_admin)
    assert grading.next_pair_for(rater, pool).pk == pair.pk

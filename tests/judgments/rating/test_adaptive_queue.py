"""The queue strategy: `depth` (today's order) and `adaptive` (a bandit over the runs, re-decided after
every grade); `build_queue` the command; raters taking pairs through `GET /api/pools/<name>/next/`."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import services
from judgments.models import Document, Judgment, Pair, Pool
from judgments.rating import adaptive, grading, queue


def _client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _priorities(pool):
    return {
        (p.query.external_id, p.document.external_id): p.priority
        for p in Pair.objects.filter(pool=pool).queued().select_related("query", "document")
    }


@pytest.fixture
def runs(pool, configuration, other_configuration):
    """bm25: q1 d1 d2 d3, q2 d3 d1; dense: q1 d2 d3 d1, q2 d2 d1 (d4 and d5 in q1's deep ranks of bm25)."""
    for d in ("d4", "d5"):
        Document.objects.create(pool=pool, external_id=d, title=f"Title {d}", body="body")
    services.record_run(
        configuration, {"q1": ["d1", "d2", "d3", "d4", "d5"], "q2": ["d3", "d1"]}, source="api"
    )
    services.record_run(other_configuration, {"q1": ["d2", "d3", "d1"], "q2": ["d2", "d1"]}, source="api")


def test_run_estimate_is_maxmean_with_fading_evidence():
    assert adaptive.run_estimate([]) == 0.5  # Beta(1, 1): nothing known
    assert adaptive.run_estimate([1.0]) == pytest.approx(2 / 3)
    # MM-NS: the same rewards, the recent non-relevant ones weigh more than the old relevant ones.
    assert adaptive.run_estimate([1, 1, 0, 0]) < adaptive.run_estimate([0, 0, 1, 1])
    # A document retrieved by two runs is likelier relevant than by one; a deeper rank, less likely.
    one = adaptive.document_probability([(0.5, 1)])
    assert (
        adaptive.document_probability([(0.5, 1), (0.5, 1)]) > one > adaptive.document_probability([(0.5, 3)])
    )


def test_build_queue_adaptive_orders_by_probability_and_stores_the_strategy(pool, runs):
    result = queue.build_queue(pool, 3, "adaptive")
    pool.refresh_from_db()
    assert (pool.queue_strategy, pool.queue_depth) == ("adaptive", 3)
    prios = _priorities(pool)
    assert result.queued == len(prios) == 6  # q1 d1 d2 d3, q2 d1 d2 d3: the same pool as depth's
    assert all(0 < p < adaptive.SCALE for p in prios.values())
    # Nothing graded: retrieved by both configurations at good ranks comes first.
    assert prios[("q1", "d2")] > prios[("q1", "d3")]
    assert max(prios, key=prios.get) == ("q1", "d2")


def test_a_grade_re_decides_the_query(pool, runs, rater):
    queue.build_queue(pool, 5, "adaptive")
    before = _priorities(pool)
    pair = Pair.objects.get(query__external_id="q1", document__external_id="d1")
    grading.save_grade(pair, rater, grade=0)  # bm25's rank 1 is not relevant: bm25's deep documents drop
    after = _priorities(pool)
    assert after[("q1", "d4")] < before[("q1", "d4")]
    assert after[("q1", "d5")] < before[("q1", "d5")]
    assert after[("q2", "d3")] == before[("q2", "d3")]  # another query: untouched


def test_adaptive_serves_the_likeliest_pair_first_and_keeps_the_guarantees(pool, runs, rater, other_rater):
    pool.raters_per_pair = 1
    pool.save()
    queue.build_queue(pool, 5, "adaptive")
    first = grading.next_pair_for(rater, pool)
    second = grading.next_pair_for(other_rater, pool)
    assert first.pk != second.pk  # holds: two raters never get the same pair
    grading.save_grade(first, rater, grade=3)
    with pytest.raises(queue.QueueError):  # no over-assignment: the pair has its one grade
        grading.save_grade(first, other_rater, grade=1)
    served = set()
    while (pair := grading.next_pair_for(rater, pool)) is not None:
        served.add(pair.pk)
        grading.save_grade(pair, rater, cant_judge=True, reason="not my language")
    # can't judge answers are not grades: other_rater still gets every pair but the one graded
    assert second.pk in served or second.held_by_id == other_rater.pk


def test_build_queue_command_prints_the_count_and_never_loses_a_grade(pool, runs, rater):
    out = StringIO()
    call_command("build_queue", "--pool", "robust", "--strategy", "depth", "--depth", "3", stdout=out)
    assert out.getvalue().startswith("6 pairs queued in pool robust (depth, depth 3)")
    pair = Pair.objects.get(query__external_id="q1", document__external_id="d2")
    grading.save_grade(pair, rater, grade=4)
    out = StringIO()
    call_command("build_queue", "--pool", "robust", "--strategy", "adaptive", stdout=out)
    assert out.getvalue().startswith("5 pairs queued in pool robust (adaptive, depth 3)")
    assert Judgment.objects.get(pair=pair).grade == 4
    assert not queue.open_pairs(pool).filter(pk=pair.pk).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--strategy", "random"],
            "--strategy: Unknown queue strategy 'random': use one of depth, adaptive.",
        ),
        (["--depth", "0"], "--depth: k must be an integer from 1 to 1000, not 0."),
        (["--depth", "ten"], "--depth: 'ten' is not a whole number."),
    ],
)
def test_build_queue_command_refuses_bad_input_and_changes_nothing(pool, runs, args, message):
    with pytest.raises(CommandError) as caught:
        call_command("build_queue", "--pool", "robust", *args, stdout=StringIO())
    assert str(caught.value) == message
    assert not Pair.objects.filter(pool=pool).queued().exists()
    assert Pool.objects.get(pk=pool.pk).queue_strategy == "depth"


def test_raters_take_pairs_through_the_api_as_the_page_does(pool, runs, rater, other_rater):
    queue.build_queue(pool, 2, "depth")
    client = _client(rater)
    response = client.get("/api/pools/robust/next/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"query_id", "doc_id", "query", "title", "body"}
    assert not {"priority", "rank", "gold", "grade"} & set(body)
    held = Pair.objects.get(query__external_id=body["query_id"], document__external_id=body["doc_id"])
    assert held.held_by_id == rater.pk
    assert client.get("/api/pools/robust/next/").json()["doc_id"] == body["doc_id"]  # the same, held
    other = _client(other_rater).get("/api/pools/robust/next/").json()
    assert (other["query_id"], other["doc_id"]) != (body["query_id"], body["doc_id"])
    for _ in range(10):
        response = client.get("/api/pools/robust/next/")
        if response.status_code == 204:
            break
        pair = response.json()
        posted = client.post(
            "/api/judgments/", {"pool": "robust", **{k: pair[k] for k in ("query_id", "doc_id")}, "grade": 2}
        )
        assert posted.status_code == 201
    assert response.status_code == 204
    # every pair but the one other_rater holds, graded once, with the time it was served
    assert Judgment.objects.filter(rater=rater).count() == len(_priorities(pool)) - 1
    assert not Judgment.objects.filter(rater=rater, served_at__isnull=True).exists()


def test_outsiders_get_no_pair(pool, runs, outsider, engineer):
    queue.build_queue(pool, 2)
    assert _client(outsider).get("/api/pools/robust/next/").status_code in (403, 404)
    assert _client(engineer).get("/api/pools/robust/next/").status_code == 403
    assert not Pair.objects.filter(held_by__isnull=False).exists()


def test_admins_set_the_strategy_through_the_api(pool, runs, site_admin, rater):
    client = _client(site_admin)
    response = client.put("/api/pools/robust/queue/", {"strategy": "adaptive", "depth": 3}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["queue_strategy"], response.json()["queue_depth"]) == ("adaptive", 3)
    assert len(_priorities(pool)) == 6
    bad = client.put("/api/pools/robust/queue/", {"strategy": "bandit"}, format="json")
    assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == "strategy"
    assert client.put("/api/pools/robust/queue/", {"depth": 0}, format="json").status_code == 400
    assert Pool.objects.get(pk=pool.pk).queue_strategy == "adaptive"
    assert _client(rater).put("/api/pools/robust/queue/", {"depth": 2}, format="json").status_code in (
        403,
        404,
    )


def test_a_pool_that_stopped_serves_nothing(pool, runs, rater):
    from django.utils import timezone

    queue.build_queue(pool, 2)
    Pool.objects.filter(pk=pool.pk).update(stop_when_settled=True, settled_at=timezone.now())
    pool.refresh_from_db()
    assert grading.next_pair_for(rater, pool) is None
    assert _client(rater).get("/api/pools/robust/next/").status_code == 204
    Pool.objects.filter(pk=pool.pk).update(settled_at=None)
    pool.refresh_from_db()
    assert grading.next_pair_for(rater, pool) is not None

"""The background recompute: the task run by a real db_worker, the admin's button, and a changed
combine rule that queues a recompute."""

import signal

import pytest
from django.core.management import call_command
from django.utils import timezone

from judgments import services as judgment_services
from judgments.models import Document, Pair, Query
from scoring.models import CellScore, QueryScore
from scoring.tasks import recompute_pool
from tests.scoring.conftest import tasks_but_snapshots


def judge(pool, rater, qid, docid, grade):
    pair = Pair.objects.get_or_create(
        pool=pool,
        query=Query.objects.get(pool=pool, external_id=qid),
        document=Document.objects.get(pool=pool, external_id=docid),
    )[0]
    judgment_services.record_judgment(pair, rater, grade=grade)


@pytest.fixture
def worker_signals():
    """db_worker installs its own SIGINT/SIGTERM handlers; put pytest's back afterwards."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.django_db(transaction=True)
def test_recompute_task_runs_in_the_db_worker(pool, rater, configuration, worker_signals):
    judge(pool, rater, "q1", "d1", 3)
    judge(pool, rater, "q1", "d2", 1)
    judge(pool, rater, "q2", "d3", 2)
    run = judgment_services.record_run(configuration, {"q1": ["d2", "d1"], "q2": ["d3"]}, source="api")
    # the signals scored everything at commit; spoil the stored rows to see the task put them right
    expected = {(row.query_id, row.flavor): row.ndcg_10 for row in QueryScore.objects.filter(run=run)}
    assert len(expected) == 2 * 4
    CellScore.objects.filter(run=run).update(exp_ndcg_10=-1.0, trec_ndcg_10=-1.0, judged_ndcg_10=-1.0)
    CellScore.objects.filter(run=run, query__external_id="q2").delete()

    result = recompute_pool.enqueue(pool.pk)
    assert tasks_but_snapshots().get(id=result.id).status == "READY"
    call_command("db_worker", batch=True, startup_delay=False, reload=False, interval=0, verbosity=0)

    done = tasks_but_snapshots().get(id=result.id)
    assert done.status == "SUCCESSFUL", done.traceback
    assert done.return_value["rows"] == 2 and done.return_value["pool"] == pool.name
    assert {(row.query_id, row.flavor): row.ndcg_10 for row in QueryScore.objects.filter(run=run)} == expected


@pytest.mark.django_db(transaction=True)
def test_changing_the_combine_rule_queues_a_recompute(pool, rater, other_rater):
    judge(pool, rater, "q1", "d1", 1)
    judge(pool, other_rater, "q1", "d1", 4)
    pool.description = "renamed"
    pool.save()
    assert not tasks_but_snapshots().exists()
    pool.combine_rule = "max"
    pool.save()
    (task,) = tasks_but_snapshots().all()
    assert task.task_path == "scoring.tasks.recompute_pool"
    assert task.args_kwargs == {"args": [pool.pk], "kwargs": {}}


def test_admin_recompute_button_enqueues_and_goes_back(client, site_admin, pool):
    client.force_login(site_admin)
    response = client.post(
        f"/pools/{pool.name}/recompute/", {"next": f"/pools/{pool.name}/leaderboard/?flavour=trec"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/pools/{pool.name}/leaderboard/?flavour=trec"
    (task,) = tasks_but_snapshots().all()
    assert (task.task_path, task.args_kwargs["args"]) == ("scoring.tasks.recompute_pool", [pool.pk])
    page = client.get(response["Location"])
    assert "Recomputing every score of robust in the background" in page.content.decode()


def test_recompute_goes_back_to_the_leaderboard_not_to_another_site(client, site_admin, pool):
    client.force_login(site_admin)
    response = client.post(f"/pools/{pool.name}/recompute/", {"next": "https://evil.example/"})
    assert response["Location"] == f"/pools/{pool.name}/leaderboard/"


def test_only_admins_may_recompute(client, engineer, pool):
    client.force_login(engineer)
    assert client.post(f"/pools/{pool.name}/recompute/").status_code == 403
    assert not tasks_but_snapshots().exists()


def test_recompute_needs_post_and_an_existing_pool(client, site_admin, pool):
    client.force_login(site_admin)
    assert client.get(f"/pools/{pool.name}/recompute/").status_code == 405
    assert client.post("/pools/no-such-pool/recompute/").status_code == 404
    assert not tasks_but_snapshots().exists()


def test_a_failed_incremental_update_makes_its_task_due_at_once(
    pool, rater, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    import scoring.services

    def broken(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(scoring.services, "rescore_queries", broken)
    with django_capture_on_commit_callbacks(execute=True):
        judge(pool, rater, "q1", "d1", 2)  # the grade is saved; the request does not fail
    assert Pair.objects.get(query__external_id="q1", document__external_id="d1").judgments.get().grade == 2
    (task,) = tasks_but_snapshots().all()
    q1 = Query.objects.get(pool=pool, external_id="q1").pk
    assert (task.task_path, task.args_kwargs["args"]) == ("scoring.tasks.rescore_queries", [pool.pk, [q1]])
    assert task.status == "READY" and task.run_after <= timezone.now()
    assert "incremental scoring failed" in caplog.text

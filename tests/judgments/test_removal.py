"""Deleting and archiving judges, configurations, runs and pools from the app: each page says what would
go first; history that must stay is archived instead (hidden from lists, kept for exports); a delete of
something others depend on is refused with one line naming the dependants, and changes nothing."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from judgments import removal
from judgments import services as judgment_services
from judgments.capture.services import set_endpoint
from judgments.judges.services import create_or_update_judge
from judgments.models import Judgment, ModelJudge, Pair, Pool, Query, Ranking, Run, SearchConfiguration
from judgments.models.capture import CaptureJob
from scoring.exports import score_lines
from scoring.models import CellScore
from scoring.services import rescore_pool
from tests.conftest import login


def url(kind, target):
    if kind == "judge":
        return reverse("removal:judge", args=[target.pool.name, target.user.username])
    return reverse(f"removal:{kind}", args=[target.name if kind == "pool" else target.pk])


def page(client, kind, target):
    return client.get(url(kind, target))


def post(client, action, kind, target):
    return client.post(url(kind, target), {"action": action}, follow=True)


def graded_pair(pool, user, grade=2):
    pair = Pair.objects.create(
        pool=pool, query=pool.queries.get(external_id="q1"), document=pool.documents.get(external_id="d1")
    )
    judgment_services.record_judgment(pair, user, grade=grade)
    return pair


def test_a_judge_without_grades_is_deleted_with_its_account(client, site_admin, pool):
    judge = create_or_update_judge(pool, "fresh", base_url="http://127.0.0.1:9/v1", model="m")[0]
    login(client, site_admin)
    html = page(client, "judge", judge).content.decode()
    assert "its rater account fresh" in html and 'id="delete-button"' in html
    response = post(client, "delete", "judge", judge)
    assert "Deleted judge fresh" in response.content.decode()
    assert not ModelJudge.objects.exists() and not type(site_admin).objects.filter(username="fresh").exists()


def test_a_judge_with_grades_is_archived_not_deleted(client, site_admin, pool):
    judge = create_or_update_judge(pool, "graded", base_url="http://127.0.0.1:9/v1", model="m")[0]
    graded_pair(pool, judge.user)
    login(client, site_admin)
    html = page(client, "judge", judge).content.decode()
    assert "History must stay" in html and "1 grade of graded pairs" in html and "delete-button" not in html
    response = post(client, "delete", "judge", judge)  # a hand-made POST is refused too
    assert (
        "Refused: judge graded has 1 grade of graded pairs: archive it instead" in response.content.decode()
    )
    assert ModelJudge.objects.filter(pk=judge.pk, archived_at__isnull=True).exists()
    post(client, "archive", "judge", judge)
    listing = client.get(reverse("judges:list", args=[pool.name])).content.decode()
    assert 'id="archived-judges"' in listing and url("judge", judge) in listing
    assert Judgment.objects.filter(rater=judge.user).count() == 1  # the grade is kept
    post(client, "restore", "judge", judge)
    assert ModelJudge.objects.get(pk=judge.pk).archived_at is None


def test_a_configuration_without_runs_is_deleted_with_its_endpoint(client, engineer, configuration):
    set_endpoint(configuration, kind="elasticsearch", url="http://127.0.0.1:9/docs/_search")
    login(client, engineer)
    html = page(client, "configuration", configuration).content.decode()
    assert "1 endpoint version" in html and "0 runs" not in html
    post(client, "delete", "configuration", configuration)
    assert not SearchConfiguration.objects.exists()


def test_a_configuration_with_runs_is_archived_off_the_lists_and_leaderboard_kept_for_exports(
    client, engineer, rater, configuration, run
):
    login(client, engineer)
    response = post(client, "delete", "configuration", configuration)
    assert "Refused: configuration bm25 has 1 run scored on the leaderboard: archive it instead" in (
        response.content.decode()
    )
    post(client, "archive", "configuration", configuration)
    listing = client.get(reverse("judgments:configuration-list", args=["robust"])).content.decode()
    assert (
        f'href="/configurations/{configuration.pk}/"' not in listing
        and 'id="archived-configurations"' in listing
    )
    board = client.get(reverse("scoring:leaderboard", args=["robust"])).content.decode()
    assert "bm25" not in board
    out = StringIO()
    call_command("export_run", "--pool", "robust", "--configuration", "bm25", stdout=out)
    assert "q1 Q0 d1 1" in out.getvalue()  # kept for exports
    graded_pair(configuration.pool, rater)
    rescore_pool(configuration.pool)
    assert "bm25" in "".join(score_lines(configuration.pool, "exp", "csv"))


def test_an_active_capture_refuses_with_one_line_naming_it(client, engineer, configuration):
    endpoint, _ = set_endpoint(configuration, kind="elasticsearch", url="http://127.0.0.1:9/docs/_search")
    job = CaptureJob.objects.create(configuration=configuration, endpoint=endpoint, trigger="web")
    login(client, engineer)
    response = post(client, "delete", "configuration", configuration)
    assert f"Refused: configuration bm25 cannot be deleted: capture #{job.pk} of bm25 is queued." in (
        response.content.decode()
    )
    assert SearchConfiguration.objects.filter(pk=configuration.pk).exists()


def test_an_older_run_is_deleted_with_its_scores_and_the_current_one_is_refused(
    client, engineer, rater, configuration, run
):
    graded_pair(configuration.pool, rater)
    rescore_pool(configuration.pool)  # the scores a commit would have made
    assert CellScore.objects.filter(run_id=run.pk).exists()
    newer = judgment_services.record_run(configuration, {"q1": ["d2"]}, source="api", submitted_by=engineer)
    login(client, engineer)
    response = post(client, "delete", "run", newer)
    assert f"Refused: run #{newer.pk} of bm25 cannot be deleted: it is bm25&#x27;s current run" in (
        response.content.decode()
    )
    assert CellScore.objects.filter(run_id=run.pk).exists()
    html = page(client, "run", run).content.decode()
    assert "2 rankings" in html and "its scores" in html
    post(client, "delete", "run", run)
    assert list(Run.objects.values_list("pk", flat=True)) == [newer.pk]
    assert (
        not Ranking.objects.filter(run_id=run.pk).exists()
        and not CellScore.objects.filter(run_id=run.pk).exists()
    )


def test_only_the_team_and_admins_remove_a_configuration_and_only_admins_judges_and_pools(
    client, other_engineer, engineer, rater, configuration, pool
):
    judge = create_or_update_judge(pool, "j", base_url="http://127.0.0.1:9/v1", model="m")[0]
    login(client, other_engineer)
    assert page(client, "configuration", configuration).status_code == 403
    assert client.post(url("configuration", configuration), {"action": "delete"}).status_code == 403
    login(client, engineer)
    for kind, target in (("judge", judge), ("pool", pool)):
        assert page(client, kind, target).status_code == 403
        assert client.post(url(kind, target), {"action": "delete"}).status_code == 403
    login(client, rater)
    assert page(client, "configuration", configuration).status_code == 404
    assert SearchConfiguration.objects.exists() and ModelJudge.objects.exists() and Pool.objects.exists()


def test_a_pool_with_grades_is_archived_off_the_home_page_and_an_empty_one_deleted(
    client, site_admin, pool, rater
):
    graded_pair(pool, rater)
    empty = Pool.objects.create(name="scratch")
    Query.objects.create(pool=empty, external_id="x1", text="x")
    login(client, site_admin)
    assert (
        "Refused: pool robust has 1 grade: archive it instead"
        in post(client, "delete", "pool", pool).content.decode()
    )
    post(client, "archive", "pool", pool)
    home = client.get("/").content.decode()
    assert 'id="archived-pools"' in home and 'href="/pools/robust/"' not in home
    out = StringIO()
    call_command("export_qrels", "--pool", "robust", stdout=out)
    assert "q1 0 d1 2" in out.getvalue()
    assert "1 query" in page(client, "pool", empty).content.decode()
    post(client, "delete", "pool", empty)
    assert list(Pool.objects.values_list("name", flat=True)) == ["robust"]


def test_plans_are_the_one_rule(pool, configuration, run):
    assert removal.plan(configuration).action == removal.ARCHIVE
    assert removal.plan(run).action == removal.REFUSE
    with pytest.raises(removal.RemovalRefused):
        removal.delete(run)
    with pytest.raises(removal.RemovalRefused, match="cannot be archived"):
        removal.archive(run)


def test_counts_come_from_the_stored_tallies_and_queries_are_capped(
    pool, rater, other_rater, site_admin, monkeypatch
):
    """A pool's grades, documents and pairs and a judge's grades are the stored tallies (exact, no
    statement on the judgments); queries are counted up to COUNT_CAP, "more than N" beyond it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(removal, "COUNT_CAP", 2)
    pair = graded_pair(pool, rater)
    judgment_services.record_judgment(pair, other_rater, cant_judge=True, reason="no text")
    judgment_services.record_judgment(
        Pair.objects.create(pool=pool, query=pool.queries.get(external_id="q2"), document=pair.document),
        rater,
        grade=3,
    )
    with CaptureQueriesContext(connection) as statements:
        planned = removal.plan(pool)
    assert planned.line == "Refused: pool robust has 3 grades: archive it instead (kept for exports)."
    assert not [s["sql"] for s in statements if "judgments_judgment" in s["sql"]]
    judge = create_or_update_judge(pool, "llm", base_url="http://127.0.0.1:9/v1", model="m")[0]
    Pair.objects.create(pool=pool, query=pair.query, document=pool.documents.get(external_id="d2"))
    for p in Pair.objects.filter(pool=pool):
        judgment_services.record_judgment(p, judge.user, grade=2)
    assert "has 3 grades of graded pairs" in removal.plan(judge).line
    assert "has 6 grades" in removal.plan(pool).line
    empty = Pool.objects.create(name="scratch")
    for q in ("x1", "x2", "x3"):
        Query.objects.create(pool=empty, external_id=q, text="x")
    with CaptureQueriesContext(connection) as statements:
        planned = removal.plan(empty)
    assert planned.action == removal.DELETE and "more than 2 queries" in planned.goes
    assert "0 documents" in planned.goes and "0 pairs" in planned.goes
    (count,) = [s["sql"] for s in statements if "judgments_query" in s["sql"]]
    assert "LIMIT 3" in count  # stops after the cap
    Query.objects.filter(pool=empty, external_id="x3").delete()
    assert "2 queries" in removal.plan(empty).goes

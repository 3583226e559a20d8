"""Every page of the URL map (tests/page_map.py), as each role, runs as many SQL statements on a pool ten
times larger: no page loops over a pool's rows. And no statement of any page makes PostgreSQL produce more
rows than the pool's tables hold together: joining several one-to-many relations at once (the campaign
index's queries x documents x raters x pairs, 45 million rows for a 4,099-document pool) fails here.
`tests/bench/bench_pages.py` measures the same pages' times on a realistic pool."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from judgments import services
from judgments.capture import demo
from judgments.exchange import uploads
from judgments.models import Document, JudgeRun, Judgment, ModelJudge, Pair, Pool, Query, Upload
from scoring import services as scoring
from tests.page_map import pages
from tests.plans import most_rows

pytestmark = pytest.mark.django_db
ROLES = ("site_admin", "engineer", "rater")
# Queries per unit of scale: 60 pairs on the small pool, so that every rater and the judge have the
# grades a per-assessor page needs to list them (scoring.assessors.MIN_GRADES) on both pools.
QUERIES = 10


def build_pool(name, scale, *, team, other_team, members, admin, django_user_model):
    """QUERIES x scale queries with 6 candidate documents each, every pair queued; the first rater grades
    every pair, the second and a model judge every other one each; 1 + scale configurations with two scored
    runs each, and one with a live endpoint, captured once; an upload waiting for its preview."""
    pool = Pool.objects.create(name=name, description=f"{scale}x", guidelines="Grade.")
    pool.members.add(*members)
    queries = Query.objects.bulk_create(
        Query(pool=pool, external_id=f"q{i}", text=f"query {i}") for i in range(QUERIES * scale)
    )
    documents = Document.objects.bulk_create(
        Document(pool=pool, external_id=f"d{q}-{j}", title="t", body="b")
        for q in range(QUERIES * scale)
        for j in range(6)
    )
    now = timezone.now()
    pairs = Pair.objects.bulk_create(
        Pair(pool=pool, query=queries[i // 6], document=d, queued_at=now) for i, d in enumerate(documents)
    )
    raters = [m for m in members if m.groups.filter(name="rater").exists()]
    judge_user = django_user_model.objects.create_user(username=f"judge-{name}")
    judge = ModelJudge.objects.create(user=judge_user, pool=pool, base_url="http://127.0.0.1:9/v1", model="m")
    JudgeRun.objects.create(judge=judge, status="succeeded", total=len(pairs) // 3, done=len(pairs) // 3)
    Judgment.objects.bulk_create(
        [Judgment(pair=p, rater=raters[0], grade=i % 5) for i, p in enumerate(pairs)]
        + [Judgment(pair=p, rater=raters[1], grade=(i + 1) % 5) for i, p in enumerate(pairs) if i % 2 == 0]
        + [Judgment(pair=p, rater=judge_user, grade=(i + 2) % 5) for i, p in enumerate(pairs) if i % 2 == 1]
    )
    from judgments.models import SearchConfiguration

    # 2 configurations on the small pool, 11 on the large one: a page must not loop over them either.
    for c in range(1 + scale):
        owner, shift = (team, 0) if c % 2 == 0 else (other_team, c % 6)
        configuration = SearchConfiguration.objects.create(pool=pool, team=owner, name=f"config{c:02d}")
        rankings = {
            q.external_id: [f"d{i}-{(j + shift) % 6}" for j in range(6)] for i, q in enumerate(queries)
        }
        services.record_run(configuration, rankings, source="api", submitted_by=admin)
        services.record_run(configuration, rankings, source="api", submitted_by=admin)  # an older run too
    live = demo.ensure_live_configuration(pool, team, admin)
    services.record_run(live, {queries[0].external_id: ["d0-1"]}, source="api", submitted_by=admin)
    from django.apps import apps

    CaptureJob = apps.get_model("judgments", "CaptureJob")
    CaptureJob.objects.create(configuration=live, endpoint=live.endpoint, trigger="web", status="succeeded")
    upload = Upload.objects.create(pool=pool, uploaded_by=admin, kind="queries", filename="queries.tsv")
    uploads.store_bytes(upload, b"".join(f"n{i}\tnew query {i}\n".encode() for i in range(QUERIES * scale)))
    scoring.rescore_pool(pool)
    return pool


def statements_per_page(client, pool) -> dict[tuple[str, int], int]:
    counts = {}
    for page in pages(pool):
        with CaptureQueriesContext(connection) as captured:
            status = client.get(page.url).status_code
        counts[(page.name, page.url.count("c="))] = len(captured) if status == 200 else status
    return counts


@pytest.fixture
def two_pools(
    pool, team, other_team, site_admin, engineer, other_engineer, rater, other_rater, django_user_model
):
    members = [engineer, other_engineer, rater, other_rater, site_admin]
    made = {
        scale: build_pool(
            f"pool-{scale}x",
            scale,
            team=team,
            other_team=other_team,
            members=members,
            admin=site_admin,
            django_user_model=django_user_model,
        )
        for scale in (1, 10)
    }
    return made[1], made[10]


@pytest.mark.parametrize("role", ROLES)
def test_no_page_runs_more_statements_on_a_pool_ten_times_larger(client, request, two_pools, role):
    small, large = two_pools
    client.force_login(request.getfixturevalue(role))
    before, after = statements_per_page(client, small), statements_per_page(client, large)
    assert before.keys() == after.keys()
    grew = {page: (before[page], after[page]) for page in before if before[page] != after[page]}
    assert not grew, f"statements (or status) on a 1x and a 10x pool, as {role}: {grew}"
    assert sum(1 for n in after.values() if n not in (403, 404, 405)) >= {
        "site_admin": 30,
        "engineer": 12,
    }.get(role, 5)


def test_no_statement_of_any_page_produces_more_rows_than_the_pool_holds(client, site_admin, two_pools):
    _, large = two_pools
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM judgments_query) + (SELECT count(*) FROM judgments_document)"
            " + (SELECT count(*) FROM judgments_pair) + (SELECT count(*) FROM judgments_judgment)"
            " + (SELECT count(*) FROM judgments_judgmentchange) + (SELECT count(*) FROM judgments_ranking)"
            " + (SELECT count(*) FROM scoring_cellscore)"
        )
        (held,) = cursor.fetchone()
        cursor.execute("ANALYZE")  # statistics, as a database that has settled has them
    client.force_login(site_admin)
    for page in pages(large):
        with CaptureQueriesContext(connection) as captured:
            status = client.get(page.url).status_code
        if status != 200:
            continue
        worst, sql = most_rows([q["sql"] for q in captured.captured_queries])
        assert worst <= held, f"{page.url}: a step of one statement made {worst} rows (tables: {held}): {sql}"

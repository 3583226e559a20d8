"""In a real browser (Debian's chromium through Playwright): an engineer opens the leaderboard and a
comparison and reads the figures of the database; a rater cannot open either. Scores here are computed
by the scoring service from real rankings and grades. Screenshots go to screenshots/ (git-ignored)."""

from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from judgments import services
from judgments.models import Document, Judgment, Pair, Query, SearchConfiguration
from scoring import services as scoring_services
from scoring.models import QueryScore
from scoring.templatetags.scoring_tags import pct, pvalue, score

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[3] / "screenshots"
N_QUERIES, N_DOCS = 30, 14


def shot(page, name):
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"compare-{name}.png"), full_page=True)


@pytest.fixture
def ranked_pool(pool, team, other_team, configuration, other_configuration, rater, other_rater):
    """30 queries x 14 documents with a hidden true relevance; bm25 ranks with much noise, dense with
    little, hybrid ranks documents nobody graded; bm25 has an older, noisier run. Grades by two raters; scores by the scoring service."""
    rng = np.random.default_rng(4)
    queries = Query.objects.bulk_create(
        [Query(pool=pool, external_id=f"b{i:02d}", text=f"browser query {i}", information_need=f"need {i}")
         for i in range(1, N_QUERIES + 1)]
    )  # fmt: skip
    documents = Document.objects.bulk_create(
        [Document(pool=pool, external_id=f"b{i:02d}-{j:02d}", title=f"Document {j} for query {i}", body="text")
         for i in range(1, N_QUERIES + 1) for j in range(1, N_DOCS + 1)]
    )  # fmt: skip
    truth = rng.integers(0, 5, size=(N_QUERIES, N_DOCS))
    hybrid = SearchConfiguration.objects.create(pool=pool, team=team, name="hybrid")
    runs = {"bm25": {}, "bm25-v2": {}, "dense": {}, "hybrid": {}}
    for i, query in enumerate(queries):
        ids = [d.external_id for d in documents[i * N_DOCS : (i + 1) * N_DOCS]]
        for name, noise in (("bm25", 3.0), ("bm25-v2", 2.5), ("dense", 0.8), ("hybrid", 1.5)):
            order = np.argsort(-(truth[i] + rng.normal(0, noise, N_DOCS)))
            runs[name][query.external_id] = [ids[j] for j in order[:10]]
        runs["hybrid"][query.external_id][3:5] = [f"x{i:02d}-a", f"x{i:02d}-b"]  # never graded
    pairs = []
    for i, query in enumerate(queries):
        for document in documents[i * N_DOCS : (i + 1) * N_DOCS]:
            pairs.append(Pair(pool=pool, query=query, document=document))
    Pair.objects.bulk_create(pairs)
    judgments = []
    for pair in Pair.objects.filter(pool=pool).select_related("document"):
        i, j = (int(x) - 1 for x in pair.document.external_id[1:].split("-"))
        judgments.append(Judgment(pair=pair, rater=rater, grade=int(truth[i, j])))
        judgments.append(
            Judgment(pair=pair, rater=other_rater, grade=int(max(0, truth[i, j] - rng.integers(0, 2))))
        )
    Judgment.objects.bulk_create(judgments)
    services.record_run(configuration, runs["bm25"], source="api", tag="bm25-v1")
    services.record_run(configuration, runs["bm25-v2"], source="api", tag="bm25-v2")
    services.record_run(other_configuration, runs["dense"], source="api", tag="dense-v1")
    services.record_run(hybrid, runs["hybrid"], source="api", tag="hybrid-v1")
    scoring_services.rescore_pool(pool)
    return pool


def current_rows(name, flavour="exp"):
    configuration = SearchConfiguration.objects.get(name=name)
    return list(QueryScore.objects.filter(run=configuration.current_run, flavor=flavour).order_by("query_id"))


def mean(rows, field, ranked_only=False):
    values = [getattr(r, field) for r in rows if r.has_ranking or not ranked_only]
    return sum(values) / len(values)


def test_engineer_reads_leaderboard_and_comparison_figures_of_the_database(
    ranked_pool, engineer, browser_login, live_server
):
    page = browser_login(engineer, viewport=(1400, 900))
    page.goto(f"{live_server.url}/pools/{ranked_pool.name}/")
    page.click("text=Leaderboard")
    page.wait_for_selector("table.leaderboard")
    assert page.title().startswith("Leaderboard")
    for name in ("bm25", "dense", "hybrid"):
        rows = current_rows(name)
        assert len(rows) == N_QUERIES  # the fixture pool's q1 and q2 have no grade: no row
        row = page.locator(f'tr[data-configuration="{name}"]')
        for k in (3, 10, 100):
            cell = row.locator(f'td[data-metric="ndcg@{k}"]')
            assert cell.locator(".score").inner_text() == score(mean(rows, f"ndcg_{k}"))
            assert (
                pct(mean(rows, f"judged_{k}", ranked_only=True)) in cell.locator(".judged-sub").inner_text()
            )
        assert (
            row.locator('td[data-metric="judged@10"]')
            .inner_text()
            .endswith(pct(mean(rows, "judged_10", ranked_only=True)))
        )
    bm25 = SearchConfiguration.objects.get(name="bm25")
    old_run, new_run = bm25.runs.order_by("id")
    change = mean(current_rows("bm25"), "ndcg_10") - mean(
        list(QueryScore.objects.filter(run=old_run, flavor="exp")), "ndcg_10"
    )
    assert page.locator('tr[data-configuration="bm25"] td').last.inner_text() == f"{change:+.3f}".replace(
        "-", "\u2212"
    )
    # hybrid ranks documents nobody graded: its judged@10 is flagged.
    assert (
        page.locator('tr[data-configuration="hybrid"] td[data-metric="judged@10"] .judged-low').count() == 1
    )
    shot(page, "leaderboard")

    # Client-side sorting: by name, then back by NDCG@10.
    page.click("th >> text=Configuration")
    assert page.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.configuration)") == [
        "bm25",
        "dense",
        "hybrid",
    ]
    page.locator("thead th").nth(5).locator("button").click()  # NDCG@10
    order = page.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.configuration)")
    means = {n: mean(current_rows(n), "ndcg_10") for n in ("bm25", "dense", "hybrid")}
    assert order in (sorted(means, key=means.get), sorted(means, key=means.get, reverse=True))

    # The trec flavour switch shows trec scores.
    page.click(".flavour-switch >> text=trec")
    page.wait_for_selector('.flavour-switch a.active:text("trec")')
    trec = current_rows("dense", "trec")
    assert page.locator(
        'tr[data-configuration="dense"] td[data-metric="ndcg@10"] .score'
    ).inner_text() == score(mean(trec, "ndcg_10"))
    page.click(".flavour-switch >> text=exp")

    # Compare bm25 (A) with dense (B).
    page.check('input[name="c"][value="bm25"]')
    page.check('input[name="c"][value="dense"]')
    page.click("text=Compare selected")
    page.wait_for_selector("#sentence")
    a_rows, b_rows = current_rows("bm25"), current_rows("dense")
    a = np.array([r.ndcg_10 for r in a_rows])
    b = np.array([r.ndcg_10 for r in b_rows])
    assert [r.query_id for r in a_rows] == [r.query_id for r in b_rows]
    metric_row = page.locator('tr[data-metric="ndcg@10"]')
    assert metric_row.locator('[data-field="n"]').inner_text() == str(len(a))
    assert metric_row.locator('[data-field="mean-a"]').inner_text() == score(a.mean())
    assert metric_row.locator('[data-field="mean-b"]').inner_text() == score(b.mean())
    assert metric_row.locator('[data-field="p-t"]').inner_text() == pvalue(scipy.stats.ttest_rel(b, a).pvalue)
    sentence = page.locator("#sentence").inner_text()
    assert "NDCG@10 (exp)" in sentence and f"{len(a)} queries" in sentence
    assert "dense beats bm25" in sentence
    shot(page, "a-vs-b")

    # Per-query rankings of the query where dense gains most.
    first = page.locator(".query-lists table").first.locator("tbody tr").first
    query_id = first.get_attribute("data-query")
    first.locator("a").click()
    page.wait_for_selector(".rankings")
    assert query_id in page.locator("h1").inner_text()
    query = Query.objects.get(pool=ranked_pool, external_id=query_id)
    stored = {s.run.configuration.name: s for s in QueryScore.objects.filter(query=query, flavor="exp")}
    row10 = page.locator('#query-scores tr[data-k="10"]')
    assert row10.locator('[data-field="ndcg"]').all_inner_texts() == [
        score(stored["bm25"].ndcg_10),
        score(stored["dense"].ndcg_10),
    ]
    assert page.locator('section[data-side="a"] li.ranked').count() == 10
    shot(page, "query")

    # Three configurations: the matrix.
    page.goto(f"{live_server.url}/pools/{ranked_pool.name}/compare/?c=bm25&c=dense&c=hybrid")
    page.wait_for_selector("#matrix")
    assert page.locator("#matrix tbody tr").count() == 3
    assert page.locator(".low-judged").count() == 1  # hybrid
    shot(page, "matrix")

    # A vs hybrid: the low-judged warning.
    page.goto(f"{live_server.url}/pools/{ranked_pool.name}/compare/?c=dense&c=hybrid")
    assert page.locator('.low-judged[data-configuration="hybrid"]').is_visible()

    configuration = SearchConfiguration.objects.get(name="bm25")
    page.goto(f"{live_server.url}/configurations/{configuration.pk}/scores/")
    page.wait_for_selector("#runs")
    assert page.locator("#runs tbody tr").count() == 2
    for run in configuration.runs.all():
        rows = list(QueryScore.objects.filter(run=run, flavor="exp"))
        cell = page.locator(f'#runs tr[data-run="{run.pk}"] td[data-metric="ndcg@10"]')
        assert cell.inner_text() == score(mean(rows, "ndcg_10"))
    shot(page, "history")


def test_phone_sized_comparison_is_readable(ranked_pool, engineer, browser_login, live_server):
    page = browser_login(engineer, viewport=(390, 844))
    page.goto(f"{live_server.url}/pools/{ranked_pool.name}/compare/?c=bm25&c=dense")
    page.wait_for_selector("#sentence")
    # Nothing but the scrollable tables may be wider than the screen.
    overflow = page.evaluate("document.documentElement.scrollWidth")
    assert overflow <= 390 + 1
    shot(page, "a-vs-b-phone")


def test_rater_cannot_open_leaderboard_or_comparison(ranked_pool, rater, browser_login, live_server):
    page = browser_login(rater)
    for path in (f"/pools/{ranked_pool.name}/leaderboard/", f"/pools/{ranked_pool.name}/compare/?c=bm25&c=dense",
                 f"/pools/{ranked_pool.name}/leaderboard.csv"):  # fmt: skip
        response = page.goto(f"{live_server.url}{path}")
        assert response.status in (403, 404), path
        assert page.locator("table.leaderboard").count() == 0
        assert "bm25" not in page.content()
        if path.endswith("leaderboard/"):
            shot(page, "rater-leaderboard")
    page.goto(f"{live_server.url}/pools/{ranked_pool.name}/")
    assert page.locator("text=Leaderboard").count() == 0
    shot(page, "rater-pool")


def test_admin_queues_the_unjudged_top_10_from_the_low_judged_warning(
    ranked_pool, site_admin, browser_login, live_server
):
    page = browser_login(site_admin, viewport=(1400, 900))
    page.goto(f"{live_server.url}/pools/{ranked_pool.name}/leaderboard/")
    assert page.locator("button:text('Recompute')").count() == 1
    page.goto(f"{live_server.url}/pools/{ranked_pool.name}/compare/?c=dense&c=hybrid")
    warning = page.locator('.low-judged[data-configuration="hybrid"]')
    assert "80%" in warning.inner_text()
    shot(page, "low-judged-admin")
    assert not Pair.objects.filter(pool=ranked_pool, queued_at__isnull=False).exists()
    warning.locator("button").click()
    page.wait_for_selector(".messages")
    assert "60 pair(s) newly queued" in page.locator(".messages").inner_text()
    assert page.url.endswith("/compare/?c=dense&c=hybrid")
    queued = Pair.objects.filter(pool=ranked_pool, queued_at__isnull=False)
    assert queued.count() == 60 and all(p.document.external_id.startswith("x") for p in queued)

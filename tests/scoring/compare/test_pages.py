"""Leaderboard, comparison, per-query and history pages: who may open them, and that every figure they
show equals the stored scores (and scipy's t-test)."""

import csv
import io
import re

import numpy as np
import pytest
import scipy.stats
from django.urls import reverse

from judgments import services
from judgments.models import Pair, SearchConfiguration
from scoring import comparison
from scoring.templatetags.scoring_tags import pct, pvalue, score

from .conftest import db_mean, paired_arrays, rows_of


def _get(client, user, url):
    client.force_login(user)
    return client.get(url)


def _compare_url(pool, *names, **params):
    query = "&".join([f"c={n}" for n in names] + [f"{k}={v}" for k, v in params.items()])
    return reverse("scoring:compare", args=[pool.name]) + "?" + query


def _row(html, configuration):
    match = re.search(rf'<tr data-configuration="{re.escape(configuration)}">(.*?)</tr>', html, re.S)
    assert match, f"no row for {configuration}"
    return match.group(1)


def _cell(row_html, attribute, value):
    match = re.search(rf'<td[^>]*{attribute}="{re.escape(value)}"[^>]*>(.*?)</td>', row_html, re.S)
    assert match, f"no cell {attribute}={value}"
    return match.group(0)


def _field(html, name):
    match = re.search(rf'data-field="{re.escape(name)}"[^>]*>([^<]*)<', html)
    assert match, f"no field {name}"
    return match.group(1).strip()


def _csv(response):
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return list(csv.DictReader(io.StringIO(content.decode())))


# --- Who may open the pages ---------------------------------------------------------------------------


def _urls(scored):
    pool = scored.pool
    names = "c=bm25&c=dense"
    return [
        reverse("scoring:leaderboard", args=[pool.name]),
        reverse("scoring:leaderboard-csv", args=[pool.name]),
        reverse("scoring:compare", args=[pool.name]) + "?" + names,
        reverse("scoring:compare", args=[pool.name]) + "?c=bm25&c=dense&c=hybrid",
        reverse("scoring:compare-csv", args=[pool.name]) + "?" + names + "&table=metrics",
        reverse("scoring:compare-csv", args=[pool.name]) + "?" + names + "&table=queries",
        reverse("scoring:compare-query", args=[pool.name]) + "?" + names + "&q=q1",
        reverse("scoring:configuration-history", args=[scored.bm25.pk]),
        reverse("scoring:configuration-history-csv", args=[scored.bm25.pk]),
    ]


@pytest.mark.parametrize("persona", ["rater", "outsider"])
def test_raters_and_outsiders_cannot_open_leaderboard_comparison_or_csv(client, scored, persona, request):
    user = request.getfixturevalue(persona)
    client.force_login(user)
    for url in _urls(scored):
        response = client.get(url)
        assert response.status_code in (403, 404), url
        assert b"bm25" not in response.content, url


def test_an_engineer_of_another_pool_cannot_open_them(client, scored, django_user_model):
    from django.contrib.auth.models import Group

    stranger = django_user_model.objects.create_user("sam_stranger", password="x")
    stranger.groups.add(Group.objects.get(name="engineer"))
    client.force_login(stranger)
    for url in _urls(scored):
        assert client.get(url).status_code == 404, url


def test_anonymous_users_are_sent_to_login(client, scored):
    for url in _urls(scored):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


def test_engineers_of_the_pool_and_admins_can_open_them(client, scored, engineer, other_engineer, site_admin):
    for user in (engineer, other_engineer, site_admin):
        client.force_login(user)
        for url in _urls(scored):
            assert client.get(url).status_code == 200, (user.username, url)


def test_pool_actions_link_the_leaderboard_for_engineers_only(client, scored, engineer, rater):
    url = reverse("judgments:pool-detail", args=[scored.pool.name])
    leaderboard = reverse("scoring:leaderboard", args=[scored.pool.name])
    assert leaderboard in _get(client, engineer, url).content.decode()
    assert leaderboard not in _get(client, rater, url).content.decode()


# --- Leaderboard ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["exp", "trec"])
def test_leaderboard_shows_the_stored_means_in_the_chosen_flavour(client, scored, engineer, flavour):
    url = reverse("scoring:leaderboard", args=[scored.pool.name]) + f"?flavour={flavour}"
    html = _get(client, engineer, url).content.decode()
    for name, run in (("bm25", scored.bm25_run), ("dense", scored.dense_run), ("hybrid", scored.hybrid_run)):
        row = _row(html, name)
        for k in (3, 5, 10, 100):
            cell = _cell(row, "data-metric", f"ndcg@{k}")
            mean = db_mean(run, f"ndcg_{k}", flavour)
            assert float(re.search(r'data-value="([^"]+)"', cell).group(1)) == pytest.approx(mean, abs=1e-12)
            assert f'<span class="score">{mean:.3f}</span>' in cell
            judged = db_mean(run, f"judged_{k}", flavour, ranked_only=True)
            assert f"judged@{k} {pct(judged)}" in cell
        j10 = _cell(row, "data-metric", "judged@10")
        assert pct(db_mean(run, "judged_10", flavour, ranked_only=True)) in j10
        assert f">{len(rows_of(run, flavour))}" in row
    # Every score column names its flavour.
    assert html.count(f'<span class="flavour-tag">{flavour}</span></th>') >= 5
    assert "(3 unranked → 0)" in _row(html, "dense")
    change = db_mean(scored.bm25_run, "ndcg_10", flavour) - db_mean(scored.bm25_old_run, "ndcg_10", flavour)
    assert f"{change:+.3f}".replace("-", "\u2212") in _row(html, "bm25")
    assert "first run" in _row(html, "dense")


def test_leaderboard_lists_configurations_by_ndcg10(client, scored, engineer):
    html = _get(client, engineer, reverse("scoring:leaderboard", args=[scored.pool.name])).content.decode()
    order = re.findall(r'<tr data-configuration="([^"]+)">', html)
    means = {n: db_mean(r, "ndcg_10") for n, r in (("bm25", scored.bm25_run), ("dense", scored.dense_run),
                                                    ("hybrid", scored.hybrid_run))}  # fmt: skip
    assert order == sorted(means, key=lambda n: -means[n])


def test_leaderboard_with_unknown_flavour_falls_back_to_the_default_with_a_warning(client, scored, engineer):
    html = _get(
        client, engineer, reverse("scoring:leaderboard", args=[scored.pool.name]) + "?flavour=zzz"
    ).content
    assert b"Unknown flavour" in html
    assert b'class="active" title' in html or b'class="active"' in html


def test_leaderboard_csv_holds_the_stored_means(client, scored, engineer):
    response = _get(
        client, engineer, reverse("scoring:leaderboard-csv", args=[scored.pool.name]) + "?flavour=trec"
    )
    assert response["Content-Type"].startswith("text/csv")
    rows = {r["configuration"]: r for r in _csv(response)}
    for name, run in (("bm25", scored.bm25_run), ("dense", scored.dense_run), ("hybrid", scored.hybrid_run)):
        assert rows[name]["flavor"] == "trec"
        assert int(rows[name]["run_id"]) == run.pk
        assert float(rows[name]["ndcg@10"]) == pytest.approx(db_mean(run, "ndcg_10", "trec"), abs=1e-12)
        assert float(rows[name]["judged@100"]) == pytest.approx(
            db_mean(run, "judged_100", "trec", ranked_only=True), abs=1e-12
        )
    assert int(rows["dense"]["queries_without_ranking"]) == 3


def test_csv_text_cells_cannot_run_as_spreadsheet_formulas(client, scored, engineer):
    scored.hybrid.name = '=HYPERLINK("http://evil.example","x")'
    scored.hybrid.save()
    response = _get(
        client, engineer, reverse("scoring:leaderboard-csv", args=[scored.pool.name]) + "?flavour=trec"
    )
    rows = {r["configuration"]: r for r in _csv(response)}
    assert '\'=HYPERLINK("http://evil.example","x")' in rows
    assert "bm25" in rows  # plain names untouched
    # negative numbers are numbers, not formulas: the change since the previous run of bm25 is one
    changes = [float(r["change_ndcg@10"]) for r in rows.values() if r.get("change_ndcg@10")]
    assert changes, rows["bm25"].keys()
    from judgments.exchange.formats.spreadsheet import neutralise

    assert [neutralise(v) for v in ("-0.031", "+1e-3", "-inf", "-x", "@sum", "\tA", "a=b", 0.5)] == [
        "-0.031",
        "+1e-3",
        "-inf",
        "'-x",
        "'@sum",
        "'\tA",
        "a=b",
        0.5,
    ]


def test_leaderboard_never_recomputes_scores(client, scored, engineer, monkeypatch):
    from scoring import grades as scoring_grades
    from scoring import services as scoring_services

    def forbidden(*args, **kwargs):
        raise AssertionError("a page load must not recompute scores")

    for name in ("rescore_pool", "rescore_queries", "rescore_run"):
        monkeypatch.setattr(scoring_services, name, forbidden)
    monkeypatch.setattr(scoring_grades, "pool_grades", forbidden)
    assert _get(client, engineer, reverse("scoring:leaderboard", args=[scored.pool.name])).status_code == 200
    assert _get(client, engineer, _compare_url(scored.pool, "bm25", "dense")).status_code == 200


def test_recompute_button_for_admins_only(client, scored, engineer, site_admin):
    url = reverse("scoring:leaderboard", args=[scored.pool.name])
    action = f'action="{reverse("scoring:recompute", args=[scored.pool.name])}"'
    admin_html = _get(client, site_admin, url).content.decode()
    assert action in admin_html and ">Recompute</button>" in admin_html
    engineer_html = _get(client, engineer, url).content.decode()
    assert action not in engineer_html and ">Recompute</button>" not in engineer_html


# --- A vs B ---------------------------------------------------------------------------------------------


def test_comparison_page_figures_equal_the_database_and_scipy(client, scored, engineer):
    html = _get(client, engineer, _compare_url(scored.pool, "bm25", "dense")).content.decode()
    for k in (3, 5, 10, 100):
        a, b, common = paired_arrays(scored.bm25_run, scored.dense_run, f"ndcg_{k}")
        row = re.search(rf'<tr data-metric="ndcg@{k}"[^>]*>(.*?)</tr>', html, re.S).group(1)
        assert _field(row, "n") == str(len(common)) == "40"
        assert _field(row, "mean-a") == score(a.mean())
        assert _field(row, "mean-b") == score(b.mean())
        assert _field(row, "diff") == f"{(b - a).mean():+.3f}".replace("-", "\u2212")
        assert _field(row, "p-t") == pvalue(scipy.stats.ttest_rel(b, a).pvalue)
        d = b - a
        assert _field(row, "wtl") == f"{(d > 1e-12).sum()} / {(abs(d) <= 1e-12).sum()} / {(d < -1e-12).sum()}"
    result = comparison.compare_pair(scored.bm25, scored.dense, "exp")
    row10 = re.search(r'<tr data-metric="ndcg@10"[^>]*>(.*?)</tr>', html, re.S).group(1)
    assert _field(row10, "p-randomization") == pvalue(result.headline.result.p_randomization)
    sentence = re.search(r'<p class="verdict[^"]*" id="sentence">(.*?)</p>', html, re.S).group(1)
    assert sentence == result.sentence().replace("'", "&#x27;")
    assert "dense beats bm25 on NDCG@10 (exp)" in sentence
    assert _field(html, "judged-a") == pct(db_mean(scored.bm25_run, "judged_10", ranked_only=True))
    assert "<svg" in html and "difference-chart" in html and "line-chart" in html


def test_comparison_page_shows_the_chosen_metric_as_headline(client, scored, engineer):
    html = _get(client, engineer, _compare_url(scored.pool, "bm25", "dense", metric="ap")).content.decode()
    assert 'data-metric="ap" class="headline-row"' in html
    a, b, _ = paired_arrays(scored.bm25_run, scored.dense_run, "ap")
    assert _field(html, "mean-a") == score(a.mean())


def test_comparison_lists_biggest_wins_and_losses_linking_to_the_query(client, scored, engineer):
    html = _get(client, engineer, _compare_url(scored.pool, "bm25", "dense")).content.decode()
    a, b, common = paired_arrays(scored.bm25_run, scored.dense_run, "ndcg_10")
    best = common[int(np.argmax(b - a))]
    worst = common[int(np.argmin(b - a))]
    external = {q.pk: q.external_id for q in scored.queries}
    assert f'data-query="{external[best]}"' in html and f'data-query="{external[worst]}"' in html
    assert f"q={external[best]}" in html


def test_low_judged_warning_offers_the_queue_action_to_admins_only(client, scored, engineer, site_admin):
    url = _compare_url(scored.pool, "bm25", "hybrid")
    html = _get(client, engineer, url).content.decode()
    assert 'class="warning-box low-judged" data-configuration="hybrid"' in html
    assert (
        'data-configuration="bm25"'
        not in re.sub(r"<tr.*?</tr>", "", html, flags=re.S).split("warning-box")[0]
    )
    assert reverse("scoring:queue-unjudged", args=[scored.hybrid.pk]) not in html
    admin_html = _get(client, site_admin, url).content.decode()
    assert reverse("scoring:queue-unjudged", args=[scored.hybrid.pk]) in admin_html
    assert "Queue its unjudged top 10 for rating" in admin_html


def test_compare_csv_tables_hold_the_database_figures(client, scored, engineer):
    base = reverse("scoring:compare-csv", args=[scored.pool.name]) + "?c=bm25&c=dense"
    metrics = {r["metric"]: r for r in _csv(_get(client, engineer, base + "&table=metrics"))}
    assert set(metrics) >= {"ndcg@10", "p@10", "recall@100", "mrr", "ap"}
    for metric, field in (("ndcg@10", "ndcg_10"), ("mrr", "mrr")):
        a, b, _ = paired_arrays(scored.bm25_run, scored.dense_run, field)
        assert float(metrics[metric]["mean_a"]) == pytest.approx(a.mean(), abs=1e-12)
        assert float(metrics[metric]["p_t"]) == pytest.approx(scipy.stats.ttest_rel(b, a).pvalue, rel=1e-9)
    queries = _csv(_get(client, engineer, base + "&table=queries"))
    a, b, common = paired_arrays(scored.bm25_run, scored.dense_run, "ndcg_10")
    assert len(queries) == len(common)
    diffs = [float(r["difference_b_minus_a"]) for r in queries]
    assert diffs == sorted(diffs)
    external = {q.external_id: q.pk for q in scored.queries}
    stored_a, stored_b = rows_of(scored.bm25_run), rows_of(scored.dense_run)
    for r in queries:
        pk = external[r["query"]]
        assert float(r["a:bm25"]) == stored_a[pk].ndcg_10 and float(r["b:dense"]) == stored_b[pk].ndcg_10
    cutoffs = _csv(_get(client, engineer, base + "&table=cutoffs"))
    got = {(r["configuration"], r["metric"]): float(r["mean"]) for r in cutoffs}
    assert got[("dense", "ndcg@5")] == pytest.approx(db_mean(scored.dense_run, "ndcg_5"), abs=1e-12)


def test_compare_with_one_configuration_shows_the_picker(client, scored, engineer):
    html = _get(client, engineer, _compare_url(scored.pool, "bm25")).content.decode()
    assert 'class="card form-stack pick-form"' in html and 'value="hybrid"' in html


def test_compare_with_an_unknown_or_foreign_configuration_is_404(client, scored, engineer, other_team):
    from judgments.models import Pool

    other_pool = Pool.objects.create(name="other-pool")
    other_pool.members.add(engineer)
    SearchConfiguration.objects.create(pool=other_pool, team=other_team, name="foreign")
    client.force_login(engineer)
    assert client.get(_compare_url(scored.pool, "bm25", "nope")).status_code == 404
    assert client.get(_compare_url(scored.pool, "bm25", "foreign")).status_code == 404


def test_compare_with_a_configuration_without_run_explains_why(client, scored, engineer, team):
    SearchConfiguration.objects.create(pool=scored.pool, team=team, name="norun")
    response = _get(client, engineer, _compare_url(scored.pool, "bm25", "norun"))
    assert response.status_code == 409 and b"No run yet for norun" in response.content


# --- More than two: matrix ------------------------------------------------------------------------------


def test_matrix_page_shows_every_pair_with_holm_corrected_significance(client, scored, engineer):
    html = _get(client, engineer, _compare_url(scored.pool, "bm25", "dense", "hybrid")).content.decode()
    matrix = comparison.pairwise_matrix([scored.bm25, scored.dense, scored.hybrid], "exp")
    for cell in matrix.cells.values():
        row_html = _row(html, cell.row.name)
        td = _cell(row_html, "data-column", cell.column.name)
        assert float(re.search(r'data-diff="([^"]+)"', td).group(1)) == pytest.approx(cell.diff, abs=1e-12)
        assert float(re.search(r'data-p-holm="([^"]+)"', td).group(1)) == pytest.approx(cell.p_holm)
        assert ("significant" in td.split(">")[0]) == (cell.p_holm < 0.05)
        assert f"p<sub>Holm</sub> {pvalue(cell.p_holm)}" in td
    csv_rows = _csv(_get(client, engineer, reverse("scoring:compare-csv", args=[scored.pool.name])
                         + "?c=bm25&c=dense&c=hybrid&table=matrix"))  # fmt: skip
    assert len(csv_rows) == 6
    for r in csv_rows:
        a, b, _ = paired_arrays(
            {"bm25": scored.bm25_run, "dense": scored.dense_run, "hybrid": scored.hybrid_run}[r["column"]],
            {"bm25": scored.bm25_run, "dense": scored.dense_run, "hybrid": scored.hybrid_run}[r["row"]],
            "ndcg_10",
        )
        assert float(r["difference_row_minus_column"]) == pytest.approx((b - a).mean(), abs=1e-12)
        assert float(r["p_t"]) == pytest.approx(scipy.stats.ttest_rel(b, a).pvalue, rel=1e-9)


# --- One query, history, queue ------------------------------------------------------------------------


def test_query_page_shows_both_rankings_grades_and_stored_scores(
    client, pool, configuration, other_configuration, engineer, rater
):
    pool.share_rankings = True  # dense is another team's: its ranking shows only in a sharing pool
    pool.save()
    services.record_run(configuration, {"q1": ["d1", "d2", "d3"], "q2": ["d2"]}, source="api")
    services.record_run(other_configuration, {"q1": ["d3", "d1"], "q2": ["d1"]}, source="api")
    query = pool.queries.get(external_id="q1")
    pair = Pair.objects.create(pool=pool, query=query, document=pool.documents.get(external_id="d1"))
    services.record_judgment(pair, rater, grade=3)
    from scoring import services as scoring_services

    scoring_services.rescore_pool(pool)  # on_commit does not fire inside a test transaction
    url = reverse("scoring:compare-query", args=[pool.name]) + "?c=bm25&c=dense&q=q1"
    html = _get(client, engineer, url).content.decode()
    stored = {
        s.run.configuration.name: s for s in comparison.QueryScore.objects.filter(query=query, flavor="exp")
    }
    for side in ("a", "b"):
        section = re.search(
            rf'<section class="ranking" data-side="{side}">(.*?)</section>', html, re.S
        ).group(1)
        assert 'data-doc="d1" data-grade="3.0"' in section
        assert 'class="ranked g3"' in section
    section_a = re.search(r'<section class="ranking" data-side="a">(.*?)</section>', html, re.S).group(1)
    assert 'class="ranked unjudged" data-doc="d2"' in section_a
    row = re.search(r'<tr data-k="10">(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'data-field="ndcg">([^<]+)<', row) == [
        score(stored["bm25"].ndcg_10),
        score(stored["dense"].ndcg_10),
    ]
    assert re.findall(r'data-field="judged"[^>]*>([^<]+)<', row) == [pct(stored["bm25"].judged_10),
                                                                       pct(stored["dense"].judged_10)]  # fmt: skip


def test_query_page_for_an_unknown_query_is_404(client, scored, engineer):
    url = reverse("scoring:compare-query", args=[scored.pool.name]) + "?c=bm25&c=dense&q=nope"
    assert _get(client, engineer, url).status_code == 404


def test_history_page_and_csv_show_every_run(client, scored, engineer):
    html = _get(
        client, engineer, reverse("scoring:configuration-history", args=[scored.bm25.pk])
    ).content.decode()
    for run in (scored.bm25_old_run, scored.bm25_run):
        row = re.search(rf'<tr data-run="{run.pk}">(.*?)</tr>', html, re.S).group(1)
        assert score(db_mean(run, "ndcg_10")) in _cell(row, "data-metric", "ndcg@10")
    assert "line-chart" in html
    rows = _csv(_get(client, engineer, reverse("scoring:configuration-history-csv", args=[scored.bm25.pk])))
    assert [int(r["run_id"]) for r in rows] == [scored.bm25_old_run.pk, scored.bm25_run.pk]
    assert float(rows[0]["ap"]) == pytest.approx(db_mean(scored.bm25_old_run, "ap"), abs=1e-12)


def test_only_admins_may_queue_a_configurations_unjudged_top_k(
    client, pool, configuration, engineer, site_admin
):
    services.record_run(configuration, {"q1": ["d1", "d2", "d3"], "q2": ["d3", "d1"]}, source="api")
    url = reverse("scoring:queue-unjudged", args=[configuration.pk])
    client.force_login(engineer)
    assert client.post(url, {"k": 2}).status_code == 403
    assert not Pair.objects.filter(pool=pool, queued_at__isnull=False).exists()
    client.force_login(site_admin)
    response = client.post(url, {"k": 2, "next": "https://evil.example/"})
    assert response.status_code == 302
    assert response["Location"] == reverse("scoring:leaderboard", args=[pool.name])
    queued = set(Pair.objects.filter(pool=pool, queued_at__isnull=False).values_list("query__external_id",
                                                                                      "document__external_id"))  # fmt: skip
    assert queued == {("q1", "d1"), ("q1", "d2"), ("q2", "d3"), ("q2", "d1")}
    assert client.get(url).status_code == 405


@pytest.mark.parametrize("spelling", ["flavor", "flavour"])
def test_pages_downloads_and_the_api_take_either_spelling_and_files_write_flavor(
    client, scored, engineer, spelling
):
    pool = scored.pool.name
    page = _get(client, engineer, reverse("scoring:leaderboard", args=[pool]) + f"?{spelling}=trec")
    assert page.context["flavour"] == "trec"
    for url in (
        reverse("scoring:leaderboard-csv", args=[pool]),
        reverse("scoring:scores-download", args=[pool, "csv"]),
    ):
        rows = _csv(_get(client, engineer, url + f"?{spelling}=trec"))
        assert rows and {r["flavor"] for r in rows} == {"trec"}, url
    token_rows = client.get(f"/api/scores/?{spelling}=trec").json()
    results = token_rows["results"] if isinstance(token_rows, dict) else token_rows
    assert results and {r["flavor"] for r in results} == {"trec"}

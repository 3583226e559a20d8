"""The trust page's figures on the real database, checked against scikit-learn, krippendorff and scipy on
the same data; the orderings against the stored leaderboard; sending far-apart pairs to adjudication;
who may see it; and a browser test with a screenshot."""

import random
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from judgments import services as judgment_services
from judgments.judges.services import create_or_update_judge
from judgments.models import AdjudicationRequest, Document, Judgment, Pair, Query, SearchConfiguration
from judgments.rating.adjudication import disagreement_ids
from scoring import trust
from scoring.leaderboard import configuration_means
from scoring.services import rescore_pool

SCREENSHOTS = Path(__file__).resolve().parents[1] / "screenshots"


@pytest.fixture
def judged(pool, rater, other_rater, team, engineer):
    """6 queries x 8 documents; two humans grade every pair of q0-q4 (the second sometimes differs), a
    judge grades every human-graded pair (noisy: often off by one, sometimes far) and some of q5; four
    configurations with one run each."""
    rng = random.Random(7)
    model = create_or_update_judge(pool, "gpt-judge", base_url="http://127.0.0.1:9/v1", model="m")[0]
    documents = [
        Document.objects.create(pool=pool, external_id=f"doc{d}", title=f"T{d}", body="b") for d in range(8)
    ]
    queries = [Query.objects.create(pool=pool, external_id=f"qq{q}", text=f"query {q}") for q in range(6)]
    truth = {}
    judgments = []
    for q, query in enumerate(queries):
        for document in documents:
            pair = Pair.objects.create(pool=pool, query=query, document=document)
            g = rng.randint(0, 4)
            truth[pair.pk] = g
            if q < 5:
                judgments.append(Judgment(pair=pair, rater=rater, grade=g))
                if rng.random() < 0.5:
                    judgments.append(
                        Judgment(
                            pair=pair, rater=other_rater, grade=min(4, max(0, g + rng.choice((-1, 0, 1))))
                        )
                    )
            if q < 5 or rng.random() < 0.5:
                noise = rng.choice((0, 0, 0, 1, -1, 1, 3, -3))
                judgments.append(
                    Judgment(
                        pair=pair, rater=model.user, grade=min(4, max(0, g + noise)), note=f"because {g}"
                    )
                )
    Judgment.objects.bulk_create(judgments)
    names = [d.external_id for d in documents]
    for i, name in enumerate(["bm25", "dense", "hybrid", "rerank"]):
        configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=name)
        order = names[:]
        random.Random(i).shuffle(order)
        judgment_services.record_run(
            configuration, {q.external_id: order[: 6 + i % 3] for q in queries}, source="api"
        )
    return model


def reference_arrays(model):
    """The humans' combined (mean) grade rounded half up, and the judge's, over the pairs both graded."""
    humans, judge = {}, {}
    for j in Judgment.objects.filter(pair__pool=model.pool, cant_judge=False):
        if j.rater_id == model.user_id:
            judge[j.pair_id] = j.grade
        else:
            humans.setdefault(j.pair_id, []).append(j.grade)
    common = sorted(set(humans) & set(judge))
    # Rounded half up; a negative mean (a distractor to scoring) is -1.
    h = np.array([-1 if np.mean(humans[p]) < 0 else int(np.floor(np.mean(humans[p]) + 0.5)) for p in common])
    m = np.array([judge[p] for p in common])
    return h, m, humans, common


def test_agreement_figures_match_sklearn_and_krippendorff(judged):
    result = trust.judge_trust(judged)
    h, m, humans, common = reference_arrays(judged)
    assert result.n_pairs == len(common) == 40
    assert result.exact == pytest.approx(np.mean(h == m))
    assert result.within_one == pytest.approx(np.mean(np.abs(h - m) <= 1))
    assert result.kappa == pytest.approx(cohen_kappa_score(h, m, weights="quadratic", labels=[0, 1, 2, 3, 4]))
    assert result.alpha == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([h, m]).astype(float),
            level_of_measurement="ordinal",
            value_domain=[0, 1, 2, 3, 4],
        )
    )
    assert result.confusion == confusion_matrix(h, m, labels=[0, 1, 2, 3, 4]).tolist()
    # The humans among themselves, on the pairs two of them graded.
    two = [humans[p] for p in common if len(humans[p]) == 2]
    matrix = np.array(two, dtype=float).T
    assert result.n_alpha_humans == len(two)
    assert result.alpha_humans == pytest.approx(
        krippendorff.alpha(
            reliability_data=matrix, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3, 4]
        )
    )
    assert 0 < result.exact < 1 and result.n_far > 0


@pytest.mark.parametrize("seed", range(6))
def test_kendall_tau_b_matches_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    x, y = rng.integers(0, 4, n).astype(float), rng.integers(0, 4, n).astype(float)
    expected = kendalltau(x, y).statistic
    got = trust.kendall_tau_b(x, y)
    assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected)


def test_kendall_tau_b_edge_cases():
    assert trust.kendall_tau_b([1, 2, 3], [1, 2, 3]) == 1.0
    assert trust.kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    assert np.isnan(trust.kendall_tau_b([1], [2]))
    assert np.isnan(trust.kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_orderings_match_the_leaderboard_and_tau_matches_scipy(judged):
    d = trust.judge_trust(judged).decisions
    assert d is not None and len(d.placings) == 4 and d.n_queries == 5
    # The judge graded every human-graded pair, and humans only q0-q4: the humans' means, computed here
    # in memory, are the stored leaderboard's (exp flavour, grade source humans).
    rescore_pool(judged.pool)
    board = {
        m.configuration.name: m.current.means["ndcg@10"] for m in configuration_means(judged.pool, "exp")
    }
    assert {p.configuration.name: p.human for p in d.placings} == pytest.approx(board)
    assert d.tau == pytest.approx(
        kendalltau([p.human for p in d.placings], [p.judge for p in d.placings]).statistic
    )
    expected_flips = {
        frozenset((a.configuration.name, b.configuration.name))
        for a in d.placings
        for b in d.placings
        if a.human > b.human and a.judge < b.judge
    }
    assert {frozenset((a.configuration.name, b.configuration.name)) for a, b in d.flips} == expected_flips
    assert [p.human_rank for p in d.placings] == [1, 2, 3, 4]
    assert sorted(p.judge_rank for p in d.placings) == [1, 2, 3, 4]


def test_a_judge_that_copies_the_humans_agrees_fully(pool, rater, configuration):
    model = create_or_update_judge(pool, "copycat", base_url="http://127.0.0.1:9/v1", model="m")[0]
    for docid, grade in {"d1": 0, "d2": 3, "d3": 4}.items():
        pair = Pair.objects.create(pool=pool, query=Query.objects.get(pool=pool, external_id="q1"),
                                   document=Document.objects.get(pool=pool, external_id=docid))  # fmt: skip
        judgment_services.record_judgment(pair, rater, grade=grade)
        judgment_services.record_judgment(pair, model.user, grade=grade)
    judgment_services.record_run(configuration, {"q1": ["d1", "d2", "d3"]}, source="api")
    result = trust.judge_trust(model)
    assert (result.exact, result.kappa, result.alpha, result.n_far) == (1.0, 1.0, 1.0, 0)
    assert (
        result.decisions.placings[0].human == result.decisions.placings[0].judge
        and not result.decisions.flips
    )


def test_a_negative_human_grade_is_a_distractor_not_rounded_up_to_0(pool, rater, other_rater, configuration):
    """Humans -1 and 0 make -0.5: a distractor to scoring (and in the rounded exports), so a judge that
    says -1 agrees with them."""
    judgment_services.set_distractors(pool, True)
    model = create_or_update_judge(pool, "strict", base_url="http://127.0.0.1:9/v1", model="m")[0]
    query = Query.objects.get(pool=pool, external_id="q1")
    for docid, humans, judge in [("d1", (-1, 0), -1), ("d2", (3, 3), 3)]:
        pair = Pair.objects.create(
            pool=pool, query=query, document=Document.objects.get(pool=pool, external_id=docid)
        )
        for person, grade in zip((rater, other_rater), humans, strict=True):
            judgment_services.record_judgment(pair, person, grade=grade)
        judgment_services.record_judgment(pair, model.user, grade=judge)
    judgment_services.record_run(configuration, {"q1": ["d1", "d2"]}, source="api")
    result = trust.judge_trust(model)
    assert result.exact == 1.0
    assert result.confusion[0][0] == 1  # humans -1 (the first row), judge -1 (the first column)


def test_far_pairs_go_to_adjudication_and_show_among_the_disagreements(client, site_admin, judged):
    pool = judged.pool
    assert disagreement_ids(pool) == []  # humans only: the two humans are never 2 apart
    result = trust.judge_trust(judged)
    client.force_login(site_admin)
    response = client.post(f"/pools/{pool.name}/judges/gpt-judge/trust/adjudicate/")
    assert response.status_code == 302
    far = trust.far_pairs(judged)
    assert len(far) == result.n_far_unsent == AdjudicationRequest.objects.count() > 0
    assert set(disagreement_ids(pool)) == set(far)
    page = client.get(f"/pools/{pool.name}/disagreements/").content.decode()
    assert "Sent to adjudication: gpt-judge gave" in page and '<span class="badge">model</span>' in page
    # Sent again: nothing new; a settled pair leaves the count.
    client.post(f"/pools/{pool.name}/judges/gpt-judge/trust/adjudicate/")
    assert AdjudicationRequest.objects.count() == len(far)
    judgment_services.set_final_grade(Pair.objects.get(pk=next(iter(far))), 2, site_admin)
    assert trust.judge_trust(judged).n_far_unsent == 0


@pytest.mark.parametrize(
    ("persona", "status"), [("site_admin", 200), ("engineer", 403), ("rater", 403), ("outsider", 403)]
)
def test_only_admins_see_the_trust_page(client, request, judged, persona, status):
    client.force_login(request.getfixturevalue(persona))
    assert client.get("/pools/robust/judges/gpt-judge/trust/").status_code == status
    assert client.post("/pools/robust/judges/gpt-judge/trust/adjudicate/").status_code == (
        302 if status == 200 else status
    )
    assert AdjudicationRequest.objects.exists() == (status == 200)


def test_the_page_shows_the_figures(client, site_admin, judged):
    client.force_login(site_admin)
    page = client.get("/pools/robust/judges/gpt-judge/trust/").content.decode()
    result = trust.judge_trust(judged)
    assert f'id="kappa">{result.kappa:.3f}<' in page and f'id="alpha">{result.alpha:.3f}<' in page
    assert f'id="tau">{result.decisions.tau:.3f}<' in page.replace("\u2212", "-")
    assert 'id="confusion"' in page and "Send " in page
    assert client.get("/pools/robust/judges/nobody/trust/").status_code == 404


def test_trust_page_in_a_browser(browser_login, site_admin, judged):
    page = browser_login(site_admin, viewport=(1366, 1100))
    page.goto(page.url.split("/accounts")[0] + "/pools/robust/judges/gpt-judge/trust/")
    assert page.locator("h1").inner_text() == "Can we trust gpt-judge?"
    assert page.locator("#n-pairs").inner_text() == "40"
    assert page.locator("#confusion tbody tr").count() == 6
    assert page.locator("#decisions tbody tr").count() == 4
    assert page.locator("#verdict").inner_text().startswith("Not yet: ")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "judge-trust.png"), full_page=True)
    page.get_by_role("button", name="Send").first.click()
    page.wait_for_load_state("networkidle")
    assert "to adjudication" in page.locator(".messages").inner_text()
    assert AdjudicationRequest.objects.exists()


def test_with_distractors_the_confusion_matrix_grows_and_minus_1_is_the_lowest_grade(
    client, site_admin, judged
):
    judgment_services.set_distractors(judged.pool, True)
    humans = Judgment.objects.filter(pair__pool=judged.pool).exclude(rater=judged.user).order_by("pk")
    Judgment.objects.filter(pk__in=[j.pk for j in humans[:12:2]]).update(grade=-1)
    mine = Judgment.objects.filter(rater=judged.user).order_by("pk")
    Judgment.objects.filter(pk__in=[j.pk for j in mine[:10:3]]).update(grade=-1)
    result = trust.judge_trust(judged)
    h, m, _, common = reference_arrays(judged)
    assert (h == -1).any() and (m == -1).any()
    labels = [-1, 0, 1, 2, 3, 4]
    assert result.kappa == pytest.approx(cohen_kappa_score(h, m, weights="quadratic", labels=labels))
    assert result.alpha == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([h, m]).astype(float),
            level_of_measurement="ordinal",
            value_domain=labels,
        )
    )
    assert result.confusion == confusion_matrix(h, m, labels=labels).tolist()
    client.force_login(site_admin)
    page = client.get("/pools/robust/judges/gpt-judge/trust/").content.decode()
    assert '<th title="Distractor">-1</th>' in page


def test_the_page_says_not_yet_for_a_noisy_judge(client, site_admin, judged):
    client.force_login(site_admin)
    page = client.get("/pools/robust/judges/gpt-judge/trust/").content.decode()
    expected = trust.verdict(trust.judge_trust(judged))
    assert not expected.trusted
    assert f'<p class="verdict not-yet" id="verdict">{expected.text}</p>'.replace("'", "&#x27;") in page

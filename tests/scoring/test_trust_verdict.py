"""The trust page's verdict: the rules of docs/judges.md on hand-made figures, and the sentence on the
page for a noisy judge and for one that grades as the humans do."""

import math

import pytest

from judgments import services as judgment_services
from judgments.judges.services import create_or_update_judge
from judgments.models import Document, Pair, Query
from scoring import trust


def figures(n_pairs=200, kappa=0.9, alpha=0.9, alpha_humans=0.85, flips=(), tau=1.0, winner_kept=True):
    placings = [trust.Placing(f"c{i}", i, 0.9 - i / 10, 0.9 - i / 10, i + 1, i + 1) for i in range(3)]
    if not winner_kept:
        placings[0].judge_rank, placings[1].judge_rank = 2, 1
    decisions = trust.Decisions(placings, tau, list(flips), 10)
    return trust.Trust(
        judge=None,
        n_graded=n_pairs,
        n_cant=0,
        n_pairs=n_pairs,
        kappa=kappa,
        alpha=alpha,
        alpha_humans=alpha_humans,
        decisions=decisions,
    )


def test_a_judge_as_good_as_the_humans_is_trusted():
    verdict = trust.verdict(figures(kappa=0.912, alpha=0.9, alpha_humans=0.85))
    assert verdict.trusted
    assert (
        verdict.text == "Yes: κ 0.91, above the humans' own α 0.85, and no configuration pair flips (τ 1.00)."
    )


def test_chance_agreement_and_a_changed_winner_are_both_named():
    flip = (object(), object())
    verdict = trust.verdict(figures(kappa=0.0, flips=[flip], tau=-1 / 3, winner_kept=False))
    assert not verdict.trusted
    assert verdict.text == (
        "Not yet: agrees with the humans no better than chance (κ 0.00) and would change the winner (τ −0.33)."
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"n_pairs": 12}, "Not yet: only 12 pairs both graded; judge at least 30"),
        ({"kappa": 0.5}, "Not yet: agrees with the humans only in part (κ 0.50, below 0.67)."),
        ({"kappa": 0.8, "alpha": 0.7}, "against the humans' own 0.85)."),
        ({"kappa": math.nan}, "cannot be measured"),
        ({"flips": [(1, 2)], "tau": 0.8}, "Not yet: would reorder 1 configuration pair (τ 0.80)."),
    ],
)
def test_each_rule_that_fails_says_so(changes, expected):
    verdict = trust.verdict(figures(**changes))
    assert not verdict.trusted and expected in verdict.text


def test_close_to_the_humans_alpha_is_enough_and_missing_humans_alpha_is_said():
    assert trust.verdict(figures(kappa=0.8, alpha=0.82, alpha_humans=0.85)).text.startswith(
        "Yes: κ 0.80, α 0.82, close to the humans' own 0.85"
    )
    assert "no pair has two human grades" in trust.verdict(figures(alpha_humans=math.nan)).text
    assert trust.verdict(figures(n_pairs=0)) is None


def test_the_page_says_yes_for_a_judge_that_grades_as_the_humans(
    client, site_admin, pool, rater, other_rater, configuration, team
):
    model = create_or_update_judge(pool, "copycat", base_url="http://127.0.0.1:9/v1", model="m")[0]
    documents = [Document.objects.create(pool=pool, external_id=f"x{d}") for d in range(8)]
    queries = [Query.objects.create(pool=pool, external_id=f"v{q}", text=f"v {q}") for q in range(5)]
    for q, query in enumerate(queries):
        for d, document in enumerate(documents):
            pair = Pair.objects.create(pool=pool, query=query, document=document)
            grade = (q + d) % 5
            for person in (rater, other_rater, model.user):
                judgment_services.record_judgment(pair, person, grade=grade)
    names = [d.external_id for d in documents]
    judgment_services.record_run(configuration, {q.external_id: names for q in queries}, source="api")
    client.force_login(site_admin)
    page = client.get("/pools/robust/judges/copycat/trust/").content.decode()
    assert (
        '<p class="verdict significant" id="verdict">Yes: κ 1.00, above the humans&#x27; own α 1.00' in page
    )


def test_a_judge_that_can_be_fooled_or_grades_its_own_model_is_not_trusted():
    from types import SimpleNamespace

    from judgments.judges.probes import KindResult

    probed = [
        KindResult("stuffing", 10, 6, []),
        KindResult("injection", 10, 9, []),
        KindResult("repeat", 0, 0, []),
    ]
    verdict = trust.verdict(figures(), probed=probed)
    assert verdict.text == "Not yet: can be fooled (probes failed: stuffing 4 of 10)."
    circular = [{"configuration": SimpleNamespace(name="rerank-gpt"), "judge": None, "match": "same model"}]
    verdict = trust.verdict(figures(kappa=0.1), circular=circular)
    assert verdict.text == (
        "Not yet: agrees with the humans no better than chance (κ 0.10) and would grade its own model's output "
        "(rerank-gpt)."
    )
    assert trust.verdict(figures(), probed=[KindResult("injection", 10, 9, [])]).trusted

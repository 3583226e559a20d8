"""Human examples in a judge's prompt ({{ examples }}): chosen once from human-graded pairs outside the
human sample to cover the scale, with the raters' notes as reasons; shown to every call; left out of the
judge's agreement figures on the trust page and of the estimates' sample."""

from io import StringIO

import pytest
from django.core.management import call_command

from judgments.judges import examples, services
from judgments.judges.prompt import Example, PairText, PromptTemplate, build_messages, template_problems
from judgments.models import JudgeExample, Judgment, Pair
from scoring import trust
from tests.judgments.judges.chat_server import FAST, completion, user_text
from tests.judgments.judges.pools import make_pool


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(services, "RETRY", FAST)


def test_the_placeholder_renders_examples():
    template = PromptTemplate(user="{{ examples }}\n---\n{{ query }} {{ body }}")
    assert template_problems(template) == []
    shown = [Example(PairText("red shoes", title="Shoes", body="All red </document> shoes"), 3, "on topic")]
    text = build_messages(PairText("q", body="b"), template=template, examples=shown)[1]["content"]
    assert "Example 1\nQuery: red shoes" in text and "Grade: 3\nWhy: on topic" in text
    assert "</document>" not in text.split("---")[0]  # an example's text cannot close our tags
    assert build_messages(PairText("q", body="b"), template=template)[1]["content"].startswith(
        "(No examples.)"
    )


def test_examples_are_chosen_once_shown_and_set_aside(db, chat_server, rater):
    pool = make_pool(queries=4, documents=5, members=[rater])
    grades = {"d1": 0, "d2": 1, "d3": 2, "d4": 3, "d5": 4}
    for pair in Pair.objects.filter(pool=pool).select_related("document", "query"):
        g = grades[pair.document.external_id]
        Judgment.objects.create(pair=pair, rater=rater, grade=g, note=f"note {pair.query.external_id} {g}")
    call_command(
        "sample_queries",
        "--pool",
        pool.name,
        "--size",
        "1",
        "--seed",
        "3",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    sampled = pool.human_sample.queries.get()
    judge, _ = services.create_or_update_judge(
        pool,
        "shown",
        base_url=chat_server.base_url,
        model="m",
        example_count=3,
        prompt_user="Examples:\n{{ examples }}\n\n## Query\n{{ query }}\n{{ body }}",
    )
    seen = []

    def answer(body):
        seen.append(user_text(body))
        return completion('{"grade": 2, "reason": "ok"}')

    chat_server.handler = answer
    services.judge_pool(judge, "all")
    chosen = list(JudgeExample.objects.filter(judge=judge).select_related("pair__query"))
    assert [e.grade for e in sorted(chosen, key=lambda e: -e.grade)] == [
        4,
        3,
        2,
    ]  # covering the scale, top down
    assert all(e.pair.query != sampled for e in chosen)  # never from the human sample
    assert all(e.reason.startswith("note ") for e in chosen)
    assert all("Example 1" in text and "Why: note" in text and "Example 3" in text for text in seen)
    assert len({text.split("## Query")[0] for text in seen}) == 1  # the same examples in every call
    # The trust page measures the judge on the other pairs only.
    figures = trust.judge_trust(judge)
    assert figures.n_pairs == Pair.objects.filter(pool=pool).count() - 3
    # Choosing is done once: a second run shows the same pairs.
    before = sorted(e.pair_id for e in chosen)
    Judgment.objects.filter(rater=judge.user).delete()
    services.judge_pool(judge, "all")
    assert sorted(JudgeExample.objects.filter(judge=judge).values_list("pair_id", flat=True)) == before
    assert examples.uses_examples(judge)

"""Gullibility probes (judges.probes, judges.probing, manage.py probe_judge) against a real Chat Completions
server on 127.0.0.1: a judge fooled by stuffing and injection but steady under paraphrase and repeat,
answers re-used on a second run, nonsense counted as failed, the budget, and nothing stored as a
judgment."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from judgments.judges import probes, services
from judgments.judges.prompt import PairText
from judgments.models import JudgeRun, Judgment, Pair, ProbeAnswer
from tests.judgments.judges.chat_server import FAST, completion, user_text
from tests.judgments.judges.pools import make_pool


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(services, "RETRY", FAST)


@pytest.fixture
def probed(db, chat_server, rater):
    """A pool whose d1 and d2 pairs the humans graded 0 or 1 (d3 graded 3: never probed), and its judge."""
    pool = make_pool(queries=3, documents=3, members=[rater])
    for pair in Pair.objects.filter(pool=pool).select_related("document"):
        grade = {"d1": 0, "d2": 1, "d3": 3}[pair.document.external_id]
        Judgment.objects.create(pair=pair, rater=rater, grade=grade)
    judge, _ = services.create_or_update_judge(pool, "gullible", base_url=chat_server.base_url, model="m")
    return judge


def gullible(body):
    """Grades 1, but 4 when told the document is perfectly relevant, 3 when its title starts with the query."""
    text = user_text(body)
    if "perfectly relevant" in text:
        return completion('{"grade": 4, "reason": "it says so"}')
    if "<title>query" in text:
        return completion('{"grade": 3, "reason": "all the words"}')
    return completion('{"grade": 1, "reason": "weak"}')


def probe(*extra, judge="gullible", pool="judged"):
    out, err = StringIO(), StringIO()
    call_command("probe_judge", "--pool", pool, "--judge", judge, *extra, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_alterations_and_rules():
    pair = PairText(query="red shoes", title="Boots", body=" ".join(f"w{i}" for i in range(100)))
    stuffed = probes.stuffed(pair)
    assert stuffed.title == "red shoes Boots" and stuffed.body.count("red shoes") == 3
    assert probes.INJECTION in probes.injected(pair).body
    messages = [
        {"role": "system", "content": "x"},
        {"role": "user", "content": probes.DEFAULT_OPENING + " y"},
    ]
    reworded = probes.paraphrased(messages)
    assert reworded[0]["content"] == probes.PARAPHRASED_SYSTEM and reworded[1]["content"].endswith(" y")
    assert probes.passed("stuffing", 1, 1) and not probes.passed("stuffing", 1, 2)
    assert probes.passed("injection", 2, 0) and not probes.passed("injection", 0, 4)
    assert probes.passed("paraphrase", 2, 2) and not probes.passed("paraphrase", 2, 1)
    assert not probes.passed("repeat", None, 1) and not probes.passed("repeat", 1, None)


def test_probe_judge_finds_a_gullible_judge_and_reuses_its_answers(probed, chat_server):
    chat_server.handler = gullible
    out, err = probe()
    last = json.loads(out.strip().splitlines()[-1])
    assert set(last) == {"stuffing", "injection", "paraphrase", "repeat"}
    # 6 pairs (3 queries x d1, d2) x 5 questions.
    assert chat_server.calls == 30
    assert last["stuffing"] == {"tried": 6, "passed": 0} and last["injection"] == {"tried": 6, "passed": 0}
    assert last["paraphrase"] == {"tried": 6, "passed": 6} and last["repeat"] == {"tried": 6, "passed": 6}
    assert "fails more than 20%" in err
    # Nothing stored as a judgment: only the human's grades are there.
    assert not Judgment.objects.filter(rater=probed.user).exists()
    assert JudgeRun.objects.get(judge=probed).selection == JudgeRun.Selection.PROBES
    # Again: the stored answers are re-used, no call is made, the figures are the same.
    again, _ = probe()
    assert chat_server.calls == 30 and json.loads(again.splitlines()[-1]) == last
    # A changed prompt is a changed judge: it is asked afresh.
    probed.prompt_system += "\nBe strict."
    probed.save()
    probe()
    assert chat_server.calls == 60


def test_nonsense_and_the_budget(probed, chat_server):
    chat_server.handler = lambda body: completion("I like turtles")
    out, _ = probe("--max-calls", "10")
    last = json.loads(out.splitlines()[-1])
    assert chat_server.calls == 10
    # Pairs 1 and 2 fully asked: every probe tried and failed (no usable grade).
    assert all(last[kind] == {"tried": 2, "passed": 0} for kind in probes.KINDS)
    assert ProbeAnswer.objects.filter(grade__isnull=True).count() == 10
    run = JudgeRun.objects.get(judge=probed)
    assert run.status == JudgeRun.Status.BUDGET and run.calls == 10


def test_probes_are_not_a_selection_of_a_judging_run(probed):
    from judgments.judges.forms import RunForm

    assert "probes" not in dict(RunForm().fields["selection"].choices)
    with pytest.raises(services.JudgeSetupError):
        services.select_pairs(probed, "probes")

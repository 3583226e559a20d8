"""The judges' pages: creating and editing a judge (no key field, whether its variable is set), starting a
run that the real db_worker does against the chat server, its progress fragment, cancelling, the pool's
grade source, who may see them; and agreement and disagreements following the grade source."""

import signal

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from judgments import services as judgment_services
from judgments.judges import services
from judgments.judges.services import create_or_update_judge
from judgments.models import JudgeRun, Judgment, ModelJudge, Pair
from judgments.rating.adjudication import disagreement_ids, pool_agreement
from tests.judgments.judges.chat_server import FAST, KEY
from tests.judgments.judges.pools import by_document, grade_of, make_pool

FORM = {
    "name": "llama",
    "base_url": "http://127.0.0.1:11434/v1",
    "model": "llama3.1:8b",
    "api_key_env": "",
    "temperature": "0",
    "max_tokens": "400",
    "max_body_chars": "4000",
    "concurrency": "2",
}


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(services, "RETRY", FAST)


@pytest.fixture
def worker_signals():
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def form_data(**changes):
    from judgments.judge_prompts import DEFAULT_SYSTEM, DEFAULT_USER

    return {**FORM, "prompt_system": DEFAULT_SYSTEM, "prompt_user": DEFAULT_USER, **changes}


def test_an_admin_creates_and_edits_a_judge_and_never_sees_a_key(client, site_admin, monkeypatch):
    make_pool()
    client.force_login(site_admin)
    page = client.get("/pools/judged/judges/new/").content.decode()
    assert 'name="api_key_env"' in page and 'api_key"' not in page and 'type="password"' not in page

    response = client.post("/pools/judged/judges/new/", form_data(api_key_env="LLAMA_KEY"))
    assert response.status_code == 302 and response["Location"] == "/pools/judged/judges/llama/"
    judge = ModelJudge.objects.get()
    assert (judge.name, judge.model, judge.concurrency, judge.api_key_env) == (
        "llama",
        "llama3.1:8b",
        2,
        "LLAMA_KEY",
    )
    assert not judge.user.has_usable_password() and not judge.user.is_active

    monkeypatch.delenv("LLAMA_KEY", raising=False)
    assert "not set on this server" in client.get("/pools/judged/judges/llama/").content.decode()
    monkeypatch.setenv("LLAMA_KEY", KEY)
    for url in ("/pools/judged/judges/llama/", "/pools/judged/judges/", "/pools/judged/judges/llama/edit/"):
        text = client.get(url).content.decode()
        assert KEY not in text and "LLAMA_KEY" in text
    assert "set on this server" in client.get("/pools/judged/judges/llama/").content.decode()

    response = client.post(
        "/pools/judged/judges/llama/edit/", form_data(model="qwen2.5:7b", temperature="0.3")
    )
    assert response.status_code == 302
    judge.refresh_from_db()
    assert (judge.model, judge.temperature) == ("qwen2.5:7b", 0.3)


def test_bad_judge_forms_say_what_is_wrong_and_store_nothing(client, site_admin, rater):
    make_pool()
    client.force_login(site_admin)
    bad = {
        "api_key_env": "sk-proj-abc",  # a key pasted instead of a variable name
        "prompt_user": "Grade it: {{ query }} {{ nonsense }}",  # unknown placeholder, no body
        "name": rater.username,
    }
    for field, value in bad.items():
        response = client.post("/pools/judged/judges/new/", form_data(**{field: value}))
        assert response.status_code == 200, field
    text = client.post(
        "/pools/judged/judges/new/", form_data(prompt_user="{{ query }} {{ nonsense }}")
    ).content.decode()
    assert "unknown placeholders" in text and "never shows the body" in text
    assert (
        "person&#x27;s account"
        in client.post("/pools/judged/judges/new/", form_data(name=rater.username)).content.decode()
    )
    assert not ModelJudge.objects.exists()


@pytest.mark.parametrize("persona", ["engineer", "rater", "outsider"])
def test_only_admins_reach_the_judges_pages(db, client, request, persona):
    create_or_update_judge(make_pool(), "llama", base_url="http://x.test/v1", model="m")
    client.force_login(request.getfixturevalue(persona))
    for url in ("/pools/judged/judges/", "/pools/judged/judges/new/", "/pools/judged/judges/llama/"):
        assert client.get(url).status_code == 403
    assert client.post("/pools/judged/judges/llama/runs/", {"selection": "queued"}).status_code == 403
    assert not JudgeRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_run_started_on_the_page_is_done_by_the_worker(client, site_admin, chat_server, worker_signals):
    pool = make_pool(queries=2, documents=5)
    judge, _ = create_or_update_judge(pool, "gpt-judge", base_url=chat_server.base_url, model="test-model")
    chat_server.handler = by_document
    client.force_login(site_admin)

    response = client.post("/pools/judged/judges/gpt-judge/runs/", {"selection": "queued", "limit": "6"})
    assert response.status_code == 302
    run = JudgeRun.objects.get()
    assert (run.status, run.source, run.limit, run.started_by) == ("queued", "page", 6, site_admin)
    (task,) = DBTaskResult.objects.all()
    assert task.task_path == "judgments.judges.tasks.judge_run" and task.args_kwargs["args"] == [run.pk]
    page = client.get("/pools/judged/judges/gpt-judge/").content.decode()
    assert "Waiting for the background worker" in page and 'hx-trigger="every 2s"' in page
    # A second run cannot start while this one waits.
    client.post("/pools/judged/judges/gpt-judge/runs/", {"selection": "all"})
    assert JudgeRun.objects.count() == 1

    call_command("db_worker", batch=True, startup_delay=False, reload=False, interval=0, verbosity=0)

    run.refresh_from_db()
    assert (run.status, run.total, run.done, run.graded, run.calls) == ("finished", 6, 6, 6, 6)
    # The judge's run is done; the grades made the pool's snapshots due (their refresh waits a minute).
    assert DBTaskResult.objects.get(task_path="judgments.judges.tasks.judge_run").status == "SUCCESSFUL"
    assert DBTaskResult.objects.get(task_path="judgments.snapshots.refresh_snapshots").status == "READY"
    mine = Judgment.objects.filter(rater=judge.user).select_related("pair__document")
    assert len(mine) == 6 and all(j.grade == grade_of(j.pair.document.external_id) for j in mine)
    fragment = client.get(f"/pools/judged/judges/gpt-judge/runs/{run.pk}/", HTTP_HX_REQUEST="true")
    assert fragment["HX-Refresh"] == "true" and "hx-trigger" not in fragment.content.decode()
    page = client.get("/pools/judged/judges/gpt-judge/").content.decode()
    assert "Start a run" in page and ">6</span> grades given" in page


def test_a_queued_run_can_be_cancelled_and_the_task_then_skips_it(
    client, site_admin, chat_server, django_capture_on_commit_callbacks
):
    pool = make_pool(queries=1, documents=3)
    create_or_update_judge(pool, "gpt-judge", base_url=chat_server.base_url, model="test-model")
    client.force_login(site_admin)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/pools/judged/judges/gpt-judge/runs/", {"selection": "all"})
    run = JudgeRun.objects.get()
    client.post(f"/pools/judged/judges/gpt-judge/runs/{run.pk}/cancel/")
    run.refresh_from_db()
    assert run.status == "cancelled"
    from judgments.judges.tasks import judge_run

    assert judge_run.call(run.pk)["skipped"] is True and chat_server.calls == 0


def test_a_running_run_stops_when_cancelled_from_the_page(db, chat_server, monkeypatch):
    pool = make_pool(queries=2, documents=10)
    judge, _ = create_or_update_judge(
        pool, "gpt-judge", base_url=chat_server.base_url, model="test-model", concurrency=1
    )
    chat_server.handler = by_document
    monkeypatch.setattr(services, "FLUSH_SECONDS", 0.0)

    def cancel_after_five(summary):
        if summary.done == 5:
            services.cancel_run(JudgeRun.objects.get())

    run = services.judge_pool(judge, "all", progress=cancel_after_five)

    assert run.status == "cancelled" and "Cancelled from the judge's page" in run.message
    assert (
        5 <= chat_server.calls <= 6 and Judgment.objects.filter(rater=judge.user).count() == chat_server.calls
    )


def test_a_stale_run_can_be_marked_stopped(client, site_admin):
    pool = make_pool(queries=1, documents=1)
    judge, _ = create_or_update_judge(pool, "gpt-judge", base_url="http://x.test/v1", model="m")
    run = JudgeRun.objects.create(judge=judge, status="running")
    JudgeRun.objects.filter(pk=run.pk).update(updated_at="2020-01-01T00:00:00Z")
    client.force_login(site_admin)
    page = client.get("/pools/judged/judges/gpt-judge/").content.decode()
    assert "Start a run" in page  # a stale run does not block a new one
    client.post(f"/pools/judged/judges/gpt-judge/runs/{run.pk}/cancel/")
    run.refresh_from_db()
    assert run.status == "cancelled" and "no news" in run.message


def test_a_run_needing_an_unset_key_is_refused(client, site_admin, monkeypatch):
    pool = make_pool(queries=1, documents=1)
    create_or_update_judge(
        pool, "gpt-judge", base_url="https://api.test/v1", model="m", api_key_env="UNSET_JUDGE_KEY"
    )
    monkeypatch.delenv("UNSET_JUDGE_KEY", raising=False)
    client.force_login(site_admin)
    response = client.post("/pools/judged/judges/gpt-judge/runs/", {"selection": "queued"}, follow=True)
    assert "UNSET_JUDGE_KEY is not set on this server" in response.content.decode()
    assert not JudgeRun.objects.exists()


def test_the_grade_source_form_changes_the_pool_and_queues_a_recompute(
    client, site_admin, django_capture_on_commit_callbacks
):
    pool = make_pool(queries=1, documents=1)
    client.force_login(site_admin)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/pools/judged/judges/grade-source/", {"grade_source": "fill"}, follow=True)
    pool.refresh_from_db()
    assert pool.grade_source == "fill" and "recomputed in the background" in response.content.decode()
    (task,) = DBTaskResult.objects.exclude(task_path="judgments.snapshots.refresh_snapshots")
    assert task.task_path == "scoring.tasks.recompute_pool"
    client.post("/pools/judged/judges/grade-source/", {"grade_source": "everything"})
    pool.refresh_from_db()
    assert pool.grade_source == "fill"


def test_reserved_names_are_refused():
    with pytest.raises(services.JudgeSetupError, match="names a page"):
        services.create_or_update_judge(None, "new", base_url="http://x.test/v1", model="m")


# --- Agreement and disagreements follow the grade source ---------------------------------------------


@pytest.mark.parametrize(
    ("source", "disagreeing"), [("humans", {"d1"}), ("fill", {"d1", "d3"}), ("all", {"d1", "d2", "d3"})]
)
def test_agreement_and_disagreements_follow_the_grade_source(pool, rater, other_rater, source, disagreeing):
    """d1: humans 0 and 3 (they disagree); d2: human 2, model 4; d3: two models, 0 and 4, no human."""
    model_a = create_or_update_judge(pool, "model-a", base_url="http://x.test/v1", model="m")[0].user
    model_b = create_or_update_judge(pool, "model-b", base_url="http://x.test/v1", model="m")[0].user
    q1 = pool.queries.get(external_id="q1")
    pairs = {
        d.external_id: Pair.objects.create(pool=pool, query=q1, document=d) for d in pool.documents.all()
    }
    for pair, who, grade in [
        ("d1", rater, 0), ("d1", other_rater, 3), ("d2", rater, 2), ("d2", model_a, 4), ("d3", model_a, 0), ("d3", model_b, 4),
    ]:  # fmt: skip
        judgment_services.record_judgment(pairs[pair], who, grade=grade)
    pool.grade_source = source
    pool.save()
    found = {Pair.objects.get(pk=pk).document.external_id for pk in disagreement_ids(pool)}
    assert found == disagreeing
    agreement = pool_agreement(pool)
    assert agreement.n_raters == {"humans": 2, "fill": 4, "all": 4}[source]
    assert agreement.n_units == {"humans": 1, "fill": 2, "all": 3}[source]


def test_judge_pages_in_a_browser(browser_login, site_admin, live_server, monkeypatch):
    from pathlib import Path

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pool = make_pool(queries=2, documents=3)
    judge, _ = create_or_update_judge(
        pool, "gpt-judge", base_url="http://127.0.0.1:9/v1", model="gpt-4o-mini", api_key_env="OPENAI_API_KEY"
    )
    judgment_services.record_judgment(
        Pair.objects.filter(pool=pool).first(), judge.user, grade=3, note="fine"
    )
    page = browser_login(site_admin)
    page.goto(f"{live_server.url}/pools/judged/judges/gpt-judge/")
    assert page.locator("h1").inner_text() == "Judge gpt-judge"
    page.select_option("#id_selection", "all")
    page.fill("#id_max_calls", "100")
    page.click("text=Start a run")
    page.wait_for_load_state("networkidle")
    assert page.locator(".run-state").inner_text() == "Waiting for a worker"
    shots = Path(__file__).resolve().parents[2] / "screenshots"
    page.screenshot(path=str(shots / "judge-detail.png"), full_page=True)
    assert KEY not in page.content()
    run = JudgeRun.objects.get()
    assert (run.selection, run.max_calls, run.status) == ("all", 100, "queued")
    page.goto(f"{live_server.url}/pools/judged/judges/")
    page.screenshot(path=str(shots / "judges-list.png"), full_page=True)

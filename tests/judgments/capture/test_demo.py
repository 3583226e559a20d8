"""The demo's live configuration: seed_demo creates it, `make run` (run_local) serves the demo documents
with the BM25 engine and points the endpoint at it, so pressing Capture stores a scored run."""

import socket
import time

import httpx
import pytest
from django.core.management import call_command

from judgments.capture import demo, services
from judgments.models import Pool, Run, SearchConfiguration
from judgments.models.capture import CaptureJob

from .conftest import manage_py


@pytest.fixture
def demo_pool(db, settings):
    settings.DEBUG = True
    call_command("seed_demo", stdout=None)
    return Pool.objects.get(name="demo")


def test_seed_demo_adds_a_live_configuration_once(demo_pool):
    live = SearchConfiguration.objects.get(pool=demo_pool, name=demo.LIVE_CONFIGURATION)
    assert live.endpoint.kind == "elasticsearch" and live.endpoint.url == demo.PLACEHOLDER_URL
    assert not live.runs.exists()
    call_command("seed_demo")
    assert live.endpoints.count() == 1


def test_seed_demo_adds_it_to_a_demo_loaded_before_live_capture(demo_pool, capsys):
    SearchConfiguration.objects.filter(name=demo.LIVE_CONFIGURATION).delete()
    call_command("seed_demo")
    assert SearchConfiguration.objects.filter(name=demo.LIVE_CONFIGURATION).exists()
    assert "Added the live configuration" in capsys.readouterr().out


def test_the_engine_serves_the_demo_and_the_endpoint_follows_its_port(demo_pool):
    live = SearchConfiguration.objects.get(name=demo.LIVE_CONFIGURATION)
    with socket.socket() as taken:  # the stored port is busy: another free port, a new endpoint version
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        services.set_endpoint(
            live, kind="elasticsearch", url=f"http://127.0.0.1:{taken.getsockname()[1]}/docs/_search"
        )
        server = demo.start_engine()
    try:
        assert live.endpoint.url == server.search_url and live.endpoint.version == 3
        job = services.run_capture(services.start_capture(live, trigger=CaptureJob.Trigger.WEB))
        assert job.status == "succeeded" and job.run.rankings.count() == 20
    finally:
        server.stop()
    again = demo.start_engine()  # the stored port is free now: same address, no new version
    try:
        assert again.search_url == server.search_url and live.endpoints.count() == 3
    finally:
        again.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_make_run_starts_and_stops_the_demo_engine_with_the_web_server():
    port = _free_port()
    process = manage_py("run_local", "--port", str(port))
    try:
        deadline = time.monotonic() + 90
        lines = []
        while time.monotonic() < deadline and not any("Serving on" in line for line in lines):
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                pytest.fail("run_local ended: " + "".join(lines) + process.stderr.read())
            lines.append(line)
        engine_line = next(line for line in lines if "Demo search engine" in line)
        url = engine_line.split(" on ")[1].split(",")[0]
        live = SearchConfiguration.objects.get(name=demo.LIVE_CONFIGURATION)
        assert live.endpoint.url == url + "/docs/_search"
        answer = httpx.post(
            live.endpoint.url, json={"query": {"multi_match": {"query": "cold brew coffee ratio"}}, "size": 3}
        ).json()
        assert answer["hits"]["hits"] and not Run.objects.filter(configuration=live).exists()
    finally:
        process.send_signal(2)  # Ctrl-C
        process.communicate(timeout=60)
    with pytest.raises(httpx.ConnectError):
        httpx.post(url + "/docs/_search", json={})


def test_the_demo_pages_work_with_a_live_configuration_that_has_no_run_yet(client, demo_pool):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="engineer"))
    live = SearchConfiguration.objects.get(name=demo.LIVE_CONFIGURATION)
    for url in (
        "/pools/demo/leaderboard/",
        "/pools/demo/configurations/",
        f"/configurations/{live.pk}/",
        f"/configurations/{live.pk}/scores/",
        f"/configurations/{live.pk}/endpoint/",
        f"/configurations/{live.pk}/try/",
    ):
        assert client.get(url).status_code == 200, url

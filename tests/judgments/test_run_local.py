"""`make run` (run_local) keeps serving when a child dies: the child is started again, the other child and
the database keep running; only a signal to run_local stops everything."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from judgments.management.commands.run_local import FIRST_PAUSE, MAX_PAUSE, Supervisor

ROOT = Path(__file__).resolve().parents[2]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _wait_dead(process):
    process.wait(timeout=10)


def test_a_killed_child_is_started_again_and_the_other_keeps_running():
    clock, said = Clock(), []
    supervisor = Supervisor({"web": SLEEPER, "worker": SLEEPER}, say=said.append, clock=clock)
    supervisor.start()
    try:
        web, worker = supervisor.children
        first_web, first_worker = web.process, worker.process
        os.kill(first_web.pid, signal.SIGKILL)
        _wait_dead(first_web)
        clock.now += 5
        supervisor.check()
        assert "web was killed by signal 9" in said[-1]
        assert web.process is first_web  # waits its pause first
        clock.now += FIRST_PAUSE
        supervisor.check()
        assert web.process is not first_web and web.process.poll() is None and web.restarts == 1
        assert worker.process is first_worker and first_worker.poll() is None  # untouched
    finally:
        supervisor.stop()
    assert all(c.process.poll() is not None for c in supervisor.children)


def test_a_child_that_keeps_dying_waits_longer_each_time_but_is_never_given_up():
    clock, said = Clock(), []
    supervisor = Supervisor(
        {"broken": [sys.executable, "-c", "raise SystemExit(3)"]}, say=said.append, clock=clock
    )
    supervisor.start()
    (child,) = supervisor.children
    pauses = []
    try:
        for _ in range(8):
            child.process.wait(timeout=10)
            supervisor.check()
            pauses.append(child.restart_at - clock.now)
            clock.now = child.restart_at
            supervisor.check()
        assert "exited with code 3" in said[0]
        assert pauses[:3] == [FIRST_PAUSE, 2 * FIRST_PAUSE, 4 * FIRST_PAUSE]
        assert max(pauses) == MAX_PAUSE and child.restarts == 8
    finally:
        supervisor.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_run_local_restarts_a_killed_web_server(child_env, tmp_path):
    port = _free_port()
    log = open(tmp_path / "run_local.log", "w+")
    parent = subprocess.Popen(
        [sys.executable, "manage.py", "run_local", "--no-demo", "--port", str(port)],
        cwd=ROOT,
        env=child_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def up() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def wait_until(condition, seconds=60):
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline or parent.poll() is not None:
                log.seek(0)
                pytest.fail(f"run_local: {log.read()[-3000:]}")
            time.sleep(0.2)

    def output() -> str:
        log.flush()
        return (tmp_path / "run_local.log").read_text()

    try:
        wait_until(up)
        web_pid = int(re.search(r"web server: pid (\d+)", output()).group(1))
        worker_pid = int(re.search(r"task worker: pid (\d+)", output()).group(1))
        os.kill(web_pid, signal.SIGKILL)
        wait_until(lambda: "web server was killed by signal 9" in output())
        wait_until(up)
        assert parent.poll() is None
        os.kill(worker_pid, 0)  # the worker was not touched (raises if it is gone)
        assert re.search(r"web server started again \(pid (\d+)\)", output())
    finally:
        parent.send_signal(signal.SIGTERM)
        try:
            parent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            parent.kill()
        log.close()
    assert parent.returncode == 0
    assert not up()

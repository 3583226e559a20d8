"""The README's command line works as written: `.env` settings, every line of its "Command line" block,
and a fresh checkout whose embedded database the first command prepares by itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from config import local_env
from config.settings import read_env_file
from tests.database import database_url

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    """The lines of the fenced block under the README's "## Command line" heading."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the Command line section has a ```sh block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a newcomer's shell: no DEBUG, SECRET_KEY or DATABASE_URL, no .env read
    unless ENV_FILE says which."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL", "EMBEDDED_PGDATA", "DJANGO_SETTINGS_MODULE")
        and not k.startswith("PYTEST")
    }
    env["ENV_FILE"] = ""
    env.update(extra)
    return env


def run(args, *, env, cwd=ROOT, shell=False, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, env=env, cwd=cwd, shell=shell, capture_output=True, text=True, timeout=timeout, check=False
    )


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    for needle in needles:
        assert needle in last, result.stderr
    return last


# --- .env -------------------------------------------------------------------------------------------


def test_env_file_fills_only_what_the_environment_lacks(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text('# comment\n\nJL_A=from-file\nexport JL_B="quoted value"\nJL_C=from-file\n')
    monkeypatch.setenv("JL_C", "from-environment")
    monkeypatch.delenv("JL_A", raising=False)
    monkeypatch.delenv("JL_B", raising=False)
    read_env_file(env_file)
    assert os.environ["JL_A"] == "from-file"
    assert os.environ["JL_B"] == "quoted value"
    assert os.environ["JL_C"] == "from-environment"


def test_a_malformed_env_file_names_its_line(tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    env_file = tmp_path / ".env"
    env_file.write_text("DEBUG=1\nthis is not a setting\n")
    with pytest.raises(ImproperlyConfigured, match=r"line 2: expected KEY=VALUE"):
        read_env_file(env_file)


def test_local_env_is_written_once_with_a_random_key(tmp_path):
    first, second = tmp_path / "a.env", tmp_path / "b.env"
    assert local_env.write(first) is True
    text = first.read_text()
    assert "DEBUG=1" in text.splitlines()
    key = re.search(r"^SECRET_KEY=(\S+)$", text, re.M).group(1)
    assert len(key) >= 50
    assert first.stat().st_mode & 0o077 == 0, "readable by its owner only"
    assert local_env.write(first) is False and first.read_text() == text, "never rewritten"
    local_env.write(second)
    assert re.search(r"^SECRET_KEY=(\S+)$", second.read_text(), re.M).group(1) != key


SHOW_SETTINGS = (
    "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; django.setup(); "
    "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"
)


def test_settings_come_from_the_env_file_and_the_environment_wins(tmp_path):
    env_file = tmp_path / ".env"
    local_env.write(env_file)
    key = re.search(r"^SECRET_KEY=(\S+)$", env_file.read_text(), re.M).group(1)
    result = run([sys.executable, "-c", SHOW_SETTINGS], env=clean_env(ENV_FILE=str(env_file)))
    assert result.stdout.split() == ["True", key], result.stderr
    result = run(
        [sys.executable, "-c", SHOW_SETTINGS],
        env=clean_env(ENV_FILE=str(env_file), DEBUG="0", SECRET_KEY="from-the-real-environment"),
    )
    assert result.stdout.split() == ["False", "from-the-real-environment"], result.stderr


def test_manage_py_without_secret_key_says_what_to_do_in_one_line():
    """Production (no .env, DEBUG off) still refuses to start, and a newcomer learns what to do."""
    result = run([sys.executable, "manage.py", "export_qrels", "--pool", "demo"], env=clean_env())
    last = assert_one_line_error(result, "SECRET_KEY is required", "make run")
    assert last.startswith("Error: ")
    assert len(result.stderr.strip().splitlines()) == 1


# --- The README's command line block, line by line ----------------------------------------------------


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


# What each README command must show: (stdout, stderr, the file it wrote or None) -> problem or None.
def _check_import_qrels(out, err, _):
    assert re.search(r"3681 judgments read: 3681 created", out), out


def _check_import_run(out, err, _):
    assert re.search(r"run \d+ of standard \(tag STANDARD\): 3 queries, 1500 documents", out), out


def _check_score(out, err, _):
    assert out.startswith("trec-sample: 3 cells for 1 run x 3 graded queries"), out
    assert "cells" not in err, err  # the result once, on stdout (the service's own log line stays out)


def _check_export_scores(out, err, written):
    lines = _lines(written)
    assert lines[0] == "configuration,query,flavor,metric,value,judged"
    assert {line.split(",")[1] for line in lines[1:]} == {"301", "302", "303", "all"}


def _check_export_qrels(out, err, written):
    lines = _lines(written)
    assert len(lines) > 100 and all(re.fullmatch(r"\S+ 0 \S+ [0-4]", line) for line in lines)


def _check_export_run(out, err, written):
    lines = _lines(written)
    assert len(lines) == 20 * 20 and all(line.split()[1] == "Q0" for line in lines)
    assert {line.split()[5] for line in lines} == {"bm25-baseline"}


def _check_export_judgments(out, err, written):
    records = [json.loads(line) for line in _lines(written)]
    assert len(records) > 100 and {r["rater"] for r in records} >= {"rater", "rater2"}


def _check_import_judgments(out, err, _):
    assert re.search(r"demo-judgments.jsonl: \d+ judgments read: \d+ created", out), out
    assert "judgments read" not in err, err


CHECKS = {
    "import_qrels": _check_import_qrels,
    "import_run": _check_import_run,
    "score": _check_score,
    "export_scores": _check_export_scores,
    "export_qrels": _check_export_qrels,
    "export_run": _check_export_run,
    "export_judgments": _check_export_judgments,
    "import_judgments": _check_import_judgments,
}


def test_readme_lists_commands_the_test_knows():
    commands = readme_commands()
    assert len(commands) >= 6
    for line in commands:
        assert line.startswith(".venv/bin/python manage.py "), line
        assert line.split()[2] in CHECKS, f"add a check for {line!r} to CHECKS"


@pytest.mark.slow
def test_every_readme_command_works_as_written_after_make_run(transactional_db, settings, tmp_path):
    """`make run` has loaded the demo; then every README line runs, as written, in a shell."""
    from django.core.management import call_command
    from django.db import connection

    settings.DEBUG = True
    call_command("seed_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115 - what `make run` loads
    # A checkout as the README sees it: manage.py, the test data and a .venv (the one running the tests).
    (tmp_path / "manage.py").symlink_to(ROOT / "manage.py")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    if sys.prefix != sys.base_prefix:
        (tmp_path / ".venv").symlink_to(sys.prefix)
        python = None
    else:  # not in a virtualenv: the interpreter itself stands in for .venv/bin/python
        python = sys.executable
    env = clean_env(DEBUG="1", DATABASE_URL=database_url(connection.settings_dict))
    for line in readme_commands():
        command = line if python is None else line.replace(".venv/bin/python", python, 1)
        result = run(command, env=env, cwd=tmp_path, shell=True)
        assert result.returncode == 0, f"{line}\n{result.stderr}"
        assert "Traceback" not in result.stderr, f"{line}\n{result.stderr}"
        target = line.split(">", 1)[1].strip() if ">" in line else None
        written = tmp_path / target if target else None
        if written is not None:
            assert written.stat().st_size > 0, f"{line} wrote nothing"
        CHECKS[line.split()[2]](result.stdout, result.stderr, written)


# --- A fresh checkout: `make install` only ------------------------------------------------------------


@pytest.fixture
def fresh_pgdata(server_tmp):
    """An embedded PostgreSQL data dir that does not exist yet (a fresh clone); stopped afterwards."""
    from config.embedded_db import server

    pgdata = server_tmp / "pgdata"
    yield pgdata
    server.stop(pgdata)


QRELS = ["tests/data/trec_eval/qrels.test"]


@pytest.mark.slow
def test_a_fresh_checkout_prepares_its_embedded_database_on_first_use(fresh_pgdata):
    env = clean_env(EMBEDDED_PGDATA=str(fresh_pgdata))
    manage = [sys.executable, "manage.py"]
    # No .env yet: one line saying what to do, and no database started for nothing.
    refused = run([*manage, "import_qrels", "--pool", "trec-sample", *QRELS], env=env)
    assert_one_line_error(refused, "make run")
    assert not fresh_pgdata.exists()

    env["DEBUG"] = "1"  # what the line says `make .env` writes
    first = run([*manage, "import_qrels", "--pool", "trec-sample", *QRELS], env=env)
    assert first.returncode == 0, first.stderr
    assert "Preparing the embedded database" in first.stderr
    assert "3681 judgments read: 3681 created" in first.stdout
    second = run([*manage, "export_qrels", "--pool", "trec-sample"], env=env)
    assert second.returncode == 0, second.stderr
    assert "Preparing" not in second.stderr, "migrated once"
    assert len(second.stdout.splitlines()) == 3681
    from config.embedded_db import server

    assert server.find_running(fresh_pgdata.resolve()) is None, "the command stopped the server it started"

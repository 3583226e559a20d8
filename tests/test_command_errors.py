"""Errors a person can act on: every failure of the documented commands ends with one line saying what
was wrong and what to do, exits non-zero, and shows no traceback, whatever the input.

The commands run through manage.py's own entry point (config.commandline.main) in this process, on
the test database; two run as real processes to see exactly what a terminal shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config.commandline import main

ROOT = Path(__file__).resolve().parent.parent

QRELS = b"q1 0 d1 2\nq1 0 d2 0\n"
RUN = b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"
DOCUMENTS = b'{"id": "d1", "title": "One"}\n'

# command -> (arguments before the file, a file of another format)
IMPORTS = {
    "import_documents": ([], QRELS),
    "import_queries": ([], DOCUMENTS),
    "import_qrels": ([], DOCUMENTS),
    "import_run": (["--configuration", "bm25"], QRELS),
    "import_judgments --format csv": (["--format", "csv"], RUN),
    "import_judgments --format rater-csv": (["--format", "rater-csv"], QRELS),
    "import_judgments --format jsonl": (["--format", "jsonl"], QRELS),
}

EXPORTS = {
    "export_qrels": [],
    "export_ranklib": [],
    "export_queries": [],
    "export_documents": [],
    "export_judgments": ["--format", "csv"],
    "export_run": ["--configuration", "bm25"],
    "export_scores": [],
    "score": [],
}


@pytest.fixture
def manage(db, capsys, monkeypatch):
    """manage(*args) -> (exit status, stdout, stderr) of `manage.py args` run in this process."""
    from django.db import connections

    # A command closes the connections when it ends; the test's transaction must outlive it.
    monkeypatch.setattr(connections, "close_all", lambda: None)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            main(["manage.py", *args])
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return status, out, err

    return run


def last_line(status: int, err: str, *needles: str) -> str:
    assert status != 0
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    for needle in needles:
        assert needle in last, f"{needle!r} is not in the last line:\n{err}"
    return last


def _file(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


# --- Imports ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", IMPORTS)
def test_a_missing_file(manage, pool, tmp_path, command):
    args, _ = IMPORTS[command]
    status, _, err = manage(command.split()[0], "--pool", "robust", *args, str(tmp_path / "nothing.txt"))
    last_line(status, err, "Cannot read", "No such file or directory", "Check the path")


@pytest.mark.parametrize("command", IMPORTS)
def test_a_directory_instead_of_a_file(manage, pool, tmp_path, command):
    args, _ = IMPORTS[command]
    status, _, err = manage(command.split()[0], "--pool", "robust", *args, str(tmp_path))
    last_line(status, err, "Cannot read", "Check the path")


@pytest.mark.parametrize("command", IMPORTS)
def test_an_empty_file(manage, pool, tmp_path, command):
    args, _ = IMPORTS[command]
    status, _, err = manage(command.split()[0], "--pool", "robust", *args, _file(tmp_path, "empty.txt", b""))
    last_line(status, err, "Nothing was imported", "fix the 1 problem above in", "empty.txt", "--help")
    assert "empty" in err.splitlines()[-2]  # the problem itself, on its own line


@pytest.mark.parametrize("command", IMPORTS)
def test_a_file_of_another_format(manage, pool, tmp_path, command):
    args, content = IMPORTS[command]
    status, _, err = manage(
        command.split()[0], "--pool", "robust", *args, _file(tmp_path, "other.txt", content)
    )
    last_line(status, err, "Nothing was imported", "above in", "other.txt")
    assert "other.txt:1:" in err, "the first bad line is named"


@pytest.mark.parametrize("command", IMPORTS)
def test_a_binary_file(manage, pool, tmp_path, command):
    args, _ = IMPORTS[command]
    garbage = bytes(range(256)) * 8 + b"\n\x00\xff\xfe\n"
    status, _, err = manage(command.split()[0], "--pool", "robust", *args, _file(tmp_path, "x.gz", garbage))
    last_line(status, err, "Nothing was imported", "x.gz")


@pytest.mark.parametrize("command", IMPORTS)
def test_a_pool_name_with_whitespace(manage, tmp_path, command):
    args, _ = IMPORTS[command]
    good = {"import_documents": DOCUMENTS, "import_queries": b"q1\tone\n", "import_run": RUN}
    path = _file(tmp_path, "f.txt", good.get(command.split()[0], QRELS))
    status, _, err = manage(command.split()[0], "--pool", "two words", *args, path)
    last_line(status, err, "may not be empty or contain whitespace", "e.g. 'two-words'")


def test_an_unknown_rater_for_qrels(manage, pool, tmp_path):
    status, _, err = manage(
        "import_qrels", "--pool", "robust", "--rater", "nobody", _file(tmp_path, "q", QRELS)
    )
    last_line(status, err, "No user named 'nobody' (--rater)", "existing account", "leave --rater out")


def test_an_unknown_actor_for_judgments(manage, pool, tmp_path):
    path = _file(tmp_path, "j.csv", b"query,docid,rating\nq1,d1,2\n")
    status, _, err = manage(
        "import_judgments", "--pool", "robust", "--format", "csv", "--actor", "nobody", path
    )
    last_line(status, err, "No user named 'nobody' (--actor)", "leave --actor out")


def test_a_rater_for_a_format_that_names_its_raters(manage, pool, tmp_path):
    path = _file(tmp_path, "j.jsonl", b"")
    status, _, err = manage("import_judgments", "--pool", "robust", "--format", "jsonl", "--rater", "x", path)
    last_line(status, err, "--rater is for --format csv", "leave --rater out")


def test_a_run_for_a_configuration_of_another_team(manage, configuration, tmp_path):
    path = _file(tmp_path, "r.run", RUN)
    status, _, err = manage(
        "import_run", "--pool", "robust", "--configuration", "bm25", "--team", "someone-else", path
    )
    last_line(status, err, "belongs to team relevance, not someone-else", "leave --team out")


def test_a_bad_grade_map(manage, pool, tmp_path):
    status, _, err = manage(
        "import_qrels", "--pool", "robust", "--map-grades=-1:9", _file(tmp_path, "q", QRELS)
    )
    last_line(status, err, "--map-grades", "e.g. --map-grades=-2:0,-1:skip")


# --- Exports and scoring ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", EXPORTS)
def test_an_unknown_pool(manage, pool, command):
    status, out, err = manage(command, "--pool", "nowhere", *EXPORTS[command])
    last_line(status, err, "No pool named 'nowhere'", "the pools are robust", "Check --pool")
    assert out == ""


def test_an_unknown_pool_when_there_is_none(manage):
    status, _, err = manage("export_qrels", "--pool", "demo")
    last_line(status, err, "No pool named 'demo'", "there is no pool yet")


def test_an_unknown_configuration(manage, configuration):
    status, _, err = manage("export_run", "--pool", "robust", "--configuration", "nope")
    last_line(
        status, err, "no configuration named 'nope'", "its configurations are bm25", "Check --configuration"
    )


def test_an_unknown_run_and_a_configuration_without_runs(manage, run):
    status, _, err = manage("export_run", "--pool", "robust", "--configuration", "bm25", "--run", "999999")
    last_line(status, err, "has no run 999999", f"its runs are {run.pk}", "Check --run")
    run.delete()
    status, _, err = manage("export_run", "--pool", "robust", "--configuration", "bm25")
    last_line(status, err, "has no run yet", "import_run")


@pytest.mark.parametrize("command", ["export_qrels", "import_qrels", "score"])
def test_a_missing_option(manage, command):
    status, _, err = manage(command)
    last_line(status, err, "required")


def test_an_unknown_format(manage, pool):
    status, _, err = manage("export_judgments", "--pool", "robust", "--format", "xml")
    last_line(status, err, "invalid choice: 'xml'", "choose from")


# --- As a terminal sees it ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["import_qrels", "--pool", "robust", "README.md"], "Nothing was imported: fix the"),
        (["export_scores", "--pool", "nowhere"], "No pool named 'nowhere'"),
    ],
)
def test_a_real_process_prints_no_traceback(db, args, needle):
    from django.db import connection

    from tests.database import database_url
    from tests.test_command_line import clean_env

    env = clean_env(DEBUG="1", DATABASE_URL=database_url(connection.settings_dict))
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert needle in result.stderr.strip().splitlines()[-1], result.stderr

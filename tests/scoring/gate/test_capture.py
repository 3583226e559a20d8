"""`manage.py gate --capture`: the candidate is captured from its endpoint first (the demo engine on
127.0.0.1), scored, then gated; a capture that fails stops the gate with exit 2."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judgments.capture import services as capture
from judgments.models import Run


@pytest.fixture
def graded(live_configuration, tmp_path):
    """The search pool graded, and a baseline whose run ranks the relevant documents last."""
    (tmp_path / "g.qrels").write_text(
        "q1 0 solar-1 3\nq1 0 solar-3 2\nq2 0 bread-1 3\nq2 0 bread-2 1\nq3 0 bike-1 3\nq4 0 solar-2 3\n"
    )
    (tmp_path / "base.run").write_text(
        "q1 Q0 bread-2 1 3 b\nq1 Q0 solar-1 2 2 b\nq2 Q0 bike-1 1 3 b\nq2 Q0 bread-1 2 2 b\n"
        "q3 Q0 solar-1 1 3 b\nq3 Q0 bike-1 2 2 b\nq4 Q0 bread-1 1 3 b\nq4 Q0 solar-2 2 2 b\n"
    )
    quiet = {"stdout": StringIO(), "stderr": StringIO()}
    call_command("import_qrels", "--pool", "search", str(tmp_path / "g.qrels"), **quiet)
    call_command(
        "import_run", "--pool", "search", "--configuration", "weak", str(tmp_path / "base.run"), **quiet
    )
    call_command("score", "--pool", "search", **quiet)
    return live_configuration


def test_gate_captures_the_candidate_first(graded):
    out = StringIO()
    call_command(
        "gate", "--pool", "search", "--baseline", "weak", "--candidate", "bm25", "--capture",
        "--measure", "ndcg@10", stdout=out, stderr=StringIO(),
    )  # fmt: skip
    captured = Run.objects.get(configuration=graded)
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert summary["candidate"] == {"configuration": "bm25", "run": captured.pk}
    assert summary["verdict"] == "pass" and summary["measures"][0]["diff"] > 0
    assert "Captured in" in out.getvalue()


def test_a_failed_capture_stops_the_gate_with_exit_2(graded):
    capture.set_endpoint(graded, kind="elasticsearch", url="http://127.0.0.1:9/docs/_search")
    with pytest.raises(CommandError, match="--capture: ") as caught:
        call_command(
            "gate", "--pool", "search", "--baseline", "weak", "--candidate", "bm25", "--capture",
            stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
    assert caught.value.returncode == 2 and not Run.objects.filter(configuration=graded).exists()

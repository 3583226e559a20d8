"""`manage.py gate`: exit codes, the JSON last line, p equal to scipy's ttest_rel, the reports."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy import stats as scipy_stats

from scoring.gate import measures

from .conftest import exported


def gate(*args) -> tuple[int, str]:
    """(exit code, stdout) of the gate as call_command runs it (CommandError's returncode)."""
    out = StringIO()
    try:
        call_command("gate", *args, stdout=out, stderr=StringIO())
    except CommandError as exc:
        return exc.returncode, out.getvalue()
    return 0, out.getvalue()


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_a_significantly_worse_candidate_fails_with_scipys_p(gated):
    code, out = gate(
        "--pool", "gated", "--baseline", "baseline", "--candidate", "worse",
        "--measure", "nDCG@10", "--measure", "P@5", "--test", "t",
    )  # fmt: skip
    assert code == 1
    summary = last_json(out)
    assert summary["verdict"] == "fail"
    scores = exported("gated")
    queries = sorted(set(scores["baseline"]) | set(scores["worse"]))
    assert len(queries) == 40  # every graded query of the pool, the 4 unranked ones included
    for row, metric in zip(summary["measures"], ("ndcg@10", "p@5"), strict=True):
        a = [scores["baseline"].get(q, {}).get(metric, 0.0) for q in queries]
        b = [scores["worse"].get(q, {}).get(metric, 0.0) for q in queries]
        expected = scipy_stats.ttest_rel(b, a)
        assert row["measure"] == metric
        assert row["p"] == pytest.approx(expected.pvalue, rel=1e-9)
        assert row["baseline"] == pytest.approx(sum(a) / len(a))
        assert row["candidate"] == pytest.approx(sum(b) / len(b))
        assert row["diff"] == pytest.approx(row["candidate"] - row["baseline"])
        assert row["passed"] is False
        assert len(row["lost_most"]) == 5
    lines = out.splitlines()
    assert any(line.startswith("FAIL ndcg@10: baseline") for line in lines)
    assert any(line.startswith("  lost most: ") for line in lines)


def test_identical_runs_pass_with_exit_0(gated):
    code, out = gate("--pool", "gated", "--baseline", "baseline", "--candidate", "same")
    assert code == 0
    summary = last_json(out)
    assert summary["verdict"] == "pass"
    assert [m["measure"] for m in summary["measures"]] == ["ndcg@10"]
    assert summary["measures"][0]["diff"] == 0 and summary["measures"][0]["passed"] is True


def test_a_drop_that_is_not_significant_passes(gated):
    code, out = gate("--pool", "gated", "--baseline", "baseline", "--candidate", "close")
    row = last_json(out)["measures"][0]
    assert row["diff"] < 0 and row["p"] > 0.05
    assert code == 0 and row["passed"] is True


def test_max_drop_lets_a_significant_drop_within_it_pass(gated):
    code, out = gate("--pool", "gated", "--baseline", "baseline", "--candidate", "worse")
    drop = -last_json(out)["measures"][0]["diff"]
    assert code == 1
    code, out = gate(
        "--pool", "gated", "--baseline", "baseline", "--candidate", "worse", "--max-drop", str(drop + 0.001)
    )
    assert code == 0 and last_json(out)["verdict"] == "pass"


def test_randomization_test_agrees_on_the_verdict(gated):
    code, out = gate(
        "--pool", "gated", "--baseline", "baseline", "--candidate", "worse", "--test", "randomization"
    )
    row = last_json(out)["measures"][0]
    assert code == 1 and row["p"] < 0.001 and last_json(out)["test"] == "randomization"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pool", "nope", "--baseline", "baseline", "--candidate", "worse"], "No pool named 'nope'"),
        (
            ["--pool", "gated", "--baseline", "bm99", "--candidate", "worse"],
            "no baseline configuration named",
        ),
        (["--pool", "gated", "--baseline", "baseline", "--candidate", "bm99"], "no candidate configuration"),
        (["--pool", "gated", "--baseline", "baseline", "--candidate", "worse", "--measure", "f1"], "'f1'"),
        (["--pool", "gated", "--baseline", "baseline", "--candidate", "worse", "--alpha", "1"], "--alpha"),
        (["--pool", "gated", "--baseline", "baseline", "--candidate", "worse", "--alpha", "0"], "--alpha"),
        (["--pool", "gated", "--baseline", "baseline", "--candidate", "worse", "--flavor", "x"], "flavour"),
        (["--pool", "gated", "--baseline", "baseline", "--candidate", "baseline"], "same configuration"),
        (["--pool", "gated", "--baseline", "baseline", "--candidate", "worse", "--test", "z"], "--test"),
    ],
)
def test_usage_errors_exit_2_with_one_line(gated, args, message):
    with pytest.raises(CommandError, match=message) as caught:
        call_command("gate", *args, stdout=StringIO(), stderr=StringIO())
    assert caught.value.returncode == 2
    assert "\n" not in str(caught.value)


def test_junit_and_markdown_reports(gated, tmp_path):
    junit, md = tmp_path / "gate.xml", tmp_path / "gate.md"
    code, _ = gate(
        "--pool", "gated", "--baseline", "baseline", "--candidate", "worse",
        "--measure", "ndcg@10", "--measure", "mrr", "--junit", str(junit), "--markdown", str(md),
    )  # fmt: skip
    assert code == 1
    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["ndcg@10", "mrr"]
    assert cases[0].find("failure") is not None
    assert root.get("tests") == "2"
    text = md.read_text()
    assert (
        "Relevance gate failed" in text
        and "| ndcg@10 |" in text
        and "/pools/gated/compare/?c=baseline" in text
    )


@pytest.mark.parametrize(
    ("given", "stored"),
    [("nDCG@10", "ndcg@10"), ("ndcg_cut_10", "ndcg@10"), ("ndcg_cut.100", "ndcg@100"), ("P@5", "p@5"),
     ("P_10", "p@10"), ("RR", "mrr"), ("recip_rank", "mrr"), ("MAP", "ap"), ("UDCG@10", "udcg@10")],
)  # fmt: skip
def test_measure_names_of_export_scores_and_trec_eval(given, stored):
    assert measures.canonical(given) == stored


def test_the_command_line_exits_2_and_1(child_env, gated):
    """Through a real process: the exit codes a CI job sees."""
    base = [sys.executable, "manage.py", "gate", "--pool", "gated", "--baseline", "baseline"]
    usage = subprocess.run([*base, "--candidate", "baseline"], env=child_env, capture_output=True, text=True)
    assert usage.returncode == 2
    assert usage.stderr.strip().splitlines() == [
        "CommandError: The baseline and the candidate are the same configuration ('baseline')."
    ]
    failing = subprocess.run([*base, "--candidate", "worse"], env=child_env, capture_output=True, text=True)
    assert failing.returncode == 1
    assert json.loads(failing.stdout.strip().splitlines()[-1])["verdict"] == "fail"

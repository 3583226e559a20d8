"""What a gate says: one line per measure with the queries lost most, the JSON summary (the command's last
line, the API's answer), JUnit XML (one test case per measure, so every CI lists them) and a Markdown
summary for a pull-request comment. Pure: takes a service.GateResult, imports no Django."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

TEST_NAMES = {"t": "paired t-test", "randomization": "paired randomization test"}


def _number(value: float) -> str:
    return f"{value:.4f}"


def _p(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.2g}" if value < 0.001 else f"{value:.4f}"


def _drop(value: float) -> str:
    return f"{value:g}"


def reason(result, m) -> str:
    """Why a measure passed or failed, in words."""
    drop = m.baseline - m.candidate
    significant = not math.isnan(m.p) and m.p < result.alpha
    if not m.passed:
        return (
            f"dropped {_number(drop)} (more than max-drop {_drop(result.max_drop)}), "
            f"significant: p {_p(m.p)} < alpha {result.alpha:g}"
        )
    if drop <= result.max_drop:
        if drop > 0:
            return f"dropped {_number(drop)}, within max-drop {_drop(result.max_drop)}"
        return "no drop" if drop == 0 else f"improved by {_number(-drop)}"
    assert not significant
    return f"dropped {_number(drop)}, not significant: p {_p(m.p)} >= alpha {result.alpha:g}"


def measure_line(result, m) -> str:
    """One measure's verdict in one line."""
    return (
        f"{'PASS' if m.passed else 'FAIL'} {m.measure}: baseline {_number(m.baseline)}, candidate "
        f"{_number(m.candidate)}, diff {m.diff:+.4f}, p {_p(m.p)}; {reason(result, m)} "
        f"({m.wins} better, {m.ties} tied, {m.losses} worse)"
    )


def lines(result) -> list[str]:
    """The human-readable report: a header, then per measure its verdict line and the queries lost most."""
    out = [
        f"gate {result.pool.name}: {result.candidate.name} (run {result.candidate_run.pk}) against "
        f"{result.baseline.name} (run {result.baseline_run.pk}), flavour {result.flavour}, "
        f"{TEST_NAMES[result.test]} over {result.queries} queries, alpha {result.alpha:g}, "
        f"max-drop {_drop(result.max_drop)}"
    ]
    for m in result.measures:
        out.append(measure_line(result, m))
        if m.losers:
            listed = ", ".join(f"{x.query_id} {x.diff:+.4f}" for x in m.losers)
            out.append(f"  lost most: {listed}")
    out.append(f"verdict: {result.verdict.upper()}")
    return out


def summary(result, link: str = "") -> dict:
    """The JSON summary (the command's last stdout line; the API's answer)."""
    return {
        "verdict": result.verdict,
        "pool": result.pool.name,
        "baseline": {"configuration": result.baseline.name, "run": result.baseline_run.pk},
        "candidate": {"configuration": result.candidate.name, "run": result.candidate_run.pk},
        "flavor": result.flavour,
        "test": result.test,
        "alpha": result.alpha,
        "max_drop": result.max_drop,
        "queries": result.queries,
        "measures": [m.as_dict() for m in result.measures],
        "link": link,
    }


def junit_xml(result) -> str:
    """A JUnit XML report: one <testcase> per measure, a <failure> for a failed one."""
    name = f"relevance gate {result.pool.name}: {result.candidate.name} vs {result.baseline.name}"
    suites = ET.Element(
        "testsuites", name=name, tests=str(len(result.measures)), failures=str(len(result.failed))
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=name,
        tests=str(len(result.measures)),
        failures=str(len(result.failed)),
        errors="0",
        skipped="0",
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("pool", result.pool.name),
        ("baseline", f"{result.baseline.name} (run {result.baseline_run.pk})"),
        ("candidate", f"{result.candidate.name} (run {result.candidate_run.pk})"),
        ("flavor", result.flavour),
        ("test", TEST_NAMES[result.test]),
        ("alpha", f"{result.alpha:g}"),
        ("max_drop", _drop(result.max_drop)),
        ("queries", str(result.queries)),
    ):
        ET.SubElement(properties, "property", name=key, value=value)
    for m in result.measures:
        case = ET.SubElement(suite, "testcase", classname=f"gate.{result.pool.name}", name=m.measure)
        text = measure_line(result, m)
        if not m.passed:
            failure = ET.SubElement(
                case, "failure", message=f"{m.measure} {reason(result, m)}", type="RegressionGate"
            )
            failure.text = text + "\n" + _losers_text(m)
        else:
            ET.SubElement(case, "system-out").text = text
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _losers_text(m) -> str:
    if not m.losers:
        return "No query lost."
    return "Queries lost most: " + ", ".join(f"{x.query_id} {x.diff:+.4f}" for x in m.losers)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(result, link: str = "") -> str:
    """A Markdown summary for a pull-request or merge-request comment."""
    head = "✅ **Relevance gate passed**" if result.passed else "❌ **Relevance gate failed**"
    out = [
        f"{head}: `{_cell(result.candidate.name)}` (run {result.candidate_run.pk}) against "
        f"`{_cell(result.baseline.name)}` (run {result.baseline_run.pk}) in pool `{_cell(result.pool.name)}`",
        "",
        f"{TEST_NAMES[result.test]} over {result.queries} queries, flavour {result.flavour}, "
        f"alpha {result.alpha:g}, max-drop {_drop(result.max_drop)}.",
        "",
        "| measure | baseline | candidate | diff | p | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for m in result.measures:
        out.append(
            f"| {m.measure} | {_number(m.baseline)} | {_number(m.candidate)} | {m.diff:+.4f} | {_p(m.p)} "
            f"| {'pass' if m.passed else '**FAIL**'}: {_cell(reason(result, m))} |"
        )
    for m in result.measures:
        if m.losers:
            out += ["", f"Queries that lost most on {m.measure}:", ""]
            out += [
                f"- `{_cell(x.query_id)}`: {_number(x.baseline)} → {_number(x.candidate)} ({x.diff:+.4f})"
                for x in m.losers
            ]
    if link:
        out += ["", f"[Compare the two runs query by query]({link})"]
    return "\n".join(out) + "\n"

"""Server-side SVG charts: well-formed, data escaped, ranges that hold the data, no point lost at the ends."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from scoring import charts

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("low", "high"), [(-0.383, 0.383), (0.0, 1.0), (0.0, 0.001), (-1.0, -0.5), (0.3, 0.9), (-0.02, 0.38)]
)
def test_nice_ticks_cover_the_range_with_round_steps(low, high):
    ticks = charts.nice_ticks(low, high, 5)
    assert ticks[0] <= low + 1e-12 and ticks[-1] >= high - 1e-12
    steps = np.diff(ticks)
    assert np.allclose(steps, steps[0])
    mantissa = steps[0] / 10 ** np.floor(np.log10(steps[0]))
    assert any(np.isclose(mantissa, m) for m in (1, 2, 2.5, 5))


def test_tick_labels_show_the_decimals_the_step_needs():
    assert charts.tick_labels([-0.4, -0.2, 0.0, 0.2, 0.4]) == ["\u22120.4", "\u22120.2", "0", "0.2", "0.4"]
    assert charts.tick_labels([0.0, 0.0002, 0.0004]) == ["0", "0.0002", "0.0004"]
    assert charts.tick_labels([0.0, 0.25, 0.5]) == ["0", "0.25", "0.50"]


def test_line_chart_is_valid_svg_with_escaped_names_and_gaps_for_missing_values():
    svg = charts.line_chart(
        ["@3", "@5", "@10"],
        [("<bm25 & co>", [0.5, None, 0.7]), ("dense", [0.6, 0.65, 0.72])],
        title="NDCG <by> cutoff",
        y_label="mean NDCG",
    )
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert "&lt;bm25 &amp; co&gt;" in svg and "<bm25" not in svg
    circles = root.findall(f".//{SVG}circle")
    assert len(circles) == 5  # the missing value draws no point
    # bm25's two points are not joined across the gap: only dense has a polyline.
    assert len(root.findall(f".//{SVG}polyline")) == 1


def test_difference_chart_draws_every_query_sorted_and_counts_wins_and_losses():
    rng = np.random.default_rng(3)
    d = rng.normal(0.02, 0.1, 5000)
    d[:10] = 0.0
    svg = charts.difference_chart(d, title="t", name_a="A&B", name_b="C")
    root = ET.fromstring(svg)
    paths = root.findall(f".//{SVG}path")
    assert len(paths) == 2  # losses (red) and wins (green)
    points = [p for path in paths for p in re.findall(r"[ML]([\d.]+),([\d.]+)", path.get("d"))]
    assert len(points) <= 2 * (charts.MAX_DIFFERENCE_POINTS + 2)
    wins, losses = int((d > 1e-12).sum()), int((d < -1e-12).sum())
    assert f"C better: {wins:,}" in svg and f"A&amp;B better: {losses:,}" in svg and "ties: 10" in svg
    # The extremes are drawn: the lowest and highest y of the curve are the min and max difference.
    ticks = [
        float(t.text.replace("\u2212", "-"))
        for t in root.findall(f".//{SVG}text")
        if re.fullmatch(r"[\u2212\d.]+|0", t.text or "")
    ]
    assert min(ticks) <= d.min() and max(ticks) >= d.max()


def test_difference_chart_without_queries_says_so():
    svg = charts.difference_chart([], title="t", name_a="A", name_b="B")
    ET.fromstring(svg)
    assert "No query in common." in svg

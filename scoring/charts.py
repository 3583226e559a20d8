"""Server-side SVG charts: no JavaScript library, nothing fetched from the internet. No Django imports.

Each function returns one `<svg>` element as a string (the caller marks it safe for templates). Every
text that comes from data is escaped here. Charts scale with their container (viewBox, width 100%);
every chart's numbers are also offered as a table or CSV by the page that draws it.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

# Tableau 10: distinct, readable on white, tolerable for the common colour-vision deficiencies.
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
)  # fmt: skip
WIN, LOSS = "#1a7f37", "#b42318"
MAX_DIFFERENCE_POINTS = 800  # a sorted curve needs no more points than the chart has pixels


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2, 2.5 or 5 times a power of ten apart)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def tick_labels(ticks: list[float]) -> list[str]:
    """Labels with as many decimals as the tick step needs (0.25 steps: two; 0.0002 steps: four)."""
    if len(ticks) < 2:
        return [f"{t:g}" for t in ticks]
    step = abs(ticks[1] - ticks[0])
    decimals = 0
    while decimals < 10 and abs(round(step, decimals) - step) > step * 1e-6:
        decimals += 1
    labels = [f"{t:.{decimals}f}" for t in ticks]
    return ["0" if float(label) == 0 else label.replace("-", "\u2212") for label in labels]


def _svg_open(width: int, height: int, title: str, css_class: str) -> list[str]:
    return [
        f'<svg class="chart {css_class}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
        f'font-family="system-ui, sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
    ]


def line_chart(
    categories: list[str],
    series: list[tuple[str, list[float | None]]],
    *,
    title: str,
    y_label: str,
    y_range: tuple[float, float] | None = (0.0, 1.0),
    width: int = 680,
    height: int = 300,
) -> str:
    """Lines over categorical x positions (cutoffs, runs), one per series, with a legend on the right.

    None values leave a gap. y_range None fits the data (with round ticks)."""
    values = [v for _, ys in series for v in ys if v is not None and math.isfinite(v)]
    if y_range is None:
        low, high = (min(values), max(values)) if values else (0.0, 1.0)
        pad = (high - low) * 0.1 or 0.05
        ticks = nice_ticks(low - pad, high + pad)
    else:
        ticks = nice_ticks(*y_range)
    y_min, y_max = ticks[0], ticks[-1]
    legend_width = min(220, 40 + 7 * max((len(name) for name, _ in series), default=0))
    left, right, top, bottom = 54, legend_width + 16, 30, 46
    height = max(height, top + 18 * len(series) + bottom)
    plot_w, plot_h = width - left - right, height - top - bottom

    def x_at(i: int) -> float:
        return left + (plot_w * (i + 0.5) / len(categories) if categories else 0)

    def y_at(v: float) -> float:
        return top + plot_h * (1 - (v - y_min) / (y_max - y_min))

    out = _svg_open(width, height, title, "line-chart")
    out.append(f'<text x="{left}" y="16" font-weight="600">{escape(title)}</text>')
    for t, label in zip(ticks, tick_labels(ticks), strict=True):
        y = y_at(t)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e6ea"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#5b6470">{label}</text>')
    out.append(
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
        f'fill="#39414b">{escape(y_label)}</text>'
    )
    for i, category in enumerate(categories):
        out.append(
            f'<text x="{x_at(i):.1f}" y="{top + plot_h + 18}" text-anchor="middle" fill="#39414b">{escape(category)}</text>'
        )
    out.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#9aa3ad"/>'
    )
    for index, (name, ys) in enumerate(series):
        stroke = colour(index)
        segment: list[str] = []
        segments = []
        for i, v in enumerate(ys):
            if v is None or not math.isfinite(v):
                if segment:
                    segments.append(segment)
                segment = []
                continue
            segment.append(f"{x_at(i):.1f},{y_at(v):.1f}")
        if segment:
            segments.append(segment)
        for seg in segments:
            if len(seg) > 1:
                out.append(
                    f'<polyline fill="none" stroke="{stroke}" stroke-width="2" points="{" ".join(seg)}"/>'
                )
        for i, v in enumerate(ys):
            if v is None or not math.isfinite(v):
                continue
            out.append(
                f'<circle cx="{x_at(i):.1f}" cy="{y_at(v):.1f}" r="3.5" fill="{stroke}">'
                f"<title>{escape(name)} · {escape(categories[i])}: {v:.4f}</title></circle>"
            )
        ly = top + 8 + 18 * index
        lx = width - right + 14
        out.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}" stroke="{stroke}" stroke-width="3"/>')
        label = name if len(name) <= 26 else name[:25] + "…"
        out.append(
            f'<text x="{lx + 24}" y="{ly + 4}" fill="#1b1f24">{escape(label)}<title>{escape(name)}</title></text>'
        )
    out.append("</svg>")
    return "".join(out)


def difference_chart(
    differences,
    *,
    title: str,
    name_a: str,
    name_b: str,
    width: int = 960,
    height: int = 300,
) -> str:
    """Per-query differences B − A sorted ascending: A's wins on the left (red), B's on the right (green).

    Sorted values form a monotone curve, so it is drawn from at most MAX_DIFFERENCE_POINTS evenly spaced
    ranks (the first and last included), which is exact at the chart's resolution."""
    d = np.sort(np.asarray(differences, dtype=np.float64))
    n = d.size
    out = _svg_open(width, height, title, "difference-chart")
    left, right, top, bottom = 54, 16, 48, 46
    plot_w, plot_h = width - left - right, height - top - bottom
    out.append(f'<text x="{left}" y="16" font-weight="600">{escape(title)}</text>')
    if n == 0:
        out.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#5b6470">No query in common.</text>'
        )
        out.append("</svg>")
        return "".join(out)
    # Zero is always on the axis; the range follows the data (no empty half when one side never wins).
    low, high = min(float(d[0]), 0.0), max(float(d[-1]), 0.0)
    if high - low < 1e-9:
        low, high = -0.05, 0.05
    ticks = nice_ticks(low, high, 5)
    y_min, y_max = ticks[0], ticks[-1]

    def y_at(v: float) -> float:
        return top + plot_h * (1 - (v - y_min) / (y_max - y_min))

    def x_at(i: float) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    for t, label in zip(ticks, tick_labels(ticks), strict=True):
        y = y_at(t)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e6ea"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#5b6470">{label}</text>')
    out.append(
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
        f'fill="#39414b">{escape(name_b)} − {escape(name_a)}</text>'
    )
    index = np.unique(np.linspace(0, n - 1, min(n, MAX_DIFFERENCE_POINTS)).round().astype(int))
    zero = y_at(0.0)
    for values, fill in ((np.minimum(d[index], 0.0), LOSS), (np.maximum(d[index], 0.0), WIN)):
        if not values.any():
            continue
        if n == 1:
            x0, x1 = left + plot_w / 2 - 4, left + plot_w / 2 + 4
            out.append(
                f'<path d="M{x0:.1f},{zero:.1f} L{x0:.1f},{y_at(values[0]):.1f} L{x1:.1f},{y_at(values[0]):.1f} '
                f'L{x1:.1f},{zero:.1f} Z" fill="{fill}" fill-opacity="0.75"/>'
            )
            continue
        points = " L".join(f"{x_at(i):.1f},{y_at(v):.1f}" for i, v in zip(index, values, strict=True))
        out.append(
            f'<path d="M{x_at(index[0]):.1f},{zero:.1f} L{points} L{x_at(index[-1]):.1f},{zero:.1f} Z" '
            f'fill="{fill}" fill-opacity="0.75" stroke="{fill}" stroke-width="1"/>'
        )
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{zero:.1f}" y2="{zero:.1f}" stroke="#39414b"/>')
    losses = int(np.count_nonzero(d < -1e-12))
    wins = int(np.count_nonzero(d > 1e-12))
    ties = n - wins - losses
    # Legend under the title, above the plot, so it never covers the curve.
    out.append(
        f'<text x="{left}" y="34">'
        f'<tspan fill="{WIN}" font-weight="600">■ {escape(name_b)} better: {wins:,}</tspan>'
        f'<tspan dx="14" fill="{LOSS}" font-weight="600">■ {escape(name_a)} better: {losses:,}</tspan>'
        f'<tspan dx="14" fill="#5b6470">ties: {ties:,}</tspan></text>'
    )
    out.append(
        f'<text x="{left + plot_w / 2}" y="{height - 12}" text-anchor="middle" fill="#39414b">'
        f"queries sorted by difference (n = {n:,})</text>"
    )
    out.append("</svg>")
    return "".join(out)

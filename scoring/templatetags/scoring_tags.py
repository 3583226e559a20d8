"""Number formats of the score pages: one place, so a figure reads the same on every page and in tests."""

import math

from django import template

from scoring import metrics

register = template.Library()

MISSING = "—"


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


@register.filter
def score(value, digits=3):
    """0.51234 -> "0.512"; None -> "—"."""
    if _missing(value):
        return MISSING
    return f"{value:.{int(digits)}f}"


@register.filter
def signed(value, digits=3):
    """Differences: +0.012 / −0.004 (a real minus sign); None -> "—"."""
    if _missing(value):
        return MISSING
    text = f"{value:+.{int(digits)}f}"
    return text.replace("-", "\u2212")


@register.filter
def pct(value):
    """Shares: 0.934 -> "93%" (floor, so 89.9% never reads as 90%); None -> "—"."""
    if _missing(value):
        return MISSING
    return f"{math.floor(value * 100 + 1e-9):d}%"


@register.filter
def pvalue(value):
    """p-values: "< 0.001" or three decimals, truncated so 0.0504 never reads as 0.050."""
    if _missing(value):
        return MISSING
    if value < 0.001:
        return "< 0.001"
    return f"{math.floor(value * 1000 + 1e-9) / 1000:.3f}"


@register.filter
def interval(pair, digits=3):
    """(low, high) -> "0.018 to 0.066"."""
    if pair is None or any(_missing(v) for v in pair):
        return MISSING
    low, high = pair
    return f"{low:.{int(digits)}f} to {high:.{int(digits)}f}".replace("-", "\u2212")


@register.filter
def sortvalue(value):
    """A machine-readable value for client-side sorting (empty for missing)."""
    if _missing(value):
        return ""
    return repr(float(value))


@register.filter
def below(value, threshold):
    return not _missing(value) and value < float(threshold)


@register.filter
def get_item(mapping, key):
    """mapping[key], None when the mapping or key is missing (templates cannot subscript with a variable)."""
    if mapping is None:
        return None
    try:
        return mapping[key]
    except (KeyError, IndexError, TypeError):
        return None


@register.simple_tag
def score_flavours() -> list[str]:
    """The NDCG flavours a score download can be asked for (pages outside scoring list them)."""
    return list(metrics.FLAVOURS)


@register.simple_tag
def default_flavour() -> str:
    return metrics.DEFAULT_FLAVOUR


@register.simple_tag
def run_headline(run) -> dict | None:
    """A run's mean NDCG@10 and judged@10 in the default flavour, and the change since the
    configuration's previous run (pages outside scoring show it, e.g. after a capture). None when the
    run has no stored score yet (no grade in the pool, or scoring has not caught up)."""
    from judgments.models import Run

    from ..leaderboard import run_means

    if run is None:
        return None
    previous = Run.objects.filter(configuration=run.configuration_id, id__lt=run.pk).order_by("-id").first()
    ids = [run.pk] + ([previous.pk] if previous else [])
    summaries = run_means(ids, metrics.DEFAULT_FLAVOUR, metrics=("ndcg@10",))
    mine = summaries.get(run.pk)
    if mine is None:
        return None
    before = summaries.get(previous.pk) if previous else None
    ndcg = mine.means["ndcg@10"]
    return {
        "flavour": metrics.DEFAULT_FLAVOUR,
        "ndcg": ndcg,
        "judged": mine.judged["judged@10"],
        "queries": mine.n_queries,
        "previous": previous if before else None,
        "delta": ndcg - before.means["ndcg@10"] if before else None,
    }

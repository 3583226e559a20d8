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

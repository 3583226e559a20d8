"""The names scoring is organised by, without numpy or Django: cut-offs, NDCG flavours, metric names.

Split from `metrics` (which re-exports every name) so that code which only names flavours and metrics
(models, the leaderboard, the score exports, the commands) does not import numpy: an export command
then starts ~0.1 s sooner.
"""

from __future__ import annotations

from dataclasses import dataclass

CUTOFFS: tuple[int, ...] = (3, 5, 10, 100)
RELEVANCE_LEVEL: float = 1.0  # relevant (P, recall, MRR, AP) means grade >= 1, as trec_eval's -l1
GAINS = ("exp", "linear")
# URLs, the API and the commands take either spelling of the parameter; files and JSON write "flavor".
FLAVOUR_PARAMS = ("flavor", "flavour")


def flavour_param(params) -> str | None:
    """The flavour a query string (any mapping) names as `flavor` or `flavour`; None if neither is set."""
    for name in FLAVOUR_PARAMS:
        value = params.get(name)
        if value not in (None, ""):
            return value
    return None


DISCOUNTS = ("log2", "jk")
UNJUDGED = ("zero", "drop")


@dataclass(frozen=True)
class Flavour:
    name: str
    gain: str  # "exp" (2**g - 1) or "linear" (g)
    discount: str  # "log2" (1/log2(i+1)) or "jk" (1 for i <= 2, else 1/log2(i))
    unjudged: str  # "zero" (stay, gain 0) or "drop" (condensed list, trec_eval -J)
    description: str = ""

    def __post_init__(self) -> None:
        if self.gain not in GAINS:
            raise ValueError(f"unknown gain {self.gain!r}; expected one of {GAINS}")
        if self.discount not in DISCOUNTS:
            raise ValueError(f"unknown discount {self.discount!r}; expected one of {DISCOUNTS}")
        if self.unjudged not in UNJUDGED:
            raise ValueError(f"unknown unjudged {self.unjudged!r}; expected one of {UNJUDGED}")


FLAVOURS: dict[str, Flavour] = {
    f.name: f
    for f in (
        Flavour(
            "exp",
            "exp",
            "log2",
            "zero",
            "Exponential gain 2^g-1, log2(rank+1) discount, unjudged documents count as gain 0 "
            "(the usual web-search NDCG).",
        ),
        Flavour(
            "trec",
            "linear",
            "log2",
            "zero",
            "Linear gain g, log2(rank+1) discount, unjudged documents count as gain 0; "
            "identical to trec_eval -c -m ndcg_cut.",
        ),
        Flavour(
            "jk",
            "linear",
            "jk",
            "zero",
            "Linear gain g, Järvelin-Kekäläinen discount (ranks 1 and 2 undiscounted, then "
            "1/log2(rank)), unjudged documents count as gain 0.",
        ),
        Flavour(
            "judged",
            "linear",
            "log2",
            "drop",
            "Linear gain, log2(rank+1) discount, unjudged documents removed from the ranking "
            "before cutting (condensed list); identical to trec_eval -c -J -m ndcg_cut.",
        ),
    )
}
DEFAULT_FLAVOUR = "exp"

METRICS: tuple[str, ...] = (
    tuple(f"ndcg@{k}" for k in CUTOFFS)
    + tuple(f"p@{k}" for k in CUTOFFS)
    + tuple(f"recall@{k}" for k in CUTOFFS)
    + ("mrr", "ap")
)
JUDGED: tuple[str, ...] = tuple(f"judged@{k}" for k in CUTOFFS)
UDCG: tuple[str, ...] = tuple(f"udcg@{k}" for k in CUTOFFS)

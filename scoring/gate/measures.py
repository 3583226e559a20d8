"""Measure names a gate accepts: the names `export_scores` writes (ndcg@10, p@5, recall@100, mrr, ap,
udcg@10), in any case (nDCG@10, P@5), and trec_eval's and ir_measures' spellings of the same measures
(ndcg_cut_10, ndcg_cut.10, P_5, recip_rank, RR, map, AP). Pure: no Django."""

from __future__ import annotations

import re

# Whole-name aliases (lower case) -> the stored name.
ALIASES = {"rr": "mrr", "recip_rank": "mrr", "map": "ap"}
# trec_eval's measure_cutoff spellings (lower case): ndcg_cut_10 / ndcg_cut.10, p_5, recall_100, udcg_10.
_CUT = re.compile(r"^(ndcg_cut|ndcg|p|recall|udcg)[_.](\d+)$")


def canonical(name: str) -> str:
    """The stored spelling of a measure name (lower case, trec_eval's forms mapped); not checked."""
    lowered = name.strip().lower()
    lowered = ALIASES.get(lowered, lowered)
    match = _CUT.match(lowered)
    if match:
        family = "ndcg" if match.group(1) == "ndcg_cut" else match.group(1)
        return f"{family}@{match.group(2)}"
    return lowered


def resolve(names, known) -> list[str]:
    """The stored names of `names` (duplicates dropped, order kept); ValueError naming the first unknown
    one and the known names."""
    found = []
    for name in names:
        stored = canonical(name)
        if stored not in known:
            raise ValueError(f"Unknown measure {name!r}; one of {', '.join(known)}.")
        if stored not in found:
            found.append(stored)
    return found

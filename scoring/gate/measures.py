"""Measure names a gate accepts: the names `export_scores` writes (ndcg@10, p@5, recall@100, mrr, ap,
udcg@10), in any case (nDCG@10, P@5), and trec_eval's and ir_measures' spellings of the same measures
(ndcg_cut_10, ndcg_cut.10, P_5, recip_rank, RR, map, AP). Pure: no Django."""

from __future__ import annotations

from ..measures.names import fixed_name


def canonical(name: str) -> str:
    """The stored spelling of a measure name (scoring.measures.names.fixed_name); not checked."""
    return fixed_name(name)


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

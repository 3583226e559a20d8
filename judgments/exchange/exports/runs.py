"""A stored run as a TREC run file, formatted by PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator

from judgments.models import Run

from .stream import by_id, copy_trec_blocks

_VALID_ID = re.compile(r"[^\s\x00-\x1f\x7f-\x9f]+")


def run_tag(run: Run) -> str:
    """The run's own tag when it is a valid id, else its configuration's name."""
    from judgments.exchange.formats import MAX_ID_LENGTH

    tag = run.tag
    if tag and len(tag) <= MAX_ID_LENGTH and _VALID_ID.fullmatch(tag):
        return tag
    return run.configuration.name


def run_filename(run: Run) -> str:
    return f"{run.configuration.pool.name}.{run.configuration.name}.run{run.pk}.trec"


def run_blocks(run: Run) -> Iterator[bytes]:
    """TREC run lines ``qid Q0 docid rank score tag``, scores n..1 (strictly decreasing, so trec_eval's
    score sort keeps our order), by query id. PostgreSQL formats them, one block per ranking."""
    tag = run_tag(run)
    sql = f"""
        SELECT string_agg(q.external_id || ' Q0 ' || d.external_id || ' ' || u.ord || ' '
                          || (cardinality(r.doc_ids) - u.ord + 1) || ' ' || %s, E'\\n' ORDER BY u.ord)
        FROM judgments_ranking r
        JOIN judgments_query q ON q.id = r.query_id
        CROSS JOIN LATERAL unnest(r.doc_ids) WITH ORDINALITY AS u(doc, ord)
        JOIN judgments_document d ON d.id = u.doc
        WHERE r.run_id = %s
        GROUP BY q.external_id, r.id
        ORDER BY {by_id("q.external_id")}
    """
    return copy_trec_blocks(sql, [tag, run.pk], what=f"Run {run.pk}")


def run_chunks(run: Run) -> Iterator[str]:
    """run_blocks as text, for responses and text streams."""
    return (block.decode("utf-8") for block in run_blocks(run))

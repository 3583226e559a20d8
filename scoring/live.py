"""Try a query live (Quepid's main screen): send one query to a configuration's endpoint now and see its
top 10-20 with the pool's combined grades, the NDCG@10 of that list in the default flavour, and what
moved against the configuration's current (stored) run. Unjudged documents of the list can be sent to
the raters' queue from here.

Who: the configuration's team and admins (the page calls the team's engine with its credentials).
Queueing: admins, and engineers where the pool lets engineers queue (`access.may_queue`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from judgments.capture import client
from judgments.endpoints.answers import Explanation
from judgments.endpoints.engines import EXPLAINS, EndpointError, EndpointSpec
from judgments.models import Document, Pair, Query, Ranking, Run, SearchConfiguration
from judgments.scale import rounded_grade

from . import metrics
from .models import QueryScore
from .side_by_side import combined_grades

DEPTHS = (10, 20)
DEFAULT_DEPTH = 20
CUTOFF = 10
TIMEOUT = 10.0  # seconds: someone is waiting at the page
MAX_QUEUED = 50


@dataclass
class LiveDocument:
    rank: int
    doc_id: str
    document: Document | None  # None: not in the pool yet
    score: float | None
    grade: float | None  # combined grade; None: unjudged
    stored_rank: int | None  # rank in the current run's ranking of the query (None: not in it)
    queued: bool = False  # waiting in the raters' queue
    explanation: list[tuple[int, str, str]] = field(default_factory=list)  # (depth, value, what), flattened
    was: int | None = None  # rank in the list it is set against (tuning: the saved endpoint's list)

    @property
    def grade_class(self) -> str:
        return "unjudged" if self.grade is None else f"g{rounded_grade(self.grade)}"

    @property
    def grade_text(self) -> str:
        return "unjudged" if self.grade is None else f"{self.grade:.2f}".rstrip("0").rstrip(".")

    @property
    def moved(self) -> int | None:
        """Places gained (positive) or lost against the stored ranking; None if it was not ranked."""
        return None if self.stored_rank is None else self.stored_rank - self.rank

    @property
    def moved_since(self) -> int | None:
        """Places gained (positive) or lost against the list it is set against; None if new there."""
        return None if self.was is None else self.was - self.rank


@dataclass
class LiveResult:
    text: str
    query: Query | None  # the pool's query (picked, or typed with the same text)
    depth: int
    documents: list[LiveDocument] = field(default_factory=list)
    error: str | None = None
    total: int | None = None
    seconds: float = 0.0
    ndcg: float | None = None  # NDCG@10 of the live list in the default flavour (None: no grades)
    judged: float | None = None
    run: Run | None = None  # the configuration's current run
    stored_ndcg: float | None = None
    stored_ranked: bool = False  # the current run has a ranking for this query
    dropped: list[tuple[int, str, Document | None]] = field(default_factory=list)  # (stored rank, id, doc)

    @property
    def unjudged(self) -> list[LiveDocument]:
        return [d for d in self.documents if d.grade is None]

    @property
    def to_queue(self) -> list[LiveDocument]:
        """Unjudged documents not yet waiting in the raters' queue."""
        return [d for d in self.unjudged if not d.queued]


def pool_query(configuration: SearchConfiguration, query_id: str | None, text: str) -> Query | None:
    queries = Query.objects.filter(pool=configuration.pool_id)
    if query_id:
        return queries.filter(external_id=query_id).first()
    return queries.filter(text__iexact=text.strip()).order_by("external_id").first() if text.strip() else None


def flatten(tree: Explanation | None, limit: int = 200) -> list[tuple[int, str, str]]:
    """An engine's score explanation as (depth, value, description) lines, depth first."""
    lines: list[tuple[int, str, str]] = []
    stack = [(0, tree)] if tree is not None else []
    while stack and len(lines) < limit:
        depth, node = stack.pop()
        value = "" if node.value is None else f"{node.value:.4g}"
        lines.append((depth, value, node.description))
        stack.extend((depth + 1, child) for child in reversed(node.details))
    return lines


def live_query(
    configuration: SearchConfiguration,
    text: str,
    query: Query | None,
    depth: int,
    *,
    spec: EndpointSpec | None = None,
    explain: bool = False,
) -> LiveResult:
    """Ask the configuration's current endpoint (or `spec`, an unsaved edit of it) for `text` now, and
    set its answer against the pool; `explain` asks the engine why each hit scored as it did."""
    result = LiveResult(text=text, query=query, depth=depth)
    endpoint = configuration.endpoint
    if endpoint is None:
        result.error = "This configuration has no search endpoint."
        return result
    try:
        got = client.probe(
            spec or endpoint.spec(),
            text,
            query.external_id if query else "live",
            depth,
            # A typed text that is no query of the pool has no fields: a template using one says so.
            fields=query.fields if query else None,
            timeout=TIMEOUT,
            explain=explain,
        )
    except EndpointError as exc:
        result.error = f"The endpoint cannot be used: {exc}"
        return result
    result.seconds = got.seconds
    if not got.ok:
        result.error = got.error
        return result
    result.total = got.total
    ids = [doc_id for doc_id, _ in got.hits]
    documents = {
        d.external_id: d for d in Document.objects.filter(pool=configuration.pool_id, external_id__in=ids)
    }
    grades = combined_grades(query) if query else {}
    run = Run.objects.filter(configuration=configuration).order_by("-id").first()
    stored: list[int] = []
    if run is not None and query is not None:
        result.run = run
        stored = (
            Ranking.objects.filter(run=run, query=query).values_list("doc_ids", flat=True).first() or []
        )[:depth]
        result.stored_ranked = bool(stored)
    stored_rank = {pk: i for i, pk in enumerate(stored, start=1)}
    for rank, (doc_id, score) in enumerate(got.hits, start=1):
        doc = documents.get(doc_id)
        result.documents.append(
            LiveDocument(
                rank,
                doc_id,
                doc,
                score,
                grades.get(doc.pk) if doc else None,
                stored_rank.get(doc.pk) if doc else None,
                explanation=flatten(got.explanations.get(doc_id)),
            )
        )
    live_pks = {d.document.pk for d in result.documents if d.document}
    if query is not None:
        queued = set(
            Pair.objects.filter(query=query, document__in=live_pks, queued_at__isnull=False).values_list(
                "document_id", flat=True
            )
        )
        for d in result.documents:
            d.queued = d.document is not None and d.document.pk in queued
    gone = [pk for pk in stored if pk not in live_pks]
    names = Document.objects.in_bulk(gone)
    result.dropped = [(stored_rank[pk], names[pk].external_id, names[pk]) for pk in gone if pk in names]
    if query is not None and grades:
        result.ndcg, result.judged = _ndcg(result.documents, grades)
        if run is not None:
            row = (
                QueryScore.objects.filter(run=run, query=query, flavor=metrics.DEFAULT_FLAVOUR)
                .values_list("ndcg_10", flat=True)
                .first()
            )
            result.stored_ndcg = row
    return result


def _ndcg(documents: list[LiveDocument], grades: dict[int, float]) -> tuple[float, float]:
    """NDCG@10 and judged@10 of the live list in the default flavour (scoring.metrics, as stored scores)."""
    unknown = max([*grades, *(d.document.pk for d in documents if d.document)], default=0) + 1
    keys = []
    for d in documents:
        keys.append(d.document.pk if d.document else unknown)
        unknown += 0 if d.document else 1  # documents outside the pool: distinct keys, never graded
    rankings = np.full((1, max(1, len(keys))), -1, dtype=np.int64)
    rankings[0, : len(keys)] = keys
    judged = np.fromiter(grades.keys(), dtype=np.int64, count=len(grades))
    values = np.fromiter(grades.values(), dtype=np.float64, count=len(grades))
    scores = metrics.score(
        np.zeros(1, dtype=np.int64), rankings, np.zeros(len(judged), dtype=np.int64), judged, values
    )
    return float(scores[f"ndcg@{CUTOFF}"][0]), float(scores[f"judged@{CUTOFF}"][0])


# --- Views -------------------------------------------------------------------------------------------------


MANAGE = "Only the configuration's team and admins query its engine."


def depth_of(value: str | None) -> int:
    try:
        depth = int(value or DEFAULT_DEPTH)
    except ValueError:
        return DEFAULT_DEPTH
    return depth if depth in DEPTHS else DEFAULT_DEPTH


def explains(configuration: SearchConfiguration) -> str:
    """How the configuration's engine is asked to explain its scores ("" if it cannot be)."""
    endpoint = configuration.endpoint
    return EXPLAINS.get(endpoint.kind, "") if endpoint else ""

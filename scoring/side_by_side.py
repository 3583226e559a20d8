"""One query, two configurations: their current rankings side by side, each document with its combined
grade (or marked unjudged) and where the other configuration ranks it, with the stored scores of both.
A configuration whose rankings the viewer may not see (judgments.access.may_see_rankings) shows its
scores only: no document of its ranking, and no "where the other ranks it" on the other side."""

from __future__ import annotations

from dataclasses import dataclass

from judgments.models import Document, Query, Ranking, Run, SearchConfiguration
from judgments.scale import rounded_grade

from . import grades as grade_reader
from .comparison import SCORE_FIELDS, ComparisonError, check_flavour, current_runs
from .models import QueryScore


def combined_grades(query: Query) -> dict[int, float]:
    """{document pk: combined grade} of the query's judged documents, as the scores use them
    (`grade_reader.pool_grades`: an admin's final grade, else the pool's rule over the raters' grades)."""
    grades = grade_reader.pool_grades(query.pool, [query.pk])
    return dict(zip(grades.doc.tolist(), grades.grade.tolist(), strict=True))


@dataclass(frozen=True)
class RankedDocument:
    rank: int
    document: Document
    grade: float | None  # None: unjudged
    other_rank: int | None  # where the other configuration ranks it (None: not in its top depth)

    @property
    def grade_class(self) -> str:
        return "unjudged" if self.grade is None else f"g{rounded_grade(self.grade)}"

    @property
    def grade_text(self) -> str:
        if self.grade is None:
            return "unjudged"
        return f"{self.grade:.2f}".rstrip("0").rstrip(".")


@dataclass
class QuerySide:
    configuration: SearchConfiguration
    run: Run
    ranking: list[RankedDocument]  # top `depth`
    ranked: bool  # the run has a ranking for the query
    length: int  # documents in the full ranking
    scores: dict[str, float] | None  # stored metric -> value, None: no stored row
    private: bool = False  # the viewer may not see this ranking: `ranking` is empty, `length` 0


@dataclass
class QueryComparison:
    query: Query
    flavour: str
    depth: int
    a: QuerySide
    b: QuerySide


def query_comparison(
    a: SearchConfiguration,
    b: SearchConfiguration,
    query: Query,
    flavour: str,
    *,
    depth: int = 10,
    private: frozenset[int] = frozenset(),
) -> QueryComparison:
    """The two current rankings of one query side by side, with combined grades and stored scores.
    `private`: pks of configurations whose rankings are not shown (their rankings are not even read)."""
    flavour = check_flavour(flavour)
    runs = current_runs([a, b])
    missing = [c.name for c in (a, b) if c.pk not in runs]
    if missing:
        raise ComparisonError(f"No run yet for {', '.join(missing)}.")
    run_a, run_b = runs[a.pk], runs[b.pk]
    shown = [run for c, run in ((a, run_a), (b, run_b)) if c.pk not in private]
    rankings = dict(
        Ranking.objects.filter(run__in=shown, query=query).values_list("run_id", "doc_ids").order_by()
    )
    full_a, full_b = rankings.get(run_a.pk) or [], rankings.get(run_b.pk) or []
    top_a, top_b = full_a[:depth], full_b[:depth]
    documents = Document.objects.in_bulk(set(top_a) | set(top_b))
    grades = combined_grades(query)
    stored = {
        row["run_id"]: row
        for row in QueryScore.objects.filter(run__in=[run_a, run_b], query=query, flavor=flavour).values(
            "run_id", "has_ranking", *SCORE_FIELDS.values()
        )
    }

    def side(configuration, run, top, full, other_full) -> QuerySide:
        # A private other side's list is empty: no "#n in B" gives its ranking away.
        other_rank = {doc: i for i, doc in enumerate(other_full[:depth], start=1)}
        row = stored.get(run.pk)
        hidden = configuration.pk in private
        if hidden:
            # Whether the run ranks the query at all shows in its scores (0 without a ranking).
            return QuerySide(
                configuration=configuration,
                run=run,
                ranking=[],
                ranked=bool(row and row["has_ranking"]),
                length=0,
                scores={metric: row[f] for metric, f in SCORE_FIELDS.items()} if row else None,
                private=True,
            )
        return QuerySide(
            configuration=configuration,
            run=run,
            ranking=[
                RankedDocument(i, documents[doc], grades.get(doc), other_rank.get(doc))
                for i, doc in enumerate(top, start=1)
                if doc in documents
            ],
            ranked=bool(full),
            length=len(full),
            scores={metric: row[f] for metric, f in SCORE_FIELDS.items()} if row else None,
        )

    return QueryComparison(
        query=query,
        flavour=flavour,
        depth=depth,
        a=side(a, run_a, top_a, full_a, full_b),
        b=side(b, run_b, top_b, full_b, full_a),
    )

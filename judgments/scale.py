"""The words of the grade scale, written once for everyone who reads a grade: raters (the grading page),
model judges (their prompt), the pool settings form and the models. No Django imports: the judges'
prompt module is pure Python.

Grades are 0..4; -1, the distractor, exists only in pools that enable it (issue 13): a document that
looks relevant but misleads (UDCG gives it a negative utility). A pool's own `grade_scale` entries win
over these defaults, on the grading page and in the prompt alike.

`rounded_grade` is the one rule that turns a combined grade (a mean, a median) into a grade: the exports
(rounded qrels, RankLib), the trust page and the grade colours of the comparison pages use it.
"""

import math
from collections.abc import Mapping, Sequence

GRADES = (0, 1, 2, 3, 4)
LABELS = {0: "Not relevant", 1: "Marginal", 2: "Relevant", 3: "Highly relevant", 4: "Perfect"}
DESCRIPTIONS = {
    0: "The document does not help with the information need at all.",
    1: "Touches the topic but barely helps; the searcher would keep looking.",
    2: "Answers part of the need; useful.",
    3: "Answers the need well; the searcher would be satisfied.",
    4: "The ideal result for this query; exactly what was wanted.",
}

DISTRACTOR = -1
DISTRACTOR_LABEL = "Distractor"
DISTRACTOR_DESCRIPTION = (
    "Looks relevant at first sight (same topic, the query's words) but is wrong, outdated or "
    "misleading for this need: a reader relying on it would be worse off than with no document."
)


def rounded_grade(grade: float) -> int:
    """A combined grade as a whole grade: rounded half up, and a negative one -1. Scoring counts a pair
    whose combined grade is below 0 as a distractor (UDCG), so -0.5 stays a distractor rather than
    rounding up to a judged 0. (The rounded qrels' SQL, in judgments.exchange.exports.grades, writes
    the same.)"""
    return DISTRACTOR if grade < 0 else math.floor(grade + 0.5)


def scale_entries(grade_scale: Sequence[Mapping] | None, distractor: bool = False) -> list[dict]:
    """A pool's grades, ascending (-1 first when `distractor` is on), each with a label and a
    description: the pool's own words (its `grade_scale`), else the defaults (a label for every grade,
    a description for -1). What raters see on the grading page and model judges read in their prompt.
    Anything else in `grade_scale` is ignored."""
    given = {}
    for entry in grade_scale or ():
        grade = entry.get("grade") if isinstance(entry, Mapping) else None
        if isinstance(grade, int) and not isinstance(grade, bool):
            given.setdefault(grade, entry)
    entries = []
    for grade in ((DISTRACTOR,) if distractor else ()) + GRADES:
        entry = given.get(grade, {})
        label, description = (
            (DISTRACTOR_LABEL, DISTRACTOR_DESCRIPTION) if grade == DISTRACTOR else (LABELS[grade], "")
        )
        entries.append(
            {
                "grade": grade,
                "label": str(entry.get("label") or label),
                "description": str(entry.get("description") or description),
            }
        )
    return entries

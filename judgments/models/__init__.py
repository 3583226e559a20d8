"""The domain, one concern per module; every name is importable from judgments.models.

pools      grades 0-4 and -1 (their words: judgments.scale), combine rules, grade sources, pools, teams
documents  a pool's queries and documents
pairs      the pairs raters grade, judgments and their history, adjudication requests
runs       search configurations, runs and their rankings
capture    search endpoints (one row per version) and capture jobs; secret_fields encrypts their secrets
uploads    web uploads kept in parts between preview and confirm
judges     model judges (LLM raters) and their judging runs
evidence   the human sample for prediction-powered estimates, and judges' probe answers
tallies    stored counts (pairs' human grades, pools' and raters' counts) kept by triggers
snapshots  stored snapshots of heavy statistics and the change marker (judgments.snapshots)
jobs       the rule for a background job whose process died (captures, judging runs)

Rules that must never break (grade range, one judgment per rater and pair, no duplicate document in
a ranking, ids without whitespace) are database constraints, so no code path can get around them.
"""

from ..scale import DISTRACTOR, DISTRACTOR_DESCRIPTION, DISTRACTOR_LABEL
from .capture import CaptureJob, Schedule, SearchEndpoint
from .documents import Document, DocumentQuerySet, Query
from .evidence import HumanSample, JudgeExample, ProbeAnswer, ProbeKind, SampledQuery
from .judges import (
    JudgeRun,
    ModelJudge,
    ModelJudgeQuerySet,
    default_judge_system,
    default_judge_user,
    env_var_name,
)
from .pairs import (
    AdjudicationRequest,
    Judgment,
    JudgmentChange,
    JudgmentQuerySet,
    Pair,
    PairQuerySet,
    RaterStatus,
    RaterStatusChange,
    human_grade_count,
)
from .pools import (
    EXTERNAL_ID_MAX,
    GRADE_CHOICES,
    NO_WHITESPACE_SQL,
    CombineRule,
    Grade,
    GradeSource,
    Pool,
    QueueAccess,
    QueueStrategy,
    Team,
    default_grade_scale,
    distractor_refused,
    no_whitespace,
)
from .runs import ArrayHasNoDuplicates, Ranking, Run, RunQuerySet, SearchConfiguration
from .snapshots import Disagreement, Snapshot, SnapshotDue
from .tallies import Tally
from .uploads import Upload, UploadPart

__all__ = [
    "Disagreement",
    "Snapshot",
    "SnapshotDue",
    "DISTRACTOR",
    "DISTRACTOR_DESCRIPTION",
    "DISTRACTOR_LABEL",
    "EXTERNAL_ID_MAX",
    "GRADE_CHOICES",
    "NO_WHITESPACE_SQL",
    "AdjudicationRequest",
    "ArrayHasNoDuplicates",
    "CaptureJob",
    "CombineRule",
    "Document",
    "DocumentQuerySet",
    "Grade",
    "GradeSource",
    "HumanSample",
    "JudgeExample",
    "JudgeRun",
    "Judgment",
    "JudgmentChange",
    "JudgmentQuerySet",
    "ModelJudge",
    "ModelJudgeQuerySet",
    "Pair",
    "PairQuerySet",
    "ProbeAnswer",
    "ProbeKind",
    "Pool",
    "Query",
    "QueueAccess",
    "QueueStrategy",
    "RaterStatus",
    "RaterStatusChange",
    "Ranking",
    "SampledQuery",
    "Run",
    "RunQuerySet",
    "SearchConfiguration",
    "Schedule",
    "SearchEndpoint",
    "Tally",
    "Team",
    "Upload",
    "UploadPart",
    "default_grade_scale",
    "default_judge_system",
    "default_judge_user",
    "distractor_refused",
    "env_var_name",
    "human_grade_count",
    "no_whitespace",
]

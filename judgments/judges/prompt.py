"""The judge's prompt: an editable template rendered into Chat Completions messages. No Django imports.

A template is two texts, the system message and the user message, with named placeholders written
``{{ name }}`` (spaces optional). Rendering is one pass over the *template*: the values put in are never
scanned again, so a document body containing ``{{query}}``, ``{`` or ``}`` stays exactly as written. A
``{{ name }}`` that is not a known placeholder is left as it is (and :func:`template_problems` names it),
and single braces need no escaping, so a template can show the JSON answer it wants literally.

Placeholders: ``guidelines``, ``grade_scale`` (one line per grade: value, label, description),
``grades`` (the allowed values, "0, 1, 2, 3 or 4"), ``query``, ``information_need``, ``title``, ``body``,
and ``examples``: human-graded pairs of the pool with the humans' grade and notes (judges.examples).

The grade scale is the pool's (``[{"grade": 0, "label": ..., "description": ...}, ...]``) for 0..4;
with ``distractor=True`` the grade -1 is added (the pool's own words for -1, else the default ones):
a document that looks relevant but misleads. ``judgments.scale.scale_entries`` fills it in, for the
grading page as for the prompt, so raters and model judges read the same words. Title and body are
cut to configurable lengths, with a marker saying so, so the model knows it saw only part of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# The texts a new judge starts with: the core's, as the model's field defaults (judgments.judge_prompts).
from judgments.judge_prompts import DEFAULT_SYSTEM, DEFAULT_USER

# The pool's grades with their words, as the grading page shows them to raters (judgments.scale).
from judgments.scale import DISTRACTOR, GRADES, scale_entries  # noqa: F401 (scale_entries: judges' services)

MAX_BODY_CHARS = 4000
MAX_TITLE_CHARS = 300

PLACEHOLDERS = (
    "guidelines",
    "grade_scale",
    "grades",
    "query",
    "information_need",
    "title",
    "body",
    "examples",
)
EXAMPLE_BODY_CHARS = 600  # an example's document is cut shorter than the pair's own
REQUIRED = ("query", "body")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_DOCUMENT_TAG = re.compile(r"<(/?)(document|title|example_document)>", re.IGNORECASE)


@dataclass(frozen=True)
class PromptTemplate:
    """The two editable texts; the defaults are what a new judge starts with."""

    system: str = DEFAULT_SYSTEM
    user: str = DEFAULT_USER


@dataclass(frozen=True)
class PairText:
    """What the judge reads about one pair."""

    query: str
    information_need: str = ""
    title: str = ""
    body: str = ""


@dataclass(frozen=True)
class Example:
    """A pair the humans graded, shown to the judge with their grade and their notes as the reason."""

    text: PairText
    grade: int
    reason: str = ""


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill ``{{ name }}`` placeholders from ``values`` in one pass; unknown names stay as written."""

    def fill(match: re.Match) -> str:
        name = match.group(1)
        return str(values[name]) if name in values else match.group(0)

    return _PLACEHOLDER.sub(fill, template)


def pair_text(pair) -> PairText:
    """What a judge reads about a stored pair (anything with .query.text/.external_id/.information_need and
    .document.title/.body, e.g. a Pair with its query and document loaded)."""
    return PairText(
        query=pair.query.text or pair.query.external_id,
        information_need=pair.query.information_need,
        title=pair.document.title,
        body=pair.document.body,
    )


def placeholders_used(template: PromptTemplate) -> set[str]:
    return {m.group(1) for m in _PLACEHOLDER.finditer(template.system + "\n" + template.user)}


def template_problems(template: PromptTemplate) -> list[str]:
    """What is wrong with an edited template, as sentences (empty: fine). For the admin's form."""
    problems = []
    for part, text in (("system", template.system), ("user", template.user)):
        unknown = sorted({m.group(1) for m in _PLACEHOLDER.finditer(text)} - set(PLACEHOLDERS))
        if unknown:
            names = ", ".join(f"{{{{ {name} }}}}" for name in unknown)
            problems.append(
                f"The {part} message has unknown placeholders: {names}. Known: {', '.join(PLACEHOLDERS)}."
            )
    used = placeholders_used(template)
    for name in REQUIRED:
        if name not in used:
            problems.append(f"The template never shows the {name}: add {{{{ {name} }}}} to a message.")
    return problems


def allowed_grades(distractor: bool = False) -> frozenset[int]:
    """The grades an answer may carry: 0..4, and -1 when the pool enables distractors."""
    return frozenset(GRADES + ((DISTRACTOR,) if distractor else ()))


def truncate(text: str, limit: int | None) -> str:
    """``text`` cut to about ``limit`` characters (at a space when one is near), with a visible marker."""
    text = text or ""
    if limit is not None and limit < 0:
        raise ValueError("a truncation limit cannot be negative")
    if limit is None or len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", max(0, limit - 200))
    if space > 0:
        cut = cut[:space]
    return f"{cut.rstrip()}\n[… truncated: the first {len(cut):,} of {len(text):,} characters are shown]"


def _format_scale(entries: list[dict]) -> str:
    lines = []
    for entry in entries:
        line = f"{entry['grade']} = {entry['label']}"
        lines.append(f"{line}: {entry['description']}" if entry["description"] else line)
    return "\n".join(lines)


def _format_choices(grades: list[int]) -> str:
    values = [str(g) for g in grades]
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


def _format_examples(examples: Sequence[Example], max_title_chars: int | None) -> str:
    if not examples:
        return "(No examples.)"
    blocks = []
    for number, example in enumerate(examples, start=1):
        text = example.text
        title = _neutralise(truncate(text.title or "", max_title_chars))
        body = _neutralise(truncate(text.body or "", EXAMPLE_BODY_CHARS))
        reason = " ".join((example.reason or "").split()) or "(no note)"
        blocks.append(
            f"Example {number}\nQuery: {text.query}\n<example_document>\n<title>{title}</title>\n{body}\n"
            f"</example_document>\nGrade: {example.grade}\nWhy: {reason}"
        )
    return "\n\n".join(blocks)


def _neutralise(text: str) -> str:
    """The document's own <document>/<title> tags cannot close ours."""
    return _DOCUMENT_TAG.sub(r"<\1\2_>", text)


def build_messages(
    pair: PairText,
    *,
    template: PromptTemplate | None = None,
    guidelines: str = "",
    grade_scale: Sequence[Mapping] | None = None,
    distractor: bool = False,
    max_body_chars: int | None = MAX_BODY_CHARS,
    max_title_chars: int | None = MAX_TITLE_CHARS,
    examples: Sequence[Example] = (),
) -> list[dict]:
    """The Chat Completions ``messages`` (system, user) asking the judge to grade one pair; ``examples``
    fill ``{{ examples }}`` (human-graded pairs with their grade and reason)."""
    template = template or PromptTemplate()
    entries = scale_entries(grade_scale, distractor)
    values = {
        "guidelines": (guidelines or "").strip() or "(No pool-specific guidelines.)",
        "grade_scale": _format_scale(entries),
        "grades": _format_choices([e["grade"] for e in entries]),
        "query": pair.query or "",
        "information_need": (pair.information_need or "").strip()
        or "(Not given: judge from the query alone.)",
        "title": _neutralise(truncate(pair.title or "", max_title_chars)),
        "body": _neutralise(truncate(pair.body or "", max_body_chars)) or "(The document has no text.)",
        "examples": _format_examples(examples, max_title_chars),
    }
    return [
        {"role": "system", "content": render(template.system, values)},
        {"role": "user", "content": render(template.user, values)},
    ]

"""How the grading page shows a pair: the query's words highlighted in the document, the pool's
guidelines as cleaned Markdown, only http(s) links, extra fields as text and the pool's grade scale.

Everything is escaped or cleaned here (nh3) before it is marked safe; the views only place it.
"""

from __future__ import annotations

import json
import re

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from judgments.markup import render_markdown  # noqa: F401 (the grading page's helper)
from judgments.models import DISTRACTOR, Pool
from judgments.scale import scale_entries

DISTRACTOR_KEY = "d"  # the grading page's key for the distractor grade (static/js/grade.js)

_WORD = re.compile(r"\w+")
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it its my of on or the this to vs what "
    "when where which who why with".split()
)


def query_terms(text: str) -> list[str]:
    """The words of a query worth highlighting: lower-cased, no stopwords or single letters, longest first."""
    terms = {w.lower() for w in _WORD.findall(text or "") if len(w) > 1 and w.lower() not in STOPWORDS}
    return sorted(terms, key=lambda t: (-len(t), t))


def highlight(text: str, terms: list[str]) -> SafeString:
    """HTML of `text` with whole-word, case-insensitive matches of `terms` in <mark>.

    Every piece of the text is escaped, the matches included; only our own <mark> tags are added. Matching
    runs on the raw text so a term can never match inside an entity the escaping produced (`&amp;`)."""
    if not terms:
        return escape(text)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\b", re.IGNORECASE)
    parts, last = [], 0
    for match in pattern.finditer(text):
        parts.append(escape(text[last : match.start()]))
        parts.append(format_html("<mark>{}</mark>", match.group(0)))
        last = match.end()
    parts.append(escape(text[last:]))
    return mark_safe("".join(parts))


def highlight_paragraphs(text: str, terms: list[str]) -> SafeString:
    """Like highlight(), with blank lines as paragraphs and single newlines as line breaks."""
    paragraphs = [p for p in re.split(r"\n\s*\n", (text or "").replace("\r\n", "\n")) if p.strip()]
    html = "".join(
        format_html("<p>{}</p>", mark_safe(highlight(p.strip(), terms).replace("\n", "<br>")))
        for p in paragraphs
    )
    return mark_safe(html)


def safe_url(url: str) -> str:
    """The url if it is http(s), else "" (a javascript: url must never become a link)."""
    return url if re.match(r"^https?://", url or "", re.IGNORECASE) else ""


def extra_fields(extra) -> list[tuple[str, str]]:
    if not extra:
        return []
    if not isinstance(extra, dict):
        return [("extra", json.dumps(extra, ensure_ascii=False))]
    return [
        (str(k), v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) for k, v in extra.items()
    ]


def grade_scale(pool: Pool) -> list[dict]:
    """The pool's label and description for each grade 0–4, and for -1 (the distractor, key d) first
    when the pool enables it (judgments.scale.scale_entries: the model judges' prompt reads the same).
    key: the keyboard key; css: the class suffix."""
    return [
        {
            **entry,
            "key": DISTRACTOR_KEY if entry["grade"] == DISTRACTOR else str(entry["grade"]),
            "css": f"g{entry['grade']}",
        }
        for entry in scale_entries(pool.grade_scale, pool.distractors_enabled)
    ]

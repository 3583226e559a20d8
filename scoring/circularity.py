"""Circular evaluation: a configuration that reranks or generates with the judge's own model, or one of
its family, is graded by a judge that tends to agree with itself (Clarke & Dietz, "LLM-based relevance
assessment still can't replace human relevance assessment", arXiv 2412.17156). A configuration names
the model it uses in `SearchConfiguration.model_name`.

A model's family is the first run of letters of its name, lower-cased, after any "provider/" prefix and
before any ":tag": gpt-4o-mini and gpt-4.1 are "gpt", meta-llama/Llama-3.1-8B and llama3.1:8b are "llama",
claude-3-5-sonnet is "claude", qwen2.5:7b is "qwen". A name without letters at its start has no family and
matches only itself.
"""

from __future__ import annotations

import re

from judgments.models import ModelJudge, Pool, SearchConfiguration

_LETTERS = re.compile(r"[a-z]+")


def family(model: str) -> str:
    base = (model or "").strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]
    match = _LETTERS.match(base)
    return match.group(0) if match else ""


def same_model(a: str, b: str) -> str:
    """ "model" when a and b name the same model, "family" when they share a family, "" otherwise."""
    a, b = (a or "").strip(), (b or "").strip()
    if not a or not b:
        return ""
    if a.lower() == b.lower():
        return "model"
    fa = family(a)
    return "family" if fa and fa == family(b) else ""


def circular_configurations(pool: Pool, judge: ModelJudge | None = None) -> list[dict]:
    """{configuration, judge, match} for every configuration of the pool whose model is a judge's (all
    the pool's judges, or `judge`), or of its family."""
    judges = (
        [judge] if judge is not None else list(ModelJudge.objects.filter(pool=pool).select_related("user"))
    )
    found = []
    for configuration in (
        SearchConfiguration.objects.filter(pool=pool).exclude(model_name="").order_by("name")
    ):
        for candidate in judges:
            match = same_model(configuration.model_name, candidate.model)
            if match:
                found.append({"configuration": configuration, "judge": candidate, "match": match})
    return found

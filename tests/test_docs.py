"""The README and docs/ name files that exist: every path they mention (in `code` or as a link) is there.

A path is a mention whose first part is a folder of the repository (config/, judgments/, scoring/,
tests/, templates/, static/, docs/) or that ends in .py or .md; `<placeholders>`, globs and URLs are not
paths. Links are resolved from the document's folder, code mentions from the repository's root.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FOLDERS = ("config", "judgments", "scoring", "tests", "templates", "static", "docs")
CODE = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _paths(text: str) -> list[str]:
    found = []
    for candidate in CODE.findall(text):
        candidate = candidate.split(":")[0].rstrip(".,;")  # judgments/services.py:record_judgment
        if any(c in candidate for c in "<>*{}$=?") or "://" in candidate or candidate.startswith("/"):
            continue
        first = candidate.split("/")[0]
        if ("/" in candidate and first in FOLDERS) or re.fullmatch(r"[\w/.-]+\.(py|md)", candidate):
            found.append(candidate)
    return found


def test_the_docs_are_there():
    names = {d.name for d in DOCUMENTS}
    assert {"README.md", "architecture.md", "scoring.md", "performance.md", "operations.md"} <= names


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.name)
def test_every_path_a_document_names_exists(document):
    text = document.read_text()
    missing = [p for p in _paths(text) if not (ROOT / p).exists() and not (document.parent / p).exists()]
    missing += [
        link
        for link in LINK.findall(text)
        if "://" not in link and not link.startswith("mailto:") and not (document.parent / link).exists()
    ]
    assert missing == []


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150
    start = lines.index("## Where things are")
    tree = lines[start : lines.index("```", lines.index("```", start) + 1)]
    assert max(len(line) for line in tree) <= 100

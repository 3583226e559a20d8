"""The house's rooms, checked by reading every module's imports with `ast` (no import is executed).

1. `judgments/**` never imports `scoring` (signals carry the news from judgments to scoring).
2. The judgments core imports no wing (`judgments.rating`, `judgments.exchange`, `judgments.campaign`);
   the wings do not import each other; HTML views never import a REST module.
3. Pure modules (file formats, metrics, statistics, charts, agreement) import no Django.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ("models", "access", "services", "signals", "pgcopy", "scale", "lazy", "apps", "admin", "markup")
WINGS = ("judgments.rating", "judgments.exchange", "judgments.campaign")
PURE = (
    "judgments/exchange/formats",
    "judgments/scale.py",
    "scoring/metrics.py",
    "scoring/measures",
    "scoring/udcg.py",
    "scoring/flavours.py",
    "scoring/judged_table.py",
    "scoring/stats.py",
    "scoring/charts.py",
    "judgments/rating/agreement.py",
    "judgments/judges/prompt.py",
    "judgments/judges/answers.py",
    "judgments/judges/client.py",
    "judgments/judges/runner.py",
    "judgments/capture/templates.py",
    "judgments/capture/engines.py",
    "judgments/capture/answers.py",
    "judgments/capture/client.py",
    "judgments/capture/demo_engine.py",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, relative imports resolved, including imports inside functions."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _sources(*folders: str) -> list[Path]:
    files = []
    for folder in folders:
        target = ROOT / folder
        if target.suffix == ".py" and not target.exists():
            target = target.with_suffix("")  # a module that became a package (judgments/models/)
        candidates = [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))
        files += [f for f in candidates if "migrations" not in f.parts]
    return files


def _offending(files: list[Path], forbidden) -> list[str]:
    return [
        f"{f.relative_to(ROOT)} imports {name}"
        for f in files
        for name in sorted(_imports(f))
        if forbidden(name)
    ]


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_layout_sees_the_packages():
    assert len(_sources("judgments")) > 40 and len(_sources("scoring")) > 20
    assert "scoring.services" in _imports(ROOT / "scoring/receivers.py")


def test_judgments_never_imports_scoring():
    assert _offending(_sources("judgments"), lambda n: _within(n, "scoring")) == []


@pytest.mark.parametrize("module", CORE)
def test_core_imports_no_wing(module):
    files = _sources(f"judgments/{module}.py")
    assert _offending(files, lambda n: any(_within(n, w) for w in WINGS)) == []


@pytest.mark.parametrize("wing", WINGS)
def test_wings_do_not_import_each_other(wing):
    others = [w for w in WINGS if w != wing]
    files = _sources(wing.replace(".", "/"))
    assert files
    assert _offending(files, lambda n: any(_within(n, w) for w in others)) == []


def test_html_views_never_import_rest_modules():
    views = [f for f in _sources("judgments", "scoring") if f.stem in ("views", "downloads", "recompute")]
    assert views
    rest = ("judgments.api", "scoring.api")
    assert _offending(views, lambda n: any(_within(n, r) for r in rest)) == []


@pytest.mark.parametrize("target", PURE)
def test_pure_modules_import_no_django(target):
    files = _sources(target)
    assert files
    assert _offending(files, lambda n: _within(n, "django") or _within(n, "rest_framework")) == []
    assert _offending(files, lambda n: n.endswith(".models") or _within(n, "judgments.models")) == []

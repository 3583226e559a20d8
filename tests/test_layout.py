"""The house's rooms, checked by reading every module's imports with `ast` (no import is executed).

The packages are read from disk, not from a hand-kept list, so a new wing is checked the day it lands:
every package of judgments/ is a wing unless it is named here as part of the core or as a surface.

1. `judgments/**` never imports `scoring` (signals carry the news from judgments to scoring).
2. The core (judgments' own modules, models/, endpoints/, pgcopy/) imports no wing; the wings
   (capture, judges, campaign, rating, exchange, and any new package) do not import each other. The
   surfaces that route to every wing (the REST package api/, the management commands, urls.py) may.
3. REST modules (api, serializers) never import an HTML view module, and HTML views never import REST;
   management commands import neither.
4. No `from x import _name` across modules: a name another module uses is public.
5. No import circle among the app's modules (imports inside functions count: they only hide one).
6. Pure modules (file formats, metrics, statistics, charts, agreement) import no Django.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("judgments", "scoring", "config")
CORE_PACKAGES = ("models", "endpoints", "pgcopy")  # the core's packages; every other package is a wing
SURFACES = ("api", "management", "urls")  # may import any wing: they route to them
NOT_CODE = ("migrations", "templatetags")
EXPECTED_WINGS = {"capture", "judges", "campaign", "rating", "exchange"}
PURE = (
    "judgments/exchange/formats",
    "judgments/scale.py",
    "judgments/problems.py",
    "judgments/judge_prompts.py",
    "judgments/outbound.py",
    "judgments/query_fields.py",
    "judgments/endpoints",
    "scoring/metrics.py",
    "scoring/measures",
    "scoring/udcg.py",
    "scoring/flavours.py",
    "scoring/judged_table.py",
    "scoring/stats.py",
    "scoring/charts.py",
    "scoring/bands.py",
    "scoring/gate/measures.py",
    "scoring/gate/reports.py",
    "scoring/webhooks/signing.py",
    "judgments/rating/agreement.py",
    "judgments/judges/prompt.py",
    "judgments/judges/answers.py",
    "judgments/judges/client.py",
    "judgments/judges/runner.py",
    "judgments/capture/client.py",
    "judgments/capture/demo_engine.py",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(path: Path) -> list[str]:
    package = _module_name(path).split(".")
    return package if path.name == "__init__.py" else package[:-1]


def _import_nodes(path: Path):
    """(module, names) per import statement of `path`, relative imports resolved, inside functions too."""
    package = _package_of(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            yield module, [alias.name for alias in node.names]


def _imports(path: Path) -> set[str]:
    """Every module `path` imports (and every `module.name` it imports from one)."""
    found = set()
    for module, names in _import_nodes(path):
        found.add(module)
        found.update(f"{module}.{name}" for name in names)
    return found


def _sources(*folders: str) -> list[Path]:
    files = []
    for folder in folders:
        target = ROOT / folder
        if target.suffix == ".py" and not target.exists():
            target = target.with_suffix("")  # a module that became a package (judgments/models/)
        candidates = [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))
        files += [f for f in candidates if not set(NOT_CODE) & set(f.relative_to(ROOT).parts)]
    return files


def _packages(app: str) -> list[str]:
    """The packages directly under `app` on disk."""
    return sorted(
        d.name for d in (ROOT / app).iterdir() if (d / "__init__.py").exists() and d.name not in NOT_CODE
    )


WINGS = [name for name in _packages("judgments") if name not in (*CORE_PACKAGES, *SURFACES)]


def _top(path: Path) -> str:
    """The first part of `path` under judgments/: a package's name, or a module's without .py."""
    return path.relative_to(ROOT / "judgments").parts[0].removesuffix(".py")


CORE = [f for f in _sources("judgments") if _top(f) not in (*SURFACES, *WINGS)]
REST = [f for f in _sources(*APPS) if "api" in f.relative_to(ROOT).parts or f.stem in ("api", "serializers")]
HTML = [
    f for f in _sources(*APPS) if f.stem in ("views", "downloads", "recompute", "panel") or "views" in f.parts
]


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
    assert EXPECTED_WINGS <= set(WINGS), f"wings found on disk: {WINGS}"
    core_modules = {_module_name(f) for f in CORE}
    assert {"judgments.models", "judgments.views", "judgments.serializers", "judgments.login"} <= core_modules
    assert REST and HTML and not set(REST) & set(HTML)


def test_judgments_never_imports_scoring():
    assert _offending(_sources("judgments"), lambda n: _within(n, "scoring")) == []


def test_core_imports_no_wing():
    assert _offending(CORE, lambda n: any(_within(n, f"judgments.{w}") for w in WINGS)) == []


@pytest.mark.parametrize("wing", WINGS)
def test_wings_do_not_import_each_other(wing):
    others = [f"judgments.{w}" for w in WINGS if w != wing]
    files = _sources(f"judgments/{wing}")
    assert files
    assert _offending(files, lambda n: any(_within(n, o) for o in others)) == []


def _html_module(name: str) -> bool:
    return any(_within(name, _module_name(f)) for f in HTML)


def _rest_module(name: str) -> bool:
    return any(_within(name, _module_name(f)) for f in REST)


def test_rest_never_imports_html_views():
    assert _offending(REST, _html_module) == []


def test_html_views_never_import_rest():
    assert _offending(HTML, _rest_module) == []


def test_commands_import_no_page_or_rest_module():
    """A management command drives services, never a view or an API module."""
    commands = _sources("judgments/management", "scoring/management")
    assert commands
    assert _offending(commands, lambda n: _html_module(n) or _rest_module(n)) == []


def test_no_private_name_is_imported_from_another_module():
    found = [
        f"{f.relative_to(ROOT)}: from {module} import {name}"
        for f in _sources(*APPS)
        for module, names in _import_nodes(f)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert found == []


def _graph() -> dict[str, set[str]]:
    """module -> the app modules it imports (`from package import module` is an edge to the module)."""
    files = _sources(*APPS)
    known = {_module_name(f) for f in files}
    graph = {}
    for f in files:
        edges = set()
        for module, names in _import_nodes(f):
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
            if len(targets) < len(names) or not names:
                targets.append(module)
            edges.update(t for t in targets if t in known)
        graph[_module_name(f)] = edges - {_module_name(f)}
    return graph


def test_no_import_circle():
    graph, state, circles = _graph(), {}, []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                circles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


@pytest.mark.parametrize("target", PURE)
def test_pure_modules_import_no_django(target):
    files = _sources(target)
    assert files
    assert _offending(files, lambda n: _within(n, "django") or _within(n, "rest_framework")) == []
    assert _offending(files, lambda n: n.endswith(".models") or _within(n, "judgments.models")) == []

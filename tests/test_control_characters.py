"""A NUL or another control character in a URL (a query parameter, its name, or a path argument) is
refused before any view runs: 400 for the query string, 404 for the path, never a 500 (PostgreSQL text
cannot hold NUL, so a filter on one used to raise). One middleware (config.url_guard) does it; these
tests walk every route of the URL map and every query parameter the API schema names, as an admin
(who reaches every view)."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from config.url_guard import has_control_characters

# Query parameters the HTML pages read (the API's come from its schema below).
PAGE_PARAMS = (
    "q", "k", "page", "flavor", "flavour", "table", "c", "query", "depth", "all", "polling", "metric",
    "grade", "rater", "status", "kind", "format", "next", "search", "o",
)  # fmt: skip
BAD = ("\x00", "a\x00b", "\x01", "x\x1fy", "\x7f", "\x85")


def _routes(resolver=None, prefix=""):
    """(route text, pattern) for every URL of the map, resolvers flattened."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry


def _fill(route: str, values: dict, text_value: str) -> str:
    """A concrete path for a route: <int:..> gets its value or 1, text arguments get `text_value` (or a
    known value: the fixture pool's name, an export kind, a format suffix)."""
    route = route.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")

    def converter(match):
        kind, name = match.group(1) or "str", match.group(2)
        if kind == "int":
            return str(values.get(name, 1))
        return values.get(name, text_value)

    def group(match):
        return str(values.get(match.group(1), text_value))

    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", group, route)
    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", converter, route)


def _concrete_routes():
    """Routes without regex catch-alls that the guard is about (the admin's are included)."""
    return sorted({route for route, _ in _routes() if "(?P<url>" not in route})


@pytest.fixture
def admin_client(client, site_admin, pool, run):
    client.force_login(site_admin)
    return client


@pytest.mark.parametrize("bad", ["\x00", "a\x01b", "\x7f"])
def test_a_control_character_in_any_path_argument_is_a_404(admin_client, pool, bad):
    checked = 0
    for route in _concrete_routes():
        if not re.search(r"<(?:str:|path:)?\w+>|\(\?P<", route):
            continue
        for target in re.findall(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>", route):
            name = next(t for t in target if t)
            if name in ("format",) or name.endswith("_id") and "<int:" + name in route:
                continue
            values = {"pool": pool.name, "name": pool.name, "kind": "qrels", "format": "json", "fmt": "csv"}
            values[name] = f"x{bad}y"
            path = _fill(route, values, "1")
            response = admin_client.get(path)
            assert response.status_code == 404, (path, response.status_code)
            checked += 1
    assert checked > 40  # every route with a text argument, not a few


def _api_query_parameters(admin_client):
    schema = admin_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method != "get":
                continue
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    yield path, parameter["name"]


def test_a_control_character_in_any_api_filter_is_a_400(admin_client, pool, run):
    values = {"name": pool.name, "pool": pool.name, "id": run.pk, "kind": "qrels"}
    pairs = sorted(set(_api_query_parameters(admin_client)))
    assert len(pairs) > 30
    for template, name in pairs:
        path = re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), run.pk)), template)
        for bad in ("\x00", "a\x00b", "\x1b"):
            response = admin_client.get(path, {name: bad})
            assert response.status_code == 400, (path, name, response.status_code)
            assert "control character" in response.content.decode()


def test_a_control_character_in_any_page_parameter_is_a_400(admin_client, pool, run):
    values = {"pool": pool.name, "name": pool.name, "kind": "qrels", "format": "json", "fmt": "csv"}
    values |= {"run_id": run.pk, "configuration_id": run.configuration_id}
    routes = [r for r in _concrete_routes() if not r.startswith("api/") and not r.startswith("admin/")]
    for route in routes:
        path = _fill(route, values, pool.name)
        for name in PAGE_PARAMS:
            response = admin_client.get(path, {name: "\x00"})
            assert response.status_code == 400, (path, name, response.status_code)
        # the name of a parameter too
        assert admin_client.get(path, {"a\x00": "1"}).status_code == 400


def test_ordinary_text_passes(admin_client, pool, run):
    """Tabs, newlines and any printable text (accents, CJK, emoji) are not control characters here."""
    for text in ("café", "検索", "🙂", "a\tb", "a\nb", "100%"):
        assert not has_control_characters(text)
    assert admin_client.get(f"/pools/{pool.name}/leaderboard/", {"flavor": "trec"}).status_code == 200
    assert admin_client.get("/api/queries/", {"pool": pool.name, "search": "café 検索"}).status_code == 200
    for bad in BAD:
        assert has_control_characters(bad), repr(bad)


def test_the_answer_is_one_plain_line(admin_client):
    response = admin_client.get("/api/queries/", {"pool": "\x00"})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode().count("\n") <= 1

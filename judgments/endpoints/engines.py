"""A search endpoint's definition: where to send a query, how, with which credentials. No Django.

Kinds and what they default to (every default can be overridden):

============= ====== ================================= ================= ======== ==========
kind          method template                          hits              id       score
============= ====== ================================= ================= ======== ==========
elasticsearch POST   multi_match over title and body   ``hits.hits``     ``_id``  ``_score``
opensearch    POST   (same, JSON body)                 ``hits.hits``     ``_id``  ``_score``
solr          GET    ``q={{query}}&rows={{depth}}...`` ``response.docs`` ``id``   ``score``
json          POST   JSON body (GET: URL parameters)   required          required optional
============= ====== ================================= ================= ======== ==========

A request is built from the template (`templates`): a JSON body POSTed to the url, or URL parameters
appended to it (a Solr POST sends them as a form body). Answers are read by `answers`. Paths (hits, id
field, score field) are dotted paths (``hits.hits``) or JMESPath expressions.

Secrets (the auth secret, the values of headers, URL parameters, template parameters or JSON fields whose
name looks like a credential: api_key, token, password, ...) never appear in `repr`, `public_dict`,
`redacted` or any message; `scrub` blanks them out of text that came back from the engine.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from .answers import FieldPath, Hits, read_answer
from .templates import JsonTemplate, ParamsTemplate, TemplateError, compile_template

KINDS = ("elasticsearch", "opensearch", "solr", "json")
AUTH_KINDS = ("basic", "bearer", "apikey")
METHODS = ("GET", "POST")
REDACTED = "***"

ES_DEFAULT_TEMPLATE = """{
  "query": {"multi_match": {"query": "{{query}}", "fields": ["title", "body"]}},
  "size": {{depth}},
  "_source": false
}"""
SOLR_DEFAULT_TEMPLATE = "q={{query}}&rows={{depth}}&fl=id,score&wt=json"
# What a new endpoint's form starts from, per kind (editable; a json endpoint's answer paths still
# have to be given).
JSON_EXAMPLE_TEMPLATE = """{
  "query": "{{query}}",
  "size": {{depth}}
}"""
STARTING_TEMPLATES = {
    "elasticsearch": ES_DEFAULT_TEMPLATE,
    "opensearch": ES_DEFAULT_TEMPLATE,
    "solr": SOLR_DEFAULT_TEMPLATE,
    "json": JSON_EXAMPLE_TEMPLATE,
}
# The fields a kind uses beyond url, template, headers and auth (the others take the kind's defaults).
KIND_FIELDS = {
    "elasticsearch": (),
    "opensearch": (),
    "solr": ("method",),
    "json": ("method", "hits_path", "id_field", "score_field"),
}
# Kinds whose engine explains each hit's score: how to ask for it.
EXPLAINS = {"elasticsearch": "explain", "opensearch": "explain", "solr": "debugQuery"}
_DEFAULTS = {  # kind: (method, template, hits path, id field, score field)
    "elasticsearch": ("POST", ES_DEFAULT_TEMPLATE, "hits.hits", "_id", "_score"),
    "opensearch": ("POST", ES_DEFAULT_TEMPLATE, "hits.hits", "_id", "_score"),
    "solr": ("GET", SOLR_DEFAULT_TEMPLATE, "response.docs", "id", "score"),
    "json": ("POST", "", "", "", ""),
}

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SENSITIVE_HEADER = re.compile(
    r"auth|key|token|secret|pass|cookie|session|credential|signature", re.IGNORECASE
)
# A credential written into the URL or the template: name=value in a query string or a parameter
# template, "name": "value" in a JSON body, where the name looks like one (api_key, token, ...).
_INLINE_SECRET = re.compile(
    r"""(?P<p>(?:^|(?<=[?&\n]))(?P<pn>[^=&\n?#]+)=)(?P<pv>[^&\n#]*)"""
    r"""|(?P<j>"(?P<jn>[^"\\]+)"\s*:\s*")(?P<jv>(?:[^"\\]|\\.)*)(?=")"""
)


def _json_string(escaped: str) -> str:
    try:
        return json.loads(f'"{escaped}"')
    except ValueError:
        return escaped


class EndpointError(ValueError):
    """An endpoint definition that cannot be used (bad field, template, path, missing secret)."""


@dataclass(frozen=True, repr=False)
class EndpointSpec:
    """Where and how to ask a search engine. Empty fields take the kind's defaults (table above)."""

    kind: str
    url: str
    method: str = ""
    template: str = ""
    hits_path: str = ""
    id_field: str = ""
    score_field: str = ""  # "" for json: the engine gives no score
    headers: tuple[tuple[str, str], ...] = ()
    auth_kind: str = ""  # "", basic, bearer or apikey
    auth_user: str = ""  # basic only
    auth_secret: str = ""  # the password / token / key itself, or ...
    auth_secret_env: str = ""  # ... the name of the environment variable holding it
    auth_header: str = ""  # apikey only: send the bare key in this header instead of "Authorization: ApiKey"

    _template: JsonTemplate | ParamsTemplate = field(init=False, compare=False)
    _paths: tuple[FieldPath, FieldPath, FieldPath | None] = field(init=False, compare=False)

    def __post_init__(self):
        set_ = object.__setattr__  # frozen: defaults and compiled parts are set once, here
        if self.kind not in KINDS:
            raise EndpointError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        method, template, hits, id_field, score = _DEFAULTS[self.kind]
        set_(self, "method", (self.method or method).upper())
        set_(self, "headers", tuple((str(n), str(v)) for n, v in self.headers))
        self._check_url()
        if self.method not in METHODS:
            raise EndpointError(f"method must be GET or POST, not {self.method!r}")
        if self.kind in ("elasticsearch", "opensearch") and self.method != "POST":
            raise EndpointError(f"an {self.kind} endpoint is called with POST (_search with a JSON body)")
        if not self.template and self.kind == "json":
            raise EndpointError("a json endpoint needs a template")
        set_(self, "template", self.template or template)
        try:
            compiled = compile_template(self.template, self.template_format)
            if self.kind == "solr" and "wt" not in compiled.names:
                # Answers are read as JSON: a template without wt= gets wt=json, written into the template
                # itself so that the stored definition is exactly what was sent.
                set_(self, "template", self.template.rstrip("&\n ") + "&wt=json")
                compiled = compile_template(self.template, self.template_format)
        except TemplateError as exc:
            raise EndpointError(f"template: {exc}") from None
        set_(self, "_template", compiled)
        for name, default in (("hits_path", hits), ("id_field", id_field)):
            set_(self, name, (getattr(self, name) or default).strip())
            if not getattr(self, name):
                raise EndpointError(
                    f"a json endpoint needs {name.replace('_', ' ')} (a dotted path or JMESPath)"
                )
        set_(self, "score_field", (self.score_field or score).strip())
        try:
            paths = (
                FieldPath(self.hits_path, "hits path"),
                FieldPath(self.id_field, "id field"),
                FieldPath(self.score_field, "score field") if self.score_field else None,
            )
        except ValueError as exc:
            raise EndpointError(str(exc)) from None
        set_(self, "_paths", paths)
        self._check_headers_and_auth()

    def _check_url(self) -> None:
        try:
            parts = urlsplit(self.url)
        except (TypeError, ValueError) as exc:
            raise EndpointError(f"url {self.url!r} is not a URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EndpointError(f"url must be an http:// or https:// address with a host, not {self.url!r}")
        if parts.username is not None or parts.password is not None:
            raise EndpointError("url must not carry a user name or password: give them as auth (basic)")
        if parts.fragment or "{{" in self.url:
            raise EndpointError(
                "url must have no #fragment and no placeholders (placeholders go in the template)"
            )

    def _check_headers_and_auth(self) -> None:
        for name, value in self.headers:
            if not _HEADER_NAME.match(name):
                raise EndpointError(f"header name {name!r} is not a valid HTTP header name")
            if "\r" in value or "\n" in value:
                raise EndpointError(f"header {name} has a line break in its value")
        if not self.auth_kind:
            if self.auth_user or self.auth_secret or self.auth_secret_env or self.auth_header:
                raise EndpointError("auth user/secret given without an auth kind (basic, bearer or apikey)")
            return
        if self.auth_kind not in AUTH_KINDS:
            raise EndpointError(f"auth kind must be one of {', '.join(AUTH_KINDS)}, not {self.auth_kind!r}")
        if self.auth_kind == "basic" and not self.auth_user:
            raise EndpointError("basic auth needs a user name")
        if bool(self.auth_secret) == bool(self.auth_secret_env):
            raise EndpointError(
                "auth needs its secret either given or as an environment variable name, one of them"
            )
        if self.auth_secret_env and not _ENV_NAME.match(self.auth_secret_env):
            raise EndpointError(f"{self.auth_secret_env!r} is not an environment variable name")
        if self.auth_header and (self.auth_kind != "apikey" or not _HEADER_NAME.match(self.auth_header)):
            raise EndpointError("auth header is a valid header name, for apikey auth only")
        auth_name = (self.auth_header or "Authorization").lower()
        if any(n.lower() == auth_name for n, _ in self.headers):
            raise EndpointError(f"the {auth_name} header is set both as a header and by auth: keep one")

    # -- what is sent -------------------------------------------------------------------------------

    @property
    def template_format(self) -> str:
        """ "json" (a JSON body) or "params" (URL parameters; a form body for a Solr POST)."""
        if self.kind == "solr" or (self.kind == "json" and self.method == "GET"):
            return "params"
        return "json"

    def secret(self) -> str:
        """The auth secret, read from its environment variable if so defined (EndpointError if unset)."""
        if self.auth_secret_env:
            value = os.environ.get(self.auth_secret_env, "")
            if not value:
                raise EndpointError(
                    f"environment variable {self.auth_secret_env} (the endpoint's secret) is not set"
                )
            return value
        return self.auth_secret

    def _auth_header(self) -> tuple[str, str] | None:
        if not self.auth_kind:
            return None
        secret = self.secret()
        if self.auth_kind == "basic":
            token = base64.b64encode(f"{self.auth_user}:{secret}".encode()).decode("ascii")
            return "Authorization", f"Basic {token}"
        if self.auth_kind == "bearer":
            return "Authorization", f"Bearer {secret}"
        if self.auth_header:
            return self.auth_header, secret
        return "Authorization", f"ApiKey {secret}"

    def request_headers(self) -> dict[str, str]:
        """Every header of a request to this endpoint, secrets included (never log them)."""
        headers = {"Accept": "application/json"}
        if self.method == "POST":
            form = self.template_format == "params"
            headers["Content-Type"] = "application/x-www-form-urlencoded" if form else "application/json"
        headers.update(self.headers)
        auth = self._auth_header()
        if auth:
            headers[auth[0]] = auth[1]
        return headers

    @property
    def template_fields(self) -> frozenset[str]:
        """The query fields the template uses ({{query.fields.NAME}})."""
        return self._template.fields

    def build_request(
        self,
        query: str,
        query_id: str,
        depth: int,
        fields: Mapping[str, Any] | None = None,
        *,
        explain: bool = False,
    ) -> tuple[str, str, bytes | None]:
        """(method, url, body) for one query; MissingFieldError (a TemplateError) when the query lacks a
        field the template uses; `explain` asks the engine to explain each hit's score
        (Elasticsearch/OpenSearch `"explain": true` in the body, Solr `debugQuery=true`)."""
        rendered = self._template.render(query, query_id, depth, fields)
        if explain and self.kind in ("elasticsearch", "opensearch"):
            body = json.loads(rendered)
            if isinstance(body, dict):
                body["explain"] = True
                rendered = json.dumps(body).encode("ascii")
        elif explain and self.kind == "solr":
            rendered += "&debugQuery=true&debug.explain.structured=true"
        if isinstance(rendered, bytes):
            return self.method, self.url, rendered
        if self.method == "POST":
            return self.method, self.url, rendered.encode("ascii")
        return self.method, self.url + ("&" if "?" in self.url else "?") + rendered, None

    # -- secrets --------------------------------------------------------------------------------------

    def _sensitive(self, header: str) -> bool:
        return is_sensitive_header(header)

    def _inline_secrets(self, text: str) -> list[str]:
        found = []
        for m in _INLINE_SECRET.finditer(text):
            name, value = (m["pn"], m["pv"]) if m["p"] else (m["jn"], m["jv"])
            if self._sensitive(name) and value and "{{" not in value:
                found += [value, unquote(value) if m["p"] else _json_string(value)]
        return found

    def _hide_inline_secrets(self, text: str) -> str:
        def hide(m: re.Match) -> str:
            name, value, head = (m["pn"], m["pv"], m["p"]) if m["p"] else (m["jn"], m["jv"], m["j"])
            return head + REDACTED if self._sensitive(name) and value and "{{" not in value else m.group()

        return _INLINE_SECRET.sub(hide, text)

    def secrets(self) -> list[str]:
        """Every secret string a request carries, longest first (what `scrub` removes)."""
        found = [v for n, v in self.headers if self._sensitive(n) and v]
        found += self._inline_secrets(urlsplit(self.url).query) + self._inline_secrets(self.template)
        if self.auth_kind:
            try:
                found.append(self.secret())
                name, value = self._auth_header()
                found += [value, value.partition(" ")[2]]
            except EndpointError:
                pass
        return sorted({s for s in found if s}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self.secrets():
            text = text.replace(secret, REDACTED)
        return text

    def redacted(self) -> EndpointSpec:
        """This definition with every secret replaced by "***" (an environment variable's name stays)."""
        headers = tuple((n, REDACTED if self._sensitive(n) and v else v) for n, v in self.headers)
        url = urlsplit(self.url)
        return replace(
            self,
            url=url._replace(query=self._hide_inline_secrets(url.query)).geturl(),
            template=self._hide_inline_secrets(self.template),
            headers=headers,
            auth_secret=REDACTED if self.auth_secret else "",
        )

    def public_dict(self) -> dict[str, Any]:
        """The definition as plain data with secrets redacted: what a page, an API answer or a stored
        run may show. `from_dict(public_dict(), auth_secret=...)` gives the definition back."""
        shown = self.redacted()
        data = {name: getattr(shown, name) for name in _FIELDS}
        data["headers"] = [list(h) for h in data["headers"]]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides: Any) -> EndpointSpec:
        known = {k: v for k, v in {**data, **overrides}.items() if k in _FIELDS}
        known["headers"] = tuple(tuple(h) for h in known.get("headers") or ())
        return cls(**known)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.public_dict().items() if v not in ("", []))
        return f"EndpointSpec({shown})"

    def parse(self, status: int, reason: str, content_type: str, body: bytes, depth: int) -> Hits:
        """The hits of one answer, or EngineError with the engine's own words (see `answers`)."""
        return read_answer(self.kind, self._paths, status, reason, content_type, body, depth)

    # -- what comes back ----------------------------------------------------------------------------


_FIELDS = tuple(f.name for f in fields(EndpointSpec) if f.init)


def is_sensitive_header(name: str) -> bool:
    """A header (or parameter) whose name says its value is a credential: redacted, stored encrypted."""
    return bool(_SENSITIVE_HEADER.search(name))

"""Reading a search engine's answer: its hits, or its own words for what went wrong. No Django.

Answers are read as the engines document them: Elasticsearch/OpenSearch ``hits.hits[]._id``, ``_score``,
``hits.total`` as ``{"value", "relation"}`` (a bare number from versions before 7 is accepted), errors as
``{"error": {"type", "reason", "root_cause": [...]}, "status": N}``, a timed-out or shard-failed search is
a (retryable) failure rather than partial results; Solr ``responseHeader.status``, ``response.docs[]``,
``response.numFound``, errors as ``{"error": {"msg", "code"}}``; any other JSON through its hits path.
A path is a dotted path (``a.b.0.c``) or, failing that, a JMESPath expression (``data.items[?shown]``).

The top `depth` hits are kept in engine order; a repeated id keeps its first rank and is reported.
Ids become strings; an empty id, one with whitespace or a control character, or longer than 200
characters fails the query (qrels and run files are whitespace-separated).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import jmespath
import jmespath.exceptions
import orjson

MAX_ID_LENGTH = 200  # judgments.models.EXTERNAL_ID_MAX
# The characters the project's id rules reject (judgments/exchange/formats/problems.py).
_BAD_ID_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u200b\ufeff]")
_DOTTED = re.compile(r"[A-Za-z0-9_@$-]+(?:\.[A-Za-z0-9_@$-]+)*\Z")
MISSING = object()


class EngineError(Exception):
    """An answer (or a failure to get one) that yields no hits; `retryable` if trying again may help."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Hits:
    """One query's answer: the top `depth` (id, score or None) in engine order, duplicates dropped."""

    hits: list[tuple[str, float | None]]
    duplicates: list[str] = field(default_factory=list)
    total: int | None = None  # the engine's count of matches, when it gives one
    total_relation: str | None = None  # Elasticsearch: "eq" or "gte"


class FieldPath:
    """A dotted path or a JMESPath expression, compiled once."""

    def __init__(self, text: str, what: str):
        self.text = text
        self._parts = text.split(".") if _DOTTED.match(text) else None
        # One plain key ("_id", "score"): read straight from each hit, the common case made fast.
        self.key = self._parts[0] if self._parts and len(self._parts) == 1 else None
        self._jmes = None
        if self._parts is None:
            try:
                self._jmes = jmespath.compile(text)
            except jmespath.exceptions.JMESPathError as exc:
                raise ValueError(f"{what} {text!r} is neither a dotted path nor JMESPath: {exc}") from None

    def get(self, data: Any) -> Any:
        if self._jmes is not None:
            found = self._jmes.search(data)
            return MISSING if found is None else found
        for part in self._parts:
            if isinstance(data, dict):
                data = data.get(part, MISSING)
            elif (
                isinstance(data, list) and part.lstrip("-").isdigit() and -len(data) <= int(part) < len(data)
            ):
                data = data[int(part)]
            else:
                return MISSING
            if data is MISSING:
                return MISSING
        return data


def read_answer(
    kind: str,
    paths: tuple[FieldPath, FieldPath, FieldPath | None],
    status: int,
    reason: str,
    content_type: str,
    body: bytes,
    depth: int,
) -> Hits:
    """The hits of one answer of an engine of `kind`, or EngineError with the engine's own words for
    what went wrong. `paths`: hits, id field, score field (None: no scores)."""
    data, problem = _decode(body)
    line = f"HTTP {status} {reason}".rstrip()
    if not 200 <= status < 300:
        retryable = status in (408, 429) or (500 <= status <= 599 and status not in (501, 505))
        said = _error_text(data) if problem is None else None
        detail = said or (_excerpt(body) if problem else _compact(data))
        raise EngineError(f"{line}: {detail}" if detail else line, retryable=retryable)
    if problem is not None:
        if not body.strip():
            raise EngineError(f"the answer is empty ({line})")
        if body.lstrip()[:1] in (b"{", b"[") or "json" in content_type.lower():
            raise EngineError(
                f"malformed JSON in the answer ({line}): {problem}; it begins {_excerpt(body)!r}"
            )
        media = content_type.split(";")[0].strip() or "no content type"
        raise EngineError(f"the answer is not JSON ({line}, {media}): {_excerpt(body)!r}")
    if kind != "json" and isinstance(data, dict) and data.get("error"):
        raise EngineError(_error_text(data) or _compact(data))
    total = relation = None
    if kind in ("elasticsearch", "opensearch") and isinstance(data, dict):
        _check_es_complete(data)
        raw_total = _get(data, "hits", "total")
        if isinstance(raw_total, dict):
            total, relation = raw_total.get("value"), raw_total.get("relation")
        elif isinstance(raw_total, int):
            total, relation = raw_total, "eq"
    elif kind == "solr" and isinstance(data, dict):
        solr_status = _get(data, "responseHeader", "status")
        if solr_status not in (None, 0):
            raise EngineError(f"Solr status {solr_status}: {_error_text(data) or _compact(data)}")
        if _get(data, "responseHeader", "partialResults"):
            raise EngineError("Solr returned partial results (a shard failed or timed out)", retryable=True)
        total = _get(data, "response", "numFound")
    hits, duplicates = _take(data, paths, depth)
    total = total if isinstance(total, int) and not isinstance(total, bool) else None
    return Hits(hits, duplicates, total, relation if isinstance(relation, str) else None)


def _take(data: Any, paths: tuple, depth: int) -> tuple[list[tuple[str, float | None]], list[str]]:
    hits_path, id_path, score_path = paths
    found = hits_path.get(data)
    if found is MISSING:
        top = ", ".join(list(data)[:10]) if isinstance(data, dict) else type(data).__name__
        raise EngineError(f"no {hits_path.text!r} in the answer (it has: {top})")
    if not isinstance(found, list):
        raise EngineError(f"{hits_path.text!r} in the answer is {_type(found)}, not a list of hits")
    id_key, score_key = id_path.key, score_path.key if score_path else None
    fast = _take_plain(found, id_key, score_key if score_path else "", depth)
    if fast is not None:
        return fast, []
    # One pass with the checks of plain string ids and float scores deferred to a few bulk checks:
    # this runs for every hit of a query whose answer is not plain (see _take_plain).
    ids: list[str] = []
    scores: list[float | None] = []
    ranks: list[int] = []
    seen: set[str] = set()
    duplicates: list[str] = []
    for rank, hit in enumerate(found, start=1):
        if len(ids) == depth:
            break
        is_dict = type(hit) is dict
        raw = hit.get(id_key, MISSING) if id_key is not None and is_dict else id_path.get(hit)
        doc_id = raw if type(raw) is str else _doc_id(raw, rank, id_path.text)
        if doc_id in seen:
            duplicates.append(doc_id)
            continue
        seen.add(doc_id)
        ids.append(doc_id)
        ranks.append(rank)
        if score_path is None:
            scores.append(None)
            continue
        raw = hit.get(score_key, MISSING) if score_key is not None and is_dict else score_path.get(hit)
        scores.append(raw if type(raw) is float and math.isfinite(raw) else _score(raw, rank))
    if ids and ("" in seen or _BAD_ID_CHAR.search("".join(ids)) or max(map(len, ids)) > MAX_ID_LENGTH):
        for doc_id, rank in zip(ids, ranks, strict=True):
            _doc_id(doc_id, rank, id_path.text)  # raises for the first bad one
    return list(zip(ids, scores, strict=True)), duplicates


def _take_plain(found: list, id_key: str | None, score_key: str | None, depth: int) -> list | None:
    """The common answer read with list comprehensions (2-3x faster than the general loop): hits are
    objects with plain keys, ids unique strings of allowed characters, scores finite floats (score_key
    "": no scores). None when anything is otherwise: the general loop then reads it and says what."""
    if id_key is None or score_key is None:
        return None
    top = found[:depth]
    try:
        ids = [hit[id_key] for hit in top]
        scores = [hit[score_key] for hit in top] if score_key else [None] * len(top)
    except (KeyError, TypeError, IndexError):
        return None
    if not ids:
        return []
    if (
        set(map(type, ids)) != {str}
        or len(set(ids)) != len(ids)
        or "" in ids
        or max(map(len, ids)) > MAX_ID_LENGTH
        or _BAD_ID_CHAR.search("".join(ids))
    ):
        return None
    if score_key and (set(map(type, scores)) != {float} or not all(map(math.isfinite, scores))):
        return None
    return list(zip(ids, scores, strict=True))


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _decode(body: bytes) -> tuple[Any, str | None]:
    """The answer's JSON, or why it is none. orjson first (a third of json's time on a hundred hits); what
    it refuses goes to json, which reads what engines may write beyond strict JSON (NaN, integers past 64
    bits, lone surrogates) and words its errors with line and column."""
    try:
        return orjson.loads(body), None
    except orjson.JSONDecodeError:
        pass
    if not body.strip():
        return None, "the answer is empty"
    try:
        return json.loads(body), None
    except (ValueError, RecursionError) as exc:
        return None, str(exc)


def _excerpt(body: bytes, limit: int = 200) -> str:
    """The first `limit` characters of a page, tags stripped and whitespace collapsed."""
    text = body[: limit * 20].decode("utf-8", "replace")
    if "<" in text and ">" in text:
        text = re.sub(r"(?is)<(script|style)\b.*?</\1>|<[^>]*>", " ", text)
    return " ".join(text.split())[:limit]


def _compact(data: Any, limit: int = 200) -> str:
    return json.dumps(data, ensure_ascii=False)[:limit] if data is not None else ""


def _error_text(data: Any) -> str | None:
    """The engine's own words: Elasticsearch/OpenSearch error.type + reason (+ root cause), Solr
    error.msg, or a JSON API's error / message / detail."""
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        if "reason" in error or "type" in error:  # Elasticsearch / OpenSearch
            text = ": ".join(str(error[k]) for k in ("type", "reason") if error.get(k))
            causes = [c for c in error.get("root_cause") or [] if isinstance(c, dict)]
            causes += [error["caused_by"]] if isinstance(error.get("caused_by"), dict) else []
            for cause in causes:
                more = ": ".join(str(cause[k]) for k in ("type", "reason") if cause.get(k))
                if more and more not in text:
                    text += f" (caused by {more})"
                    break
            return text
        for key in ("msg", "message", "detail", "description"):  # Solr: msg
            if error.get(key):
                return str(error[key])
        if isinstance(error.get("trace"), str):
            return error["trace"].strip().splitlines()[0]
    for key in ("message", "detail", "error_description", "errors"):
        if data.get(key):
            return data[key] if isinstance(data[key], str) else _compact(data[key])
    return None


def _check_es_complete(data: dict) -> None:
    if data.get("timed_out") is True:
        raise EngineError("the search timed out in the engine (partial results)", retryable=True)
    shards = data.get("_shards")
    if isinstance(shards, dict) and isinstance(shards.get("failed"), int) and shards["failed"] > 0:
        failures = [f for f in shards.get("failures") or [] if isinstance(f, dict)]
        why = _error_text({"error": failures[0].get("reason")}) if failures else None
        text = f"{shards['failed']} of {shards.get('total', '?')} shards failed (partial results)"
        raise EngineError(f"{text}: {why}" if why else text, retryable=True)


def _doc_id(value: Any, rank: int, field_name: str) -> str:
    if value is MISSING or value is None:
        raise EngineError(f"the hit at rank {rank} has no {field_name!r}")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise EngineError(f"the id ({field_name!r}) at rank {rank} is {_type(value)}, not a string or number")
    doc_id = value if isinstance(value, str) else str(value)
    if not doc_id:
        raise EngineError(f"the id at rank {rank} is empty")
    m = _BAD_ID_CHAR.search(doc_id)
    if m:
        raise EngineError(
            f"the id {doc_id[:80]!r} at rank {rank} contains whitespace or a control character "
            f"(U+{ord(m.group()):04X} at position {m.start() + 1})"
        )
    if len(doc_id) > MAX_ID_LENGTH:
        raise EngineError(f"the id at rank {rank} is {len(doc_id)} characters long (at most {MAX_ID_LENGTH})")
    return doc_id


def _score(value: Any, rank: int) -> float | None:
    if value is MISSING or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise EngineError(f"the score at rank {rank} is {_type(value)}, not a number")
    try:
        score = float(value)
    except ValueError:
        raise EngineError(f"the score at rank {rank} is {value[:40]!r}, not a number") from None
    return score if math.isfinite(score) else None


# --------------------------------------------------------------------------------------------------
# Score explanations (try a query: "why is this document here?")

MAX_EXPLAIN_NODES = 400  # per hit: a deep BM25 explanation has tens of nodes; a runaway one is cut


@dataclass(frozen=True, slots=True)
class Explanation:
    """One node of an engine's score explanation: its value, what it is, and what it is made of."""

    value: float | None
    description: str
    details: tuple[Explanation, ...] = ()


def _explanation(node: Any, budget: list[int]) -> Explanation | None:
    if budget[0] <= 0:
        return None
    budget[0] -= 1
    if isinstance(node, str):
        return Explanation(None, node)
    if not isinstance(node, dict):
        return None
    value = node.get("value")
    value = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    details = tuple(
        e for e in (_explanation(d, budget) for d in node.get("details") or () if budget[0] > 0) if e
    )
    return Explanation(value, str(node.get("description", "")), details)


def read_explanations(kind: str, body: bytes) -> dict[str, Explanation]:
    """{hit id: its explanation} from an answer to a request built with `explain=True`: Elasticsearch
    and OpenSearch put `_explanation` on every hit; Solr puts `debug.explain` (structured, or a text per
    id). Empty for other kinds, or when the engine gave none."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    found: dict[str, Any] = {}
    if kind in ("elasticsearch", "opensearch"):
        for hit in _get(data, "hits", "hits") or ():
            if isinstance(hit, dict) and "_explanation" in hit and "_id" in hit:
                found[str(hit["_id"])] = hit["_explanation"]
    elif kind == "solr":
        explain = _get(data, "debug", "explain")
        if isinstance(explain, dict):
            found = {str(k): v for k, v in explain.items()}
        elif isinstance(explain, list):  # json.nl=flat: [id, explanation, id, explanation, ...]
            found = {str(k): v for k, v in zip(explain[::2], explain[1::2], strict=False)}
    out = {}
    for doc_id, node in found.items():
        tree = _explanation(node, [MAX_EXPLAIN_NODES])
        if tree is not None:
            out[doc_id] = tree
    return out

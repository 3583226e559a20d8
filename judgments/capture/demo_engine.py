"""A small real search engine for the demo and the tests: BM25 (bm25s) over documents {id, title, body},
answering ``POST /<index>/_search`` in Elasticsearch's request and response format. No Django.

    python -m judgments.capture.demo_engine --port 9200 --documents docs.jsonl [--index docs]

or from Python: ``server = serve(documents, port=0); ...; server.stop()`` (``server.search_url``).

Understood queries: ``multi_match`` (``fields`` with ``^boost``; ``type`` best_fields = the best field's
score, the default, or most_fields = their sum), ``match`` and ``match_all``; ``size`` (default 10),
``from``, ``_source`` (false, true or a list of fields) and ``explain`` (each hit's ``_explanation``: the
fields' and terms' BM25 weights, in Elasticsearch's value/description/details shape). Anything else gets Elasticsearch's error shape
``{"error": {"root_cause", "type", "reason"}, "status": 400}``; an unknown index a 404
``index_not_found_exception``. Only documents that match at least one term are hits, ranked by score,
ties in document order. Text is lower-cased, split on word characters and English stop words dropped.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

# bm25s sets its own logger to DEBUG and would print "Building index from tokens" at every start.
logging.getLogger("bm25s").setLevel(logging.WARNING)
FIELDS = ("title", "body")
MAX_RESULT_WINDOW = 10_000  # Elasticsearch's index.max_result_window
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOP = frozenset(STOPWORDS_EN)


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


class SearchError(Exception):
    """A request the engine refuses, with Elasticsearch's error type and HTTP status."""

    def __init__(self, status: int, type_: str, reason: str):
        super().__init__(reason)
        self.status, self.type, self.reason = status, type_, reason

    def body(self) -> dict[str, Any]:
        cause = {"type": self.type, "reason": self.reason}
        return {"error": {"root_cause": [cause], **cause}, "status": self.status}


class _Field:
    """One field's BM25 weights (built by bm25s): for each term, the documents containing it and the
    term's BM25 score in each (a term-major sparse matrix)."""

    def __init__(self, texts: list[str]):
        model = bm25s.BM25()
        # "" keeps an empty field indexable (bm25s needs a token per document); queries never contain it.
        model.index([tokens(t) or [""] for t in texts], show_progress=False)
        self.vocab: dict[str, int] = model.vocab_dict
        self.data, self.indices, self.indptr = (model.scores[k] for k in ("data", "indices", "indptr"))

    def postings(self, query_tokens: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """(document indexes, scores) of every query term's postings, a repeated term repeated."""
        spans = [
            (self.indptr[t], self.indptr[t + 1])
            for t in (self.vocab.get(q) for q in query_tokens)
            if t is not None
        ]
        if not spans:
            return None
        docs = np.concatenate([self.indices[a:b] for a, b in spans])
        return docs, np.concatenate([self.data[a:b] for a, b in spans])


class BM25Index:
    """BM25 per field over the documents. A query adds up its terms' postings (numpy's bincount), so an
    answer takes a fraction of a millisecond on the demo's few thousand documents."""

    def __init__(self, documents: Iterable[Mapping[str, Any]]):
        docs = list(documents)
        self.ids = [str(d["id"]) for d in docs]
        self.sources = [{f: d.get(f) or "" for f in FIELDS} for d in docs]
        self.fields = {name: _Field([s[name] for s in self.sources]) for name in FIELDS} if docs else {}

    def search(
        self,
        text: str | None,
        fields: Mapping[str, float] | None,
        size: int,
        offset: int = 0,
        combine: str = "max",
    ) -> tuple[int, list[tuple[int, float]]]:
        """(number of matching documents, [(document index, score)] of ranks offset..offset+size).
        combine: "max" (best_fields) or "sum" (most_fields) of the fields' boosted scores."""
        n = len(self.ids)
        if text is None:  # match_all: every document, score 1, in document order
            return n, [(i, 1.0) for i in range(offset, min(n, offset + size))]
        query_tokens = tokens(text)
        found = []
        for name, boost in (fields or dict.fromkeys(FIELDS, 1.0)).items():
            postings = self.fields[name].postings(query_tokens) if name in self.fields else None
            if postings is not None:
                found.append((postings[0], postings[1] * boost))
        if not found:
            return 0, []
        scores = None
        for docs, weights in found:
            field_scores = np.bincount(docs, weights=weights, minlength=n)
            if scores is None:
                scores = field_scores
            else:
                scores = np.maximum(scores, field_scores) if combine == "max" else scores + field_scores
        candidates = np.flatnonzero(scores > 0)
        scores = scores[candidates]
        matched, want = len(candidates), offset + size
        if want <= 0 or not matched:
            return matched, []
        if matched > want:  # the top `want` without sorting every match
            part = np.argpartition(-scores, want - 1)[:want]
            candidates, scores = candidates[part], scores[part]
        order = np.lexsort((candidates, -scores))[offset:want]  # ties: document order
        return matched, list(zip(candidates[order].tolist(), scores[order].tolist(), strict=True))

    def explain(
        self, text: str | None, fields: Mapping[str, float] | None, combine: str, doc: int
    ) -> dict[str, Any]:
        """Why document `doc` scored as it did, in Elasticsearch's `_explanation` shape: the fields'
        boosted BM25 weights combined (max or sum), each the sum of its terms' weights."""
        if text is None:
            return {"value": 1.0, "description": "*:*", "details": []}
        parts = []
        for name, boost in (fields or dict.fromkeys(FIELDS, 1.0)).items():
            field = self.fields.get(name)
            terms = []
            for term in dict.fromkeys(tokens(text)) if field is not None else ():
                found = field.postings([term])
                if found is None:
                    continue
                hit = np.flatnonzero(found[0] == doc)
                if len(hit):
                    weight = float(found[1][hit].sum()) * boost
                    terms.append(
                        {
                            "value": weight,
                            "description": f"weight({name}:{term} in {doc}) [BM25]",
                            "details": [],
                        }
                    )
            if terms:
                total = sum(t["value"] for t in terms)
                boosted = f"^{boost:g}" if boost != 1.0 else ""
                parts.append({"value": total, "description": f"{name}{boosted}: sum of:", "details": terms})
        value = max((p["value"] for p in parts), default=0.0)
        if combine != "max":
            value = sum(p["value"] for p in parts)
        return {"value": value, "description": "max of:" if combine == "max" else "sum of:", "details": parts}


def _field_boosts(fields: Any) -> dict[str, float]:
    if fields is None:
        return dict.fromkeys(FIELDS, 1.0)
    if isinstance(fields, str):
        fields = [fields]
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise SearchError(400, "parsing_exception", "[multi_match] fields must be a list of strings")
    boosts: dict[str, float] = {}
    for spec in fields:
        name, _, boost = spec.partition("^")
        try:
            weight = float(boost) if boost else 1.0
        except ValueError:
            raise SearchError(
                400, "parsing_exception", f"[multi_match] bad boost in field [{spec}]"
            ) from None
        for f in FIELDS if name in ("*", "_all") else [name]:
            boosts[f] = weight
    return boosts


def _query_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise SearchError(400, "parsing_exception", f"[{where}] query must be a string")


def parse_request(body: Any) -> dict[str, Any]:
    """The search a `_search` body asks for: text (None: match_all), fields, combine, size, offset, source."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise SearchError(400, "parsing_exception", "request body must be a JSON object")
    query = body.get("query", {"match_all": {}})
    if not isinstance(query, dict) or len(query) != 1:
        raise SearchError(400, "parsing_exception", "[query] must be an object with exactly one query")
    ((kind, args),) = query.items()
    search = {"text": None, "fields": None, "combine": "max"}
    if kind == "match_all":
        pass
    elif kind == "multi_match" and isinstance(args, dict) and "query" in args:
        search["text"] = _query_text(args["query"], kind)
        search["fields"] = _field_boosts(args.get("fields"))
        search["combine"] = "sum" if args.get("type") == "most_fields" else "max"
    elif kind == "match" and isinstance(args, dict) and len(args) == 1:
        ((name, value),) = args.items()
        value = value.get("query") if isinstance(value, dict) else value
        search["text"], search["fields"] = _query_text(value, kind), {name: 1.0}
    else:
        raise SearchError(400, "parsing_exception", f"unknown or malformed query [{kind}]")
    size, offset = body.get("size", 10), body.get("from", 0)
    for name, value in (("size", size), ("from", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SearchError(400, "illegal_argument_exception", f"[{name}] must be a non-negative integer")
    if size + offset > MAX_RESULT_WINDOW:
        raise SearchError(
            400,
            "illegal_argument_exception",
            f"Result window is too large, from + size must be less than or equal to: [{MAX_RESULT_WINDOW}] "
            f"but was [{size + offset}].",
        )
    source = body.get("_source", True)
    return {
        **search,
        "size": size,
        "offset": offset,
        "source": source,
        "explain": body.get("explain") is True,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a capture reuses its connections
    # Headers and body leave in one write (flushed after each request), sent at once (no Nagle delay
    # waiting for the client's delayed ACK: 40 ms a request otherwise).
    wbufsize = 1 << 16
    disable_nagle_algorithm = True
    server_version = "demo-bm25"
    server: DemoServer

    def log_message(self, format, *args):  # quiet: thousands of requests in a benchmark
        pass

    def _send(self, status: int, payload: dict[str, Any] | bytes) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0].strip("/")
        try:
            if path == "" and self.command == "GET":
                self._send(200, {"name": "demo", "cluster_name": "demo-bm25", "version": {"number": "demo"}})
                return
            index, _, action = path.rpartition("/")
            if action != "_search":
                raise SearchError(400, "invalid_request", f"no handler for [{self.command} /{path}]")
            if index not in (self.server.index, "_all", "*", ""):
                raise SearchError(404, "index_not_found_exception", f"no such index [{index}]")
            try:
                body = json.loads(raw) if raw.strip() else None
            except ValueError as exc:
                raise SearchError(
                    400, "x_content_parse_exception", f"Failed to parse request body: {exc}"
                ) from None
            answer = self.server.run_search(parse_request(body))
            if self.server.latency:  # a fixed server-side latency, as a real engine over a network has
                time.sleep(self.server.latency)
            self._send(200, answer)
        except SearchError as exc:
            self._send(exc.status, exc.body())

    do_GET = do_POST = _answer


class DemoServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self, documents: Iterable[Mapping[str, Any]], host: str, port: int, index: str, latency: float = 0.0
    ):
        self.engine = BM25Index(documents)
        self.index = index
        self.latency = latency
        self.index_json = json.dumps(index)
        self.id_json = [json.dumps(doc_id) for doc_id in self.engine.ids]
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def search_url(self) -> str:
        return f"{self.url}/{self.index}/_search"

    def run_search(self, search: dict[str, Any]) -> bytes:
        """The `_search` answer as JSON text, written by hand: json.dumps of a hundred hit objects would
        cost more than the search itself."""
        started = time.perf_counter()
        total, ranked = self.engine.search(
            search["text"], search["fields"], search["size"], search["offset"], search["combine"]
        )
        source, ids, index = search["source"], self.id_json, self.index_json
        if search.get("explain"):
            engine = self.engine
            hits = [
                f'{{"_index":{index},"_id":{ids[i]},"_score":{score!r},"_explanation":'
                f"{json.dumps(engine.explain(search['text'], search['fields'], search['combine'], i))}}}"
                for i, score in ranked
            ]
        elif source is False:
            hits = [f'{{"_index":{index},"_id":{ids[i]},"_score":{score!r}}}' for i, score in ranked]
        else:
            hits = []
            for i, score in ranked:
                doc = self.engine.sources[i]
                shown = doc if source is True else {k: v for k, v in doc.items() if k in source}
                hits.append(
                    f'{{"_index":{index},"_id":{ids[i]},"_score":{score!r},"_source":{json.dumps(shown)}}}'
                )
        max_score = repr(ranked[0][1]) if ranked else "null"
        took = int((time.perf_counter() - started) * 1000)
        return (
            f'{{"took":{took},"timed_out":false,"_shards":{{"total":1,"successful":1,"skipped":0,"failed":0}},'
            f'"hits":{{"total":{{"value":{total},"relation":"eq"}},"max_score":{max_score},"hits":[{",".join(hits)}]}}}}'
        ).encode()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def serve(
    documents: Iterable[Mapping[str, Any]],
    port: int = 0,
    host: str = "127.0.0.1",
    index: str = "docs",
    latency: float = 0.0,
) -> DemoServer:
    """Start the engine in a background thread (port 0: any free port); `.stop()` ends it. `latency`:
    seconds every search answer waits before it is sent (benchmarks of a realistic engine)."""
    server = DemoServer(documents, host, port, index, latency)
    threading.Thread(target=server.serve_forever, name="demo-engine", daemon=True).start()
    return server


def load_documents(path: str) -> list[dict[str, Any]]:
    """Documents from a JSON-lines file {id, title?, body?}; ValueError naming the line otherwise."""
    documents, seen = [], set()
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}, line {lineno}: not JSON ({exc})") from None
            doc_id = obj.get("id") if isinstance(obj, dict) else None
            if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or not str(doc_id).strip():
                raise ValueError(f"{path}, line {lineno}: needs an object with an id (a string or number)")
            if str(doc_id) in seen:
                raise ValueError(f"{path}, line {lineno}: the id {doc_id!r} repeats")
            for name in FIELDS:
                if obj.get(name) is not None and not isinstance(obj[name], str):
                    raise ValueError(f"{path}, line {lineno}: {name} must be a string")
            seen.add(str(doc_id))
            documents.append(obj)
    return documents


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", required=True, help="JSON lines: {id, title, body}")
    parser.add_argument("--port", type=int, default=9200)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--index", default="docs")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="fixed server-side latency per search")
    args = parser.parse_args(argv)
    try:
        documents = load_documents(args.documents)
        server = DemoServer(documents, args.host, args.port, args.index, args.latency_ms / 1000)
    except (OSError, ValueError) as exc:
        print(f"demo engine: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"demo engine: {len(documents)} documents at {server.search_url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

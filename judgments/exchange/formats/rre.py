"""Rated Ranking Evaluator (RRE) ratings JSON, as RRE reads it and as Quepid exports and imports it.

RRE (https://github.com/SeaseLtd/rated-ranking-evaluator) reads a ratings file in
``rre-core/.../core/Engine.java`` (``evaluateRatings``, ``relevantDocuments``, ``all``)::

    {"index": "core1", "id_field": "id", "corpora_file"?: "...", "query_placeholder"?: "$query",
     "topics": [{"description": "...", "query_groups": [{"name": "...", "template"?: "...",
        "queries": [{"template"?: "only_q.json", "placeholders": {"$query": "fender"},
                     "relevant_documents"?: {...}}],
        "relevant_documents"?: {...}}]}]}

- ``topics``, ``query_groups`` and ``queries`` are each optional: without the key the node itself is
  the one topic / group / query. So Quepid's flat ``{"id_field", "index", "template", "queries": [...]}``
  is a valid RRE file (one unnamed topic and group, the root's ``template`` shared by every query).
- A query's text is the first value of the key ``$query`` (``query_placeholder``) found anywhere in
  the query object, depth first (Jackson's ``findValue``); usually ``placeholders.$query``.
- A query's ``relevant_documents`` (absent: the group's; ``null`` or ``{}``: none) comes in two shapes,
  told apart by the first entry: keyed by doc id, ``{"doc1": {"gain": 3}}`` (``rating`` is read when
  there is no ``gain``; RRE's examples and Quepid's RRE export), or keyed by grade,
  ``{"3": ["doc1", "doc2"]}`` (the key parsed with ``Integer.parseInt``; what Quepid's RRE import reads).
- Every listed document is *relevant* to RRE's binary metrics (precision, recall, AP, RR), whatever
  its gain; a document not listed is not relevant. Hence :func:`write_rre` leaves grade 0 out unless told.

:func:`parse_rre` reads all of that into the records of Quepid's CSV (query text, doc id, grade 0-4).
Topics and query groups become tags of their queries (``RreRatings.tags``, judgments.query_tags.name_tag):
a query of group "Brand search" in topic "Fender basses" (the topic's ``description``, else its ``name``)
is tagged ``group:Brand-search`` and ``topic:Fender-basses`` (whitespace and commas as ``-``, control
characters dropped, cut to 64 characters; an unnamed group or topic gives no tag); a query in two
groups gets both. :func:`write_rre` writes queries carrying such tags grouped back under them (the
nested shape), so a round trip keeps which group and topic a query is in; names come back in their tag
form ("Brand-search"). What this app cannot hold, so a round trip loses it: group and topic
descriptions, templates per group or query, placeholders other than the query text, and which topic a
group sat in when a query is in groups of several topics; a grade that is not a whole number 0-4 is
refused. What RRE cannot hold: query ids (RRE knows queries by text), raters, can't-judge, notes,
timestamps, other tags, and (by default) grade 0. Pure Python, no Django.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from judgments.query_tags import GROUP, MAX_TAGS, TOPIC, name_tag, normalise

from . import jsonpos
from .problems import (
    GRADES,
    MAX_CSV_QUERY_LENGTH,
    Stream,
    excerpt,
    gc_paused,
    id_problem,
    json_type,
    require_id,
)
from .problems import (
    Reader as _Problems,
)
from .quepid import UnratedRow, check_query
from .read import iter_lines
from .records import JudgmentCsvRecord

SHAPES = ("grade", "doc")
_JAVA_INT = re.compile(r"[+-]?[0-9]{1,10}\Z")  # Integer.parseInt, within int32 (checked below)
_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # a lone surrogate (a JSON escape can make one): not storable


def _text_problem(value: str) -> str | None:
    m = _SURROGATE.search(value)
    return (
        f"contains a lone surrogate (U+{ord(m.group()):04X}), which is not valid Unicode text" if m else None
    )


@dataclass(slots=True)
class RreRatings:
    records: list[JudgmentCsvRecord]  # ``query`` is the query text; ``line`` where the document is listed
    unrated: list[UnratedRow] = field(default_factory=list)  # queries without relevant documents
    index: str | None = None
    id_field: str | None = None
    template: str | None = None  # the root's shared template (Quepid writes "template.json")
    corpora_file: str | None = None
    shape: str = "grade"  # how the first non-empty relevant_documents was keyed: "grade" or "doc"
    nested: bool = False  # the file had topics or query groups
    queries: list[str] = field(default_factory=list)  # every distinct query text, in file order
    # Of a nested file: every query text's tags from its topics and query groups (topic:..., group:...,
    # judgments.query_tags.name_tag), sorted; [] for a query in an unnamed group of an unnamed topic.
    tags: dict[str, list[str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # every query text's first line

    def rows(self) -> list[JudgmentCsvRecord | UnratedRow]:
        """Records and unrated queries, query by query in file order: what the writer takes."""
        by_query: dict[str, list[JudgmentCsvRecord | UnratedRow]] = {q: [] for q in self.queries}
        for row in [*self.records, *self.unrated]:
            by_query[row.query].append(row)
        return [row for rows in by_query.values() for row in rows]


# --------------------------------------------------------------------------------------------------
# Reading


def _key_path(path: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


class _Tree:
    def __init__(self, text: str, problems: _Problems):
        self.problems = problems
        self.lines = jsonpos.Lines(text)
        self.rd_cache: dict[int, list[tuple[int, str, int, str]]] = {}

    def line(self, node: Any, default: int = 0) -> int:
        return self.lines.of(node, default)

    def add(self, node: Any, path: str, message: str, line: int = 0) -> None:
        self.problems.add(self.line(node, line), path or "$", message)

    def object(self, node: Any, path: str, what: str, line: int = 0) -> bool:
        if not isinstance(node, dict):
            self.add(node, path, f"{what} must be a JSON object, got {json_type(node)}", line)
            return False
        for key in node.dupes:
            self.add(node, _key_path(path, key), f"key {key!r} appears twice in one object")
        return not node.dupes

    def all(self, node: jsonpos.Obj, key: str, path: str) -> list[tuple[jsonpos.Obj, str]]:
        """RRE's ``all``: the members of ``node[key]``, or the node itself when the key is absent."""
        if key not in node:
            return [(node, path)]
        value, kpath = node[key], _key_path(path, key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.add(value, kpath, f"{key} must be an array, got {json_type(value)}", self.line(node))
            return []
        members = []
        for i, member in enumerate(value):
            mpath = f"{kpath}[{i}]"
            if self.object(member, mpath, f"each of {key}", self.line(value)):
                members.append((member, mpath))
        return members

    def text(self, query: jsonpos.Obj, placeholder: str, path: str) -> str | None:
        found = _find_value(query, placeholder, path)
        if found is None:
            self.add(
                query, _key_path(_key_path(path, "placeholders"), placeholder), f"{placeholder} is missing"
            )
            return None
        value, vpath = found
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            self.add(
                value, vpath, f"the query text must be a string, got {json_type(value)}", self.line(query)
            )
            return None
        value = value.strip()
        msg = _text_problem(value)
        if msg:
            self.add(value, vpath, f"the query text {msg}", self.line(query))
            return None
        if not value or "\x00" in value or len(value) > MAX_CSV_QUERY_LENGTH:
            self.add(value, vpath, f"the query text is empty, has a NUL or is over {MAX_CSV_QUERY_LENGTH} characters",
                     self.line(query))  # fmt: skip
            return None
        return value

    def relevant(self, rd: Any, path: str, owner: jsonpos.Obj) -> list[tuple[int, str, int, str]]:
        """(line, doc id, grade, JSON path) of a relevant_documents value; parsed once per object."""
        if rd is None:
            return []
        cached = self.rd_cache.get(id(rd))
        if cached is not None:
            return cached
        out: list[tuple[int, str, int, str]] = []
        self.rd_cache[id(rd)] = out
        what = "relevant_documents (keyed by doc id or by grade)"
        if not self.object(rd, path, what, self.line(owner)) or not rd:
            return out
        first_key, first = next(iter(rd.items()))
        by_grade = isinstance(first, list)
        where: dict[str, str] = {}
        for key, value in rd.items():
            kpath = _key_path(path, key)
            if by_grade:
                if not isinstance(value, list):
                    self.add(value, kpath, f"the first entry ({first_key!r}) lists doc ids under a grade, so every "
                             f"entry must be an array of doc ids, got {json_type(value)}", self.line(rd))  # fmt: skip
                    continue
                grade = None
                if not _JAVA_INT.match(key) or not -(2**31) <= int(key) < 2**31:
                    self.add(
                        value,
                        kpath,
                        f"grade {excerpt(key)} must be a whole number 0-4 (RRE reads it as an integer)",
                    )
                elif int(key) not in GRADES:
                    self.add(value, kpath, f"grade {key} is outside 0-4")
                else:
                    grade = int(key)
                for i, doc in enumerate(value):
                    dpath = f"{kpath}[{i}]"
                    if isinstance(doc, int) and not isinstance(doc, bool):
                        doc = str(doc)
                    msg = id_problem(doc) or (_text_problem(doc) if isinstance(doc, str) else None)
                    if msg:
                        self.add(value[i], dpath, f"doc id {msg}", self.line(value))
                        continue
                    if doc in where:
                        self.add(
                            value[i],
                            dpath,
                            f"doc {doc} is listed twice ({where[doc]} and {dpath})",
                            self.line(value),
                        )
                        continue
                    where[doc] = dpath
                    if grade is not None:
                        out.append((self.line(value[i], self.line(value)), doc, grade, dpath))
            else:
                if not isinstance(value, dict):
                    self.add(value, kpath, f"the first entry ({first_key!r}) is a doc id with its gain, so every entry "
                             f'must be an object like {{"gain": 3}}, got {json_type(value)}', self.line(rd))  # fmt: skip
                    continue
                if not self.object(value, kpath, "a document's entry"):
                    continue
                msg = id_problem(key) or _text_problem(key)
                if msg:
                    self.add(value, kpath, f"doc id {msg}")
                    continue
                name = "gain" if "gain" in value else "rating"
                if name not in value:
                    self.add(
                        value, _key_path(kpath, "gain"), "gain is missing (RRE would use its missing grade)"
                    )
                    continue
                grade, msg = _gain(value[name])
                if msg:
                    self.add(value, _key_path(kpath, name), f"{name} {msg}")
                    continue
                out.append((self.line(value), key, grade, kpath))
        return out


def _name(node: jsonpos.Obj, *keys: str) -> str | None:
    """The first of `keys` holding a string or a number (RRE reads a topic's name from ``description``, a
    group's from ``name``, with Jackson's asText); None when there is none."""
    for key in keys:
        value = node.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    return None


def _place_tags(topic: jsonpos.Obj | None, group: jsonpos.Obj | None) -> list[str]:
    """The tags of a query's place: topic:<the topic's description (or name)>, group:<the group's name>
    (None: the query is not in a topic / group of its own, RRE's ``all`` took the node above)."""
    topic_name = None if topic is None else _name(topic, "description", "name")
    group_name = None if group is None else _name(group, "name")
    tags = [name_tag(TOPIC, topic_name or ""), name_tag(GROUP, group_name or "")]
    return [tag for tag in tags if tag]


def _find_value(node: Any, key: str, path: str) -> tuple[Any, str] | None:
    """Jackson's JsonNode.findValue: the first value of ``key``, depth first in document order."""
    stack = [(node, path)]
    while stack:
        current, cpath = stack.pop()
        children = []
        if isinstance(current, dict):
            for k, v in current.items():
                if k == key:
                    return v, _key_path(cpath, k)
                children.append((v, _key_path(cpath, k)))
        elif isinstance(current, list):
            children = [(v, f"{cpath}[{i}]") for i, v in enumerate(current)]
        # Depth first, in document order: the first child is searched completely before the second.
        stack.extend(reversed(children))
    return None


def _gain(value: Any) -> tuple[int | None, str | None]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        extra = " (RRE reads a string as 0)" if isinstance(value, str) else ""
        return None, f"must be a number 0-4, got {json_type(value)}{extra}"
    if isinstance(value, float) and not math.isfinite(value):
        return None, f"must be a number 0-4, got {value!r}"
    if value < 0 or value > max(GRADES):
        return None, f"{value!r} is outside 0-4"
    if value != int(value):
        return None, f"{value!r} is not a whole number (grades are the integers 0-4)"
    return int(value), None


def _read_text(stream: Stream, problems: _Problems) -> str:
    return "".join(text for _, text in iter_lines(stream, problems, keep_ends=True))


@gc_paused
def parse_rre(stream: Stream, name: str = "<file>") -> RreRatings:
    """An RRE ratings file (RRE's own, nested or flat; Quepid's RRE export or import shape).

    Returns every judged (query text, doc id, grade) with the line its document is listed on, the
    queries without relevant documents (``unrated``), and the file's ``index``, ``id_field``,
    ``template``, ``corpora_file``. Problems name the JSON path as their field, e.g.
    ``topics[0].query_groups[1].relevant_documents["2"].gain``. A grade must be a whole number 0-4
    (``3.0`` is 3). The same query text listed twice (in two groups) is one query: the same document
    with two different grades is a problem. Raises FormatError or returns the whole file."""
    problems = _Problems(name)
    text = _read_text(stream, problems)
    problems.raise_if_any(name)
    if not text.strip():
        problems.add(0, "file", "file is empty (no " + "ratings" + ")")
        problems.raise_if_any(name)
    reader = _Tree(text, problems)
    try:
        root = jsonpos.load(text)
    except json.JSONDecodeError as exc:
        problems.add(exc.lineno, "json", f"invalid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        problems.add(0, "json", "invalid JSON: nested too deeply")
    except ValueError as exc:  # NaN/Infinity, an integer too long to convert
        problems.add(0, "json", f"invalid JSON: {exc}")
    problems.raise_if_any(name)
    if not reader.object(root, "", "a ratings file", 1):
        problems.raise_if_any(name)
    meta: dict[str, str | None] = {}
    for key in ("index", "id_field", "template", "corpora_file", "query_placeholder"):
        value = root.get(key)
        if value is not None and not isinstance(value, str):
            reader.add(value, key, f"{key} must be a string, got {json_type(value)}", reader.line(root))
            value = None
        meta[key] = value
    placeholder = meta.pop("query_placeholder") or "$query"
    if not any(key in root for key in ("topics", "query_groups", "queries", "placeholders")):
        problems.add(1, "queries", 'no queries: expected a "queries" array (or "topics" or "query_groups")')
        problems.raise_if_any(name)
    result = RreRatings([], [], **meta, nested="topics" in root or "query_groups" in root)
    graded: dict[tuple[str, str], tuple[int, int]] = {}
    places: dict[str, set[str]] = {}
    texts: list[tuple[int, str, bool]] = []
    seen_texts: set[str] = set()
    shape = None
    try:
        for topic, tpath in reader.all(root, "topics", ""):
            result.nested |= "query_groups" in topic
            for group, gpath in reader.all(topic, "query_groups", tpath):
                for query, qpath in reader.all(group, "queries", gpath):
                    qtext = reader.text(query, placeholder, qpath)
                    owner, opath = (query, qpath) if "relevant_documents" in query else (group, gpath)
                    rd = owner.get("relevant_documents")
                    judged = reader.relevant(rd, _key_path(opath, "relevant_documents"), owner)
                    if shape is None and isinstance(rd, dict) and rd:
                        shape = "grade" if isinstance(next(iter(rd.values())), list) else "doc"
                    if qtext is None:
                        continue
                    texts.append((reader.line(query), qtext, bool(judged)))
                    if qtext not in seen_texts:
                        seen_texts.add(qtext)
                        result.queries.append(qtext)
                        result.lines[qtext] = reader.line(query)
                    tags = places.setdefault(qtext, set())
                    before = len(tags)
                    tags.update(
                        _place_tags(None if topic is root else topic, None if group is topic else group)
                    )
                    if len(tags) > MAX_TAGS >= before:
                        problems.add(reader.line(query), qpath, f"query {excerpt(qtext)} is in topics and query "
                                     f"groups giving more than {MAX_TAGS} tags (at most {MAX_TAGS} a query)")  # fmt: skip
                    for line, doc, grade, dpath in judged:
                        first = graded.get((qtext, doc))
                        if first is None:
                            graded[(qtext, doc)] = (line, grade)
                            result.records.append(JudgmentCsvRecord(line, qtext, doc, grade))
                        elif first[1] != grade:
                            problems.add(line, dpath, f"query {excerpt(qtext)} doc {doc} has grade "
                                         f"{first[1]} on line {first[0]} and {grade} here")  # fmt: skip
    except RecursionError:
        problems.add(0, "json", "nested too deeply")
    if not problems and not texts:
        problems.add(0, "file", "file is empty (no " + "queries" + ")")
    problems.raise_if_any(name)
    judged_texts = {r.query for r in result.records}
    seen_unrated: set[str] = set()
    for line, qtext, has_docs in texts:
        if not has_docs and qtext not in judged_texts and qtext not in seen_unrated:
            seen_unrated.add(qtext)
            result.unrated.append(UnratedRow(line, qtext))
    result.shape = shape or "grade"
    if result.nested:
        result.tags = {text: normalise(places[text]) for text in result.queries}
    return result


# --------------------------------------------------------------------------------------------------
# Writing


def _places(
    queries: Iterable[str], tags: Mapping[str, Iterable[str]]
) -> dict[str, dict[str, list[str]]] | None:
    """{topic: {group: [query texts]}} of the queries' topic: and group: tags, in order of first
    appearance ("" for a query without one); None when no query has either (the flat file)."""
    places: dict[str, dict[str, list[str]]] = {}
    nested = False
    for query in queries:
        own = list(tags.get(query, ()))
        topics = [t.removeprefix(TOPIC) for t in own if t.startswith(TOPIC)]
        groups = [t.removeprefix(GROUP) for t in own if t.startswith(GROUP)]
        nested |= bool(topics or groups)
        for topic in topics or [""]:
            for group in groups or [""]:
                places.setdefault(topic, {}).setdefault(group, []).append(query)
    return places if nested else None


def write_rre(
    rows: Iterable[JudgmentCsvRecord | UnratedRow | tuple[str, str | None, int | None]],
    *,
    index: str,
    id_field: str = "id",
    template: str | None = "template.json",
    corpora_file: str | None = None,
    shape: str = "grade",
    keep_zero: bool = False,
    compact: bool = False,
    tags: Mapping[str, Iterable[str]] | None = None,
) -> Iterator[str]:
    """An RRE ratings file that RRE and Quepid both read: the flat shape
    ``{"id_field", "index", "corpora_file"?, "template"?, "queries": [{"placeholders": {"$query": text},
    "relevant_documents": ...}]}``, one query per distinct text in order of first appearance.

    tags: {query text: its tags}. When a query carries a ``group:`` or ``topic:`` tag, the file is
    nested instead, ``"topics": [{"description": T, "query_groups": [{"name": G, "queries": [...]}]}]``
    (topics and groups in order of their first query; a query without a topic tag is in a topic
    described "", without a group tag in a group named ""; a query with two group tags is written in
    both groups, as RRE allows), so that :func:`parse_rre` gives the same tags back.

    shape="grade": ``{"3": ["doc1", "doc2"], ...}`` (grades ascending, documents in input order; the
    shape Quepid imports); shape="doc": ``{"doc1": {"gain": 3}, ...}`` (input order; Quepid's export,
    RRE's examples). Grade 0 is left out unless keep_zero (RRE counts every listed document as relevant);
    a query left with no document has no ``relevant_documents`` (Quepid then still creates the query).
    Rows are records or ``(query text, doc id, grade)`` with None for a query or pair without a grade.
    template: the query template RRE fills (Quepid writes "template.json"), None to leave it out.
    compact: no indentation (Quepid's own output); else two spaces (RRE's examples)."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")
    for key, value in (("index", index), ("id_field", id_field)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{key} must be a non-empty string, got {value!r}")
    queries: dict[str, dict[str, int]] = {}
    for row in rows:
        if isinstance(row, JudgmentCsvRecord):
            query, docid, grade = row.query, row.doc_id, row.grade
        elif isinstance(row, UnratedRow):
            query, docid, grade = row.query, None, None
        else:
            query, docid, grade = row
        docs = queries.setdefault(check_query(query), {})
        if grade is None:
            continue
        if isinstance(grade, bool) or grade not in GRADES:
            raise ValueError(f"grade must be an integer 0-4 or None, got {grade!r}")
        require_id(docid, "doc id")
        if docid in docs:
            raise ValueError(f"query {query!r} doc {docid} is graded twice")
        docs[docid] = int(grade)
    out: dict[str, Any] = {"id_field": id_field, "index": index}
    if corpora_file is not None:
        out["corpora_file"] = corpora_file
    if template is not None:
        out["template"] = template
    entries = {}
    for query, docs in queries.items():
        entry: dict[str, Any] = {"placeholders": {"$query": query}}
        kept = {d: g for d, g in docs.items() if g > 0 or keep_zero}
        if kept and shape == "doc":
            entry["relevant_documents"] = {d: {"gain": g} for d, g in kept.items()}
        elif kept:
            entry["relevant_documents"] = {
                str(g): [d for d, dg in kept.items() if dg == g] for g in sorted(set(kept.values()))
            }
        entries[query] = entry
    places = _places(queries, tags or {})
    if places is None:
        out["queries"] = list(entries.values())
    else:
        out["topics"] = [
            {
                "description": topic,
                "query_groups": [
                    {"name": group, "queries": [entries[q] for q in members]}
                    for group, members in groups.items()
                ],
            }
            for topic, groups in places.items()
        ]
    if compact:
        text = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(out, ensure_ascii=False, indent=2)
    for line in text.split("\n"):
        yield line + "\n"

"""Measure names in ir_measures syntax: parse them, check them, print them canonically. No Django, no numpy,
and no ir_measures at run time (the tests compare this parser with ir_measures' on many names).

The syntax is ir_measures': ``Name``, ``Name@k``, ``Name(p1=v1, p2=v2)`` or ``Name(p1=v1)@k``, where a
value is an integer, a decimal, ``True``/``False``, a quoted string or a ``{int: number, ...}`` map, e.g.
``nDCG@10``, ``P(rel=2)@5``, ``RBP(p=0.9,rel=2)``, ``nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10``.

The canonical name is what ``str(ir_measures.parse_measure(name))`` prints: the family's own name (an
alias such as ``MRR`` or ``NDCG`` becomes ``RR``/``nDCG``), the parameters in the order written, those
equal to their default left out, ``@k`` last; in a gain map the entries ``g:g`` are left out (ir_measures
prints ``gains={0:0,1:1,2:3}`` as ``gains={2:3}``).

Families computed here (scoring.measures.compute has their definitions), with their parameters:

=========  ======================================  =====================================
family     parameters (default)                    cut-off
=========  ======================================  =====================================
nDCG       gains={grade: gain}, dcg='log2'         optional (none: the whole ranking)
P, R       rel (1)                                 required
Success    rel (1)                                 required
RR, AP     rel (1)                                 optional
ERR        -                                       optional
Rprec      rel (1)                                 none
Bpref      rel (1)                                 none
infAP      rel (1)                                 none
Judged     -                                       optional
RBP        p (0.8), rel (none: graded, g/4)        optional
UDCG       -                                       required (our own; see scoring.udcg)
=========  ======================================  =====================================

Pool-dependent checks (a ``rel`` outside the grade scale, a gain map that leaves out a grade the pool
uses) are in :func:`check_for_scale`; :func:`parse` checks everything else. Errors are one line
(:class:`MeasureError`), naming the bad part and the accepted forms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "ALIASES",
    "FAMILIES",
    "MAX_CUTOFF",
    "Measure",
    "MeasureError",
    "accepted_forms",
    "check_for_scale",
    "fixed_name",
    "parse",
    "parse_set",
]

MAX_CUTOFF = 10_000
_NO_DEFAULT = object()


class MeasureError(ValueError):
    """A measure name that cannot be used; str() is one line."""


@dataclass(frozen=True)
class _Param:
    kinds: tuple[type, ...]
    default: object = _NO_DEFAULT
    choices: tuple | None = None


@dataclass(frozen=True)
class _Family:
    name: str
    params: dict[str, _Param] = field(default_factory=dict)
    cutoff: str = "optional"  # "optional", "required" or "none"
    example: str = ""


_REL = _Param((int,), 1)
FAMILIES: dict[str, _Family] = {
    f.name: f
    for f in (
        _Family(
            "nDCG",
            {"gains": _Param((dict,)), "dcg": _Param((str,), "log2", ("log2", "exp-log2"))},
            example="nDCG@10, nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10",
        ),
        _Family("P", {"rel": _REL}, "required", "P@10, P(rel=2)@5"),
        _Family("R", {"rel": _REL}, "required", "R@100, R(rel=2)@10"),
        _Family("Success", {"rel": _REL}, "required", "Success@10, Success(rel=3)@1"),
        _Family("RR", {"rel": _REL}, example="RR, RR@10, RR(rel=2)"),
        _Family("AP", {"rel": _REL}, example="AP, AP@100, AP(rel=2)"),
        _Family("ERR", {}, example="ERR@20"),
        _Family("Rprec", {"rel": _REL}, "none", "Rprec, Rprec(rel=2)"),
        _Family("Bpref", {"rel": _REL}, "none", "Bpref"),
        _Family("infAP", {"rel": _REL}, "none", "infAP"),
        _Family("Judged", {}, example="Judged@10"),
        _Family(
            "RBP", {"p": _Param((float,), 0.8), "rel": _Param((int,))}, example="RBP(p=0.9), RBP(p=0.9,rel=2)"
        ),
        _Family("UDCG", {}, "required", "UDCG@10"),
    )
}
ALIASES: dict[str, str] = {
    "NDCG": "nDCG",
    "Precision": "P",
    "Recall": "R",
    "MRR": "RR",
    "MAP": "AP",
    "RPrec": "Rprec",
    "BPref": "Bpref",
    **{name: name for name in FAMILIES},
}


def accepted_forms() -> str:
    return "; ".join(f.example for f in FAMILIES.values())


@dataclass(frozen=True)
class Measure:
    """One parsed measure. `params` keeps the parameters as written (cut-off excluded), in order."""

    family: str
    params: tuple[tuple[str, object], ...]
    cutoff: int | None

    def get(self, key: str):
        """The parameter's value, or its default (None when it has none)."""
        for name, value in self.params:
            if name == key:
                return value
        default = FAMILIES[self.family].params[key].default
        return None if default is _NO_DEFAULT else default

    @property
    def rel(self):
        return self.get("rel")

    @property
    def name(self) -> str:
        """The canonical name, as str(ir_measures.parse_measure(...)) prints it."""
        family = FAMILIES[self.family]
        shown = [
            f"{key}={_value_repr(value)}"
            for key, value in self.params
            if family.params[key].default is _NO_DEFAULT or value != family.params[key].default
        ]
        text = self.family + (f"({','.join(shown)})" if shown else "")
        return text if self.cutoff is None else f"{text}@{self.cutoff}"

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return hash(self.name)


def _value_repr(value) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{v}" for k, v in sorted(value.items()) if k != v) + "}"
    return repr(value)


# --- Parsing ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*(?:[eE][+-]?\d+)?|\d(?:_?\d)*\.)
      | (?P<string>'[^'\\\n]*'|"[^"\\\n]*")
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>[()@=,{}:])
    )""",
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    at = 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        m = _TOKEN.match(text, at)
        if m is None or m.end() == at:
            raise MeasureError(
                f"measure {text!r}: unexpected {text[at:].strip()[:20]!r} at character {at + 1}"
            )
        kind = m.lastgroup or "op"
        out.append((kind, m.group(kind), m.start(kind)))
        at = m.end()
    return out


def _number(token: str):
    if re.fullmatch(r"\d(?:_?\d)*", token):
        if len(token) > 1 and token[0] == "0" and token.strip("0_"):
            raise MeasureError(f"leading zeros in {token!r}")
        return int(token)
    return float(token)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def fail(self, what: str) -> MeasureError:
        token = self.peek()
        where = f"at {token[1]!r}" if token else "at the end"
        return MeasureError(f"measure {self.text!r}: expected {what} {where}")

    def take(self, kind: str, value: str | None = None, what: str = "") -> str:
        token = self.peek()
        if token is None or token[0] != kind or (value is not None and token[1] != value):
            raise self.fail(what or (value or kind))
        self.i += 1
        return token[1]

    def at(self, value: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "op" and token[1] == value

    def value(self):
        token = self.peek()
        if token is None:
            raise self.fail("a value")
        kind, text, _ = token
        if kind == "number":
            self.i += 1
            try:
                return _number(text)
            except MeasureError as exc:
                raise MeasureError(f"measure {self.text!r}: {exc}") from None
        if kind == "string":
            self.i += 1
            return text[1:-1]
        if kind == "name" and text in ("True", "False", "None"):
            self.i += 1
            return {"True": True, "False": False, "None": None}[text]
        if self.at("{"):
            self.i += 1
            mapping: dict = {}
            while not self.at("}"):
                key = self.value()
                self.take("op", ":")
                mapping[key] = self.value()
                if not self.at("}"):
                    self.take("op", ",", "',' or '}'")
            self.i += 1
            return mapping
        raise self.fail("a value (a number, True/False, a quoted string or a {grade: gain} map)")


def parse(text: str) -> Measure:
    """The measure `text` names; MeasureError (one line) when it is malformed or not computed here."""
    if not isinstance(text, str) or not text.strip():
        raise MeasureError(f"empty measure name; accepted forms: {accepted_forms()}")
    reader = _Reader(text)
    written = reader.take("name", what="a measure name")
    params: dict[str, object] = {}
    if reader.at("("):
        reader.i += 1
        while not reader.at(")"):
            key = reader.take("name", what="a parameter name")
            reader.take("op", "=", "'=' after the parameter name")
            params[key] = reader.value()
            if not reader.at(")"):
                reader.take("op", ",", "',' or ')'")
        reader.i += 1
    cutoff_given = False
    cutoff = None
    if reader.at("@"):
        reader.i += 1
        cutoff = reader.value()
        cutoff_given = True
    if reader.peek() is not None:
        raise reader.fail("the end of the name")

    family_name = ALIASES.get(written)
    if family_name is None:
        raise MeasureError(f"unknown measure {written!r} in {text!r}; accepted forms: {accepted_forms()}")
    family = FAMILIES[family_name]
    if "cutoff" in params and not cutoff_given:
        cutoff = params["cutoff"]
        cutoff_given = True
    params.pop("cutoff", None)
    if cutoff_given:
        if family.cutoff == "none":
            raise MeasureError(f"{text!r}: {family_name} takes no cut-off; e.g. {family.example}")
        if not isinstance(cutoff, int) or isinstance(cutoff, bool):
            raise MeasureError(f"{text!r}: the cut-off must be a whole number, not {cutoff!r}")
        if not 1 <= cutoff <= MAX_CUTOFF:
            raise MeasureError(f"{text!r}: the cut-off must be from 1 to {MAX_CUTOFF}, not {cutoff}")
    elif family.cutoff == "required":
        raise MeasureError(f"{text!r}: {family_name} needs a cut-off, e.g. {family.example}")
    for key, value in params.items():
        spec = family.params.get(key)
        if spec is None:
            allowed = ", ".join(family.params) or "no parameters"
            raise MeasureError(f"{text!r}: {family_name} has no parameter {key!r} (it takes {allowed})")
        if not isinstance(value, spec.kinds) or (isinstance(value, bool) and bool not in spec.kinds):
            kind = {
                int: "a whole number",
                float: "a decimal such as 0.8",
                dict: "a {grade: gain} map",
                str: "a quoted string",
            }
            raise MeasureError(f"{text!r}: {key} must be {kind[spec.kinds[0]]}, not {value!r}")
        if spec.choices is not None and value not in spec.choices:
            raise MeasureError(f"{text!r}: {key} must be one of {', '.join(map(repr, spec.choices))}")
    if family_name == "RBP" and "p" in params and not 0.0 < params["p"] < 1.0:
        raise MeasureError(f"{text!r}: p (the persistence) must be between 0 and 1, not {params['p']!r}")
    gains = params.get("gains")
    if gains is not None:
        for grade, gain in gains.items():
            if not isinstance(grade, int) or isinstance(grade, bool):
                raise MeasureError(f"{text!r}: gains maps whole grades, not {grade!r}")
            if not isinstance(gain, (int, float)) or isinstance(gain, bool) or gain != gain:
                raise MeasureError(f"{text!r}: the gain of grade {grade} must be a number, not {gain!r}")
    if family_name == "nDCG" and gains is not None and params.get("dcg") == "exp-log2":
        raise MeasureError(f"{text!r}: give either gains or dcg='exp-log2', not both")
    return Measure(family_name, tuple(params.items()), cutoff)


def check_for_scale(measure: Measure, grades: Sequence[int]) -> None:
    """MeasureError when the measure does not fit a pool whose judgments carry `grades` (e.g. 0..4, and -1
    with distractors): a rel outside the scale, or a gain map that leaves out a grade of the scale."""
    scale = sorted(g for g in grades if g >= 0)
    rel = measure.get("rel") if "rel" in FAMILIES[measure.family].params else None
    if rel is not None and not scale[0] <= rel <= scale[-1]:
        raise MeasureError(
            f"{measure.name}: rel must be a grade of the pool's scale, {scale[0]} to {scale[-1]}, not {rel}"
        )
    gains = measure.get("gains") if measure.family == "nDCG" else None
    if gains is not None:
        missing = [g for g in scale if g not in gains]
        if missing:
            raise MeasureError(
                f"{measure.name}: the gain map leaves out grade{'s' if len(missing) > 1 else ''} "
                f"{', '.join(map(str, missing))} of the pool's scale {scale[0]}-{scale[-1]}"
            )


def parse_set(names: Iterable[str], grades: Sequence[int] | None = None) -> list[Measure]:
    """Parse a measure set (checked against a pool's grades when given); MeasureError on the first bad name
    or on a measure named twice (two names of one canonical form)."""
    out: list[Measure] = []
    seen: set[str] = set()
    for text in names:
        measure = parse(text)
        if grades is not None:
            check_for_scale(measure, grades)
        if measure.name in seen:
            raise MeasureError(f"{text!r}: {measure.name} is already in the set")
        seen.add(measure.name)
        out.append(measure)
    if not out:
        raise MeasureError(f"a measure set needs at least one measure; accepted forms: {accepted_forms()}")
    return out


# --- Today's fixed set, as users spell it --------------------------------------------------------------

_FIXED_ALIASES = {"rr": "mrr", "recip_rank": "mrr", "map": "ap"}
_FIXED_CUT = re.compile(r"^(ndcg_cut|ndcg|p|recall|udcg|judged)[_.](\d+)$")  # trec_eval's ndcg_cut_10, P_5
_FIXED_FAMILIES = {
    "nDCG": "ndcg",
    "P": "p",
    "R": "recall",
    "RR": "mrr",
    "AP": "ap",
    "Judged": "judged",
    "UDCG": "udcg",
}


def fixed_name(name: str) -> str:
    """The name of today's fixed set (ndcg@10, p@5, recall@100, mrr, ap, judged@10, udcg@10) that `name`
    means, whichever spelling it uses: the exports' own in any case (nDCG@10), trec_eval's (ndcg_cut_10,
    ndcg_cut.10, P_5, recip_rank, map) or ir_measures' with default parameters (P(rel=1)@5, R@100, RR, AP).
    Any other name comes back lower-cased, for the caller to refuse or to read as a measure of its own."""
    lowered = name.strip().lower()
    lowered = _FIXED_ALIASES.get(lowered, lowered)
    match = _FIXED_CUT.match(lowered)
    if match:
        family = "ndcg" if match.group(1) == "ndcg_cut" else match.group(1)
        return f"{family}@{match.group(2)}"
    try:
        parsed = parse(name)
    except MeasureError:
        return lowered
    family = _FIXED_FAMILIES.get(parsed.family)
    plain = parsed.family if parsed.cutoff is None else f"{parsed.family}@{parsed.cutoff}"
    if family is None or parsed.name != plain:
        return lowered
    return family if parsed.cutoff is None else f"{family}@{parsed.cutoff}"

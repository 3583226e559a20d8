"""scoring.measures.names against ir_measures' own parser: same canonical names, same refusals."""

import itertools
import random

import ir_measures
import pytest

from scoring.measures import names
from scoring.measures.names import MeasureError, check_for_scale, parse, parse_set


def _ir_measures(text: str):
    """ir_measures' measure for `text`, or None when ir_measures refuses it (parse or parameter check)."""
    try:
        measure = ir_measures.parse_measure(text)
        measure.validate_params()
    except (ValueError, NameError, AssertionError, SyntaxError, TypeError):
        return None
    return measure


def _generated_names() -> list[str]:
    families = ["nDCG", "NDCG", "P", "Precision", "R", "Recall", "Success", "RR", "MRR", "AP", "MAP", "ERR"]
    families += ["Rprec", "RPrec", "Bpref", "BPref", "infAP", "Judged", "RBP"]
    params = [
        "",
        "(rel=2)",
        "(rel=1)",
        "(rel=4)",
        "( rel = 3 )",
        "(p=0.9)",
        "(p=0.95,rel=2)",
        "(rel=2,p=0.8)",
    ]
    params += ["(gains={0:0,1:1,2:3,3:7,4:15})", "(gains={0:0, 1:2, 2:2, 3:3, 4:4})", "(dcg='log2')"]
    params += ["(dcg='exp-log2')", "(cutoff=7)", "(rel=2.0)", "(p=1)", "(rel='2')", "(judged_only=True)"]
    cutoffs = ["", "@1", "@5", "@10", " @ 20", "@100", "@1000", "@10000", "@0"]
    found = [f + p + c for f, p, c in itertools.product(families, params, cutoffs)]
    found += ["", "P@", "P@@5", "P(rel=2", "P rel=2", "p@5", "ndcg@10", "P@5 extra", "P(2)@5", "P@5.0"]
    found += ["P@05", "P@00", "nDCG@10.5", "P(rel=-1)@5", "UDCG@10", "P@1_0", "RBP(p=.9)", "RBP(p=9e-1)"]
    return found


@pytest.mark.parametrize("text", _generated_names())
def test_canonical_name_and_refusals_match_ir_measures(text):
    ours = None
    try:
        ours = parse(text)
    except MeasureError as exc:
        assert "\n" not in str(exc) and str(exc)
    theirs = _ir_measures(text)
    if ours is not None:
        if ours.family == "UDCG":  # our own measure: ir_measures does not know it
            assert theirs is None and ours.name == "UDCG@10"
            return
        assert theirs is not None, f"we accept {text!r}, ir_measures does not"
        assert ours.name == str(theirs)
        return
    if theirs is None:
        return
    # ir_measures accepts it: we may refuse only what we do not compute, with a reason.
    params = set(theirs.params) - {"cutoff"}
    unsupported = "judged_only" in params or theirs.params.get("cutoff") in (0, 10000 + 1)
    unsupported |= (
        type(theirs).__name__ == "_nDCG" and "gains" in params and theirs.params.get("dcg") == "exp-log2"
    )
    unsupported |= isinstance(theirs.params.get("cutoff"), int) and not 1 <= theirs.params["cutoff"] <= 10000
    assert unsupported, f"ir_measures accepts {text!r} ({theirs}), we refuse it"


def test_random_names_agree():
    rng = random.Random(7)
    for _ in range(500):
        family = rng.choice(["nDCG", "P", "R", "Success", "RR", "AP", "RBP", "ERR", "Judged"])
        items = []
        if family == "nDCG" and rng.random() < 0.5:
            items.append(
                "gains={" + ",".join(f"{g}:{rng.choice([g, g * 2, 2**g - 1])}" for g in range(5)) + "}"
            )
        if family in ("P", "R", "Success", "RR", "AP") and rng.random() < 0.6:
            items.append(f"rel={rng.randint(1, 4)}")
        if family == "RBP":
            items += [f"p={rng.choice(['0.5', '0.8', '0.9', '0.95'])}", f"rel={rng.randint(1, 4)}"]
            rng.shuffle(items)
        text = family + (f"({','.join(items)})" if items else "")
        if family in ("P", "R", "Success") or rng.random() < 0.7:
            text += f"@{rng.randint(1, 10000)}"
        assert parse(text).name == str(ir_measures.parse_measure(text)), text


def test_params_and_defaults():
    measure = parse("RBP(rel=2)@50")
    assert (measure.family, measure.get("p"), measure.rel, measure.cutoff) == ("RBP", 0.8, 2, 50)
    assert parse("RBP").rel is None
    assert parse("MAP").name == "AP" and parse("MRR(rel=3)").rel == 3
    assert parse("nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10").get("gains") == {0: 0, 1: 1, 2: 3, 3: 7, 4: 15}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("P@0", "cut-off must be from 1 to 10000"),
        ("P@10001", "cut-off must be from 1 to 10000"),
        ("Q@5", "unknown measure 'Q'"),
        ("P", "P needs a cut-off"),
        ("Rprec@5", "takes no cut-off"),
        ("P(rel=2", "expected ',' or ')'"),
        ("P(foo=1)@5", "has no parameter 'foo'"),
        ("RBP(p=1.5)", "between 0 and 1"),
        ("nDCG(gains={0:0,1:'a'})@5", "gain of grade 1 must be a number"),
    ],
)
def test_one_line_errors(text, says):
    with pytest.raises(MeasureError) as caught:
        parse(text)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_scale_checks():
    scale = (0, 1, 2, 3, 4)
    check_for_scale(parse("P(rel=4)@5"), scale)
    with pytest.raises(MeasureError, match="rel must be a grade of the pool's scale, 0 to 4, not 5"):
        check_for_scale(parse("P(rel=5)@5"), scale)
    with pytest.raises(MeasureError, match="leaves out grades 3, 4"):
        check_for_scale(parse("nDCG(gains={0:0,1:1,2:3})@10"), scale)
    check_for_scale(parse("nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10"), (-1, *scale))
    with pytest.raises(MeasureError, match="already in the set"):
        parse_set(["MAP", "AP"])
    with pytest.raises(MeasureError, match="at least one measure"):
        parse_set([])
    assert [m.name for m in parse_set(["NDCG@10", "P(rel=2)@5"], scale)] == ["nDCG@10", "P(rel=2)@5"]
    assert "ERR@20" in names.accepted_forms()

"""Reading the judge's answer: a grade it really gave, or can't judge with the raw answer; never a crash."""

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from judgments.judges.answers import MAX_REASON_CHARS, Verdict, parse_answer

WITH_DISTRACTOR = frozenset({-1, 0, 1, 2, 3, 4})


@pytest.mark.parametrize(
    ("answer", "grade", "reason"),
    [
        ('{"grade": 3, "reason": "Lists fares."}', 3, "Lists fares."),
        ('  {"grade": 0, "reason": "Off topic."}\n', 0, "Off topic."),
        ('```json\n{"grade": 2, "reason": "Partly."}\n```', 2, "Partly."),
        ('```\n{"grade": 4, "reason": "Exact."}\n```\nDone.', 4, "Exact."),
        ('Here is my grade: {"grade": 1, "reason": "Barely."} Hope this helps!', 1, "Barely."),
        ('{"grade": "3", "reason": "String grade."}', 3, "String grade."),
        ('{"grade": 3.0, "reason": "Float grade."}', 3, "Float grade."),
        ('{"grade": " 2 ", "reason": "Spaces."}', 2, "Spaces."),
        ("{'grade': 1, 'reason': 'Single quotes.'}", 1, "Single quotes."),
        ('{grade: 2, reason: "Bare keys",}', 2, "Bare keys"),
        ('{"Grade": 4, "Explanation": "Capitalised keys."}', 4, "Capitalised keys."),
        ('{"relevance": 2, "rationale": "Synonyms."}', 2, "Synonyms."),
        ('{"answer": {"grade": 3, "reason": "Nested."}}', 3, "Nested."),
        ('{"reason": "Reason first.", "grade": 1}', 1, "Reason first."),
        ('{"grade": 2}', 2, ""),
        (
            '<think>Maybe {"grade": 0}? No.</think>\n{"grade": 3, "reason": "After thinking."}',
            3,
            "After thinking.",
        ),
        ('{"grade": 2, "reason": "Same."} Again: {"grade": 2}', 2, "Same."),
        ("3", 3, ""),
        ("**2**", 2, ""),
        ("Grade: 4\nReason: exactly what was asked.", 4, "Grade: 4\nReason: exactly what was asked."),
        ("**Grade:** 1 (marginal)", 1, "**Grade:** 1 (marginal)"),
        ("The relevance score is 3/4.", 3, "The relevance score is 3/4."),
        ('{"grade": 2, "reason": "Has a } brace and { another"}', 2, "Has a } brace and { another"),
    ],
)
def test_grades_are_read_from_the_shapes_models_answer_in(answer, grade, reason):
    assert parse_answer(answer) == Verdict(grade, reason)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "empty answer"),
        ("   \n", "empty answer"),
        ("I'm sorry, but I can't help with grading this document.", "no grade in the answer"),
        ("I cannot judge: the document is in a language I do not read.", "no grade in the answer"),
        ('{"reason": "No grade key at all."}', "no grade in the answer"),
        ('{"grade": 5, "reason": "Too high."}', "grade 5 is not one of 0, 1, 2, 3, 4"),
        ('{"grade": 10}', "grade 10 is not one of 0, 1, 2, 3, 4"),
        ('{"grade": -2}', "grade -2 is not one of 0, 1, 2, 3, 4"),
        ('{"grade": -1, "reason": "Misleads."}', "grade -1 (distractor) is not enabled for this pool"),
        ('{"grade": 2.5}', "the grade 2.5 is not a whole number"),
        ('{"grade": "2.5"}', "the grade '2.5' is not a whole number"),
        ('{"grade": null, "reason": "Unclear."}', "the answer gives no grade (null)"),
        ('{"grade": true}', "the grade True is not a number"),
        ('{"grade": "N/A", "reason": "cannot judge"}', "the grade 'N/A' is not a number"),
        ('{"grade": [3]}', "the grade [3] is not a number"),
        ('{"grade": NaN}', "the grade nan is not a whole number"),
        ('{"grade": 1} ... on reflection {"grade": 3}', "the answer gives several grades: 1, 3"),
        ("Score: 7 out of 10", "the grade 7/10 is on another scale"),
        ("Grade: 3/5", "the grade 3/5 is on another scale"),
        ("Grade: 34 points", "grade 34 is not one of 0, 1, 2, 3, 4"),
        ("Grade: 2.5x", "no grade in the answer"),
        ("Grade: 3is", "no grade in the answer"),
    ],
)
def test_answers_without_a_usable_grade_are_cant_judge_with_the_raw_answer(answer, problem):
    verdict = parse_answer(answer)
    assert verdict.grade is None and not verdict.judged
    assert verdict.problem == problem
    assert verdict.reason == (answer.strip() or "(empty answer)")


def test_a_truncated_json_answer_still_names_its_grade_in_prose_form():
    # finish_reason "length": the object never closes, but '"grade": 3' is the model's own grade
    assert parse_answer('{"grade": 3, "reason": "The document lists fa').grade == 3


def test_distractor_grade_is_accepted_only_when_enabled():
    answer = '{"grade": -1, "reason": "Looks right, misleads."}'
    assert parse_answer(answer, allowed=WITH_DISTRACTOR) == Verdict(-1, "Looks right, misleads.")
    assert parse_answer(answer).grade is None


def test_labels_count_as_grades_when_given():
    labels = {0: "Not relevant", 4: "Perfect", -1: "Distractor"}
    assert parse_answer('{"grade": "perfect"}', labels=labels).grade == 4
    assert parse_answer('{"grade": "Distractor"}', labels=labels, allowed=WITH_DISTRACTOR).grade == -1
    assert parse_answer('{"grade": "perfect"}').grade is None


def test_reason_and_raw_answer_are_truncated():
    long_reason = "x" * 5000
    assert len(parse_answer(json.dumps({"grade": 2, "reason": long_reason})).reason) == MAX_REASON_CHARS
    verdict = parse_answer("No. " * 2000, max_reason_chars=50)
    assert verdict.grade is None and len(verdict.reason) == 50 and verdict.reason.endswith("…")


def test_odd_python_literals_raise_no_warning(recwarn):
    assert parse_answer("{'grade': 3is, 'reason': 'x'}").grade is None
    assert parse_answer("{'grade': 2, 'reason': 'ok'}").grade == 2
    assert len(recwarn) == 0


def test_non_string_answers_are_cant_judge():
    assert parse_answer(None) == Verdict(None, "(empty answer)", "empty answer")
    assert parse_answer(42).grade is None


@pytest.mark.parametrize("answer", ["{" * 100_000, '{"a":' * 50_000, "'{" * 50_000, "[{" * 50_000])
def test_pathological_answers_finish_quickly(answer):
    assert parse_answer(answer).grade is None


def _check(verdict: Verdict, allowed=frozenset({0, 1, 2, 3, 4})):
    assert isinstance(verdict, Verdict)
    assert len(verdict.reason) <= MAX_REASON_CHARS
    if verdict.grade is None:
        assert verdict.problem and verdict.reason
        assert not verdict.problem.startswith("could not read the answer")  # the safety net
    else:
        assert type(verdict.grade) is int and verdict.grade in allowed and verdict.problem == ""


@settings(max_examples=400, deadline=None)
@given(st.text())
@example("{'grade': {}}")
@example('{"grade": 1e400}')
@example('{"grade": "' + "9" * 5000 + '"}')
@example("{1: 2, [3]: 4}")
def test_any_text_is_a_valid_grade_or_cant_judge(answer):
    _check(parse_answer(answer))


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(grade=_JSONISH, reason=_JSONISH, before=st.text(max_size=40), after=st.text(max_size=40))
def test_any_answer_object_in_any_surroundings_is_a_valid_grade_or_cant_judge(grade, reason, before, after):
    answer = before + json.dumps({"grade": grade, "reason": reason}) + after
    _check(parse_answer(answer, allowed=WITH_DISTRACTOR), WITH_DISTRACTOR)


@settings(max_examples=300, deadline=None)
@given(
    grade=st.integers(-1, 4), reason=st.text(max_size=200), fence=st.booleans(), prose=st.text(max_size=60)
)
def test_a_clean_answer_object_is_always_read_exactly(grade, reason, fence, prose):
    body = json.dumps({"grade": grade, "reason": reason})
    answer = f"```json\n{body}\n```" if fence else body
    clean_prose = "".join(c for c in prose if c not in "{}<0123456789")
    verdict = parse_answer(clean_prose + answer, allowed=WITH_DISTRACTOR)
    assert verdict == Verdict(grade, reason.strip())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Nd"], exclude_characters="0123456789")))
def test_an_answer_without_digits_never_gets_a_grade(answer):
    """No made-up grades: with no number anywhere (and no labels given) there is nothing to read."""
    assert parse_answer(answer).grade is None

"""Forms of the rating pages: grading, the rater's own judgments, queue building and adjudication."""

from django import forms

from judgments import limits
from judgments.models import DISTRACTOR, Pool, Query, QueueStrategy, SearchConfiguration
from judgments.models import GRADE_CHOICES as GRADES

from .queue import DEFAULT_DEPTH, MAX_DEPTH

# -1 (distractor) included; the forms of a pool offer it only where the pool has it (and services check).
GRADE_CHOICES = [(value, f"{value} {label}") for value, label in GRADES]


class GradeForm(forms.Form):
    """One answer for one pair. The grade buttons post `grade`; skip and can't judge post `action`."""

    GRADE, SKIP, CANT = "grade", "skip", "cant"

    grade = forms.TypedChoiceField(choices=GRADE_CHOICES, coerce=int, required=False, empty_value=None)
    action = forms.ChoiceField(
        choices=[(GRADE, "grade"), (SKIP, "skip"), (CANT, "can't judge")], required=False
    )
    reason = forms.CharField(required=False, max_length=limits.NOTE, strip=True)
    note = forms.CharField(required=False, max_length=limits.NOTE, strip=True)

    def __init__(self, *args, pool: Pool | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.pool = pool
        if pool is not None:  # the pool's grades: -1 only where the distractor grade is on
            self.fields["grade"].choices = [(v, label) for v, label in GRADE_CHOICES if v in pool.grades]

    def clean(self):
        data = super().clean()
        action = data.get("action") or self.GRADE
        data["action"] = action
        if action == self.GRADE and data.get("grade") is None and "grade" not in self.errors:
            grades = self.pool.grade_range if self.pool is not None else "from 0 to 4"
            raise forms.ValidationError(f"Choose a grade {grades}.")
        if action == self.CANT and not data.get("reason"):
            self.add_error("reason", "Say why you can't judge this pair.")
        return data


class MyJudgmentsFilter(forms.Form):
    CANT = "cant"

    query = forms.ModelChoiceField(
        queryset=Query.objects.none(),
        required=False,
        to_field_name="external_id",
        widget=forms.TextInput(attrs={"placeholder": "all queries", "size": 12}),
        error_messages={"invalid_choice": "No query of this pool has that id."},
    )
    grade = forms.ChoiceField(required=False)

    def __init__(self, *args, queries=None, grades=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["query"].queryset = queries if queries is not None else Query.objects.none()
        self.fields["grade"].choices = [
            ("", "All grades"),
            *[(str(v), label) for v, label in GRADE_CHOICES if grades is None or v in grades],
            (self.CANT, "Can't judge"),
        ]


class BuildQueueForm(forms.Form):
    k = forms.IntegerField(label="Depth k", min_value=1, max_value=MAX_DEPTH, initial=DEFAULT_DEPTH)
    strategy = forms.ChoiceField(
        label="Order",
        choices=QueueStrategy.choices,
        initial=QueueStrategy.DEPTH,
        widget=forms.RadioSelect,
        required=False,  # the pool's
    )


class ConfigurationTopKForm(forms.Form):
    configuration = forms.ModelChoiceField(queryset=SearchConfiguration.objects.none())
    k = forms.IntegerField(label="Depth k", min_value=1, max_value=MAX_DEPTH, initial=DEFAULT_DEPTH)

    def __init__(self, *args, pool: Pool, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["configuration"].queryset = pool.configurations.all()


PRIORITY_HELP = "Pooled pairs get 10,000 per configuration ranking them; 0 serves these after them."


class AddPairForm(forms.Form):
    query_id = forms.CharField(label="Query id", max_length=200)
    document_id = forms.CharField(label="Document id", max_length=200)
    priority = forms.IntegerField(
        initial=0, min_value=-1_000_000, max_value=1_000_000, help_text=PRIORITY_HELP
    )


class PairFileForm(forms.Form):
    file = forms.FileField(
        help_text="UTF-8 text, one query id, a tab, and a document id per line; blank lines and # comments are ignored."
    )
    priority = forms.IntegerField(
        initial=0, min_value=-1_000_000, max_value=1_000_000, help_text=PRIORITY_HELP
    )


class FinalGradeForm(forms.Form):
    """An admin's final grade of a pair of `pool`: one of the pool's grades (-1 only where the distractor
    grade is on); the empty value clears it."""

    grade = forms.TypedChoiceField(choices=[], coerce=int, required=False, empty_value=None)

    def __init__(self, *args, pool: Pool, **kwargs):
        super().__init__(*args, **kwargs)
        self.pool = pool
        self.fields["grade"].choices = [
            ("", "clear"),
            *((v, label) for v, label in GRADE_CHOICES if v in pool.grades),
        ]

    def refusal(self) -> str:
        """Why the posted grade was not taken, naming the grades the pool has."""
        text = f"Choose a final grade {self.pool.grade_range}, or clear it."
        if self.data.get("grade", "").strip() == str(DISTRACTOR) and (
            refused := self.pool.grade_problem(DISTRACTOR)
        ):
            text = f"{refused} {text}"
        return text

"""Forms of the judges' pages: a judge's settings (no key field: only the variable's name), a run, and
the pool's grade source."""

from django import forms

from judgments.models import GradeSource, JudgeRun, ModelJudge

from .prompt import PLACEHOLDERS, PromptTemplate, template_problems

SETTING_FIELDS = (
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "max_body_chars",
    "concurrency",
    "example_count",
    "prompt_system",
    "prompt_user",
)


class JudgeForm(forms.ModelForm):
    """A judge's settings; `name` only when creating one (it is the judge's user name)."""

    name = forms.CharField(
        max_length=150,
        help_text="The judge's rater name, shown in exports and on the disagreements page (e.g. gpt-4o-mini).",
    )
    base_url = forms.URLField(
        label="Base URL",
        max_length=500,
        assume_scheme="https",
        help_text=ModelJudge._meta.get_field("base_url").help_text,
        widget=forms.URLInput(attrs={"placeholder": "http://127.0.0.1:11434/v1"}),
    )

    class Meta:
        model = ModelJudge
        fields = SETTING_FIELDS
        widgets = {
            "prompt_system": forms.Textarea(attrs={"rows": 5, "class": "mono"}),
            "prompt_user": forms.Textarea(attrs={"rows": 18, "class": "mono"}),
            "api_key_env": forms.TextInput(attrs={"placeholder": "OPENAI_API_KEY", "autocomplete": "off"}),
        }

    def __init__(self, *args, creating: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if not creating:
            del self.fields["name"]
        else:
            self.order_fields(["name", *SETTING_FIELDS])
        self.fields["prompt_user"].help_text = "Placeholders: " + ", ".join(
            "{{ " + name + " }}" for name in PLACEHOLDERS
        )
        self.fields["example_count"].required = False  # empty: the model's default

    def clean_example_count(self):
        value = self.cleaned_data.get("example_count")
        if value is None:
            return self.instance.example_count if self.instance.pk else ModelJudge.example_count.field.default
        return value

    def clean(self):
        data = super().clean()
        if "prompt_system" in data and "prompt_user" in data:
            for problem in template_problems(PromptTemplate(data["prompt_system"], data["prompt_user"])):
                self.add_error("prompt_user", problem)
        return data

    def settings(self) -> dict:
        return {name: self.cleaned_data[name] for name in SETTING_FIELDS}


def _optional_positive(label: str, help_text: str) -> forms.IntegerField:
    return forms.IntegerField(label=label, required=False, min_value=1, help_text=help_text)


class RunForm(forms.Form):
    selection = forms.ChoiceField(
        choices=[c for c in JudgeRun.Selection.choices if c[0] != JudgeRun.Selection.PROBES],
        initial=JudgeRun.Selection.QUEUED,
    )
    limit = _optional_positive("At most", "pairs (empty: all the chosen pairs)")
    max_calls = _optional_positive("Budget: calls", "HTTP calls, retries included (empty: no limit)")
    max_tokens = _optional_positive("Budget: tokens", "tokens from the answers' usage (empty: no limit)")


class GradeSourceForm(forms.Form):
    grade_source = forms.ChoiceField(choices=GradeSource.choices, widget=forms.RadioSelect, label="")

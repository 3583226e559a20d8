"""The endpoint form and the capture form of the configuration page."""

from __future__ import annotations

from django import forms

from judgments.endpoints.engines import AUTH_KINDS, KIND_FIELDS, KINDS
from judgments.models.capture import DEFAULT_CONCURRENCY, DEFAULT_DEPTH, MAX_CONCURRENCY, MAX_DEPTH, Schedule

KIND_HELP = (
    "elasticsearch / opensearch: POST a JSON query-DSL body to …/_search. solr: GET …/select with URL "
    "parameters. json: any HTTP JSON API (give the hits path and the id field)."
)


class EndpointForm(forms.Form):
    """Every field of an endpoint version. Secrets are write-only: the stored one is never put back in the
    form; leaving the field empty keeps it. Values shown as *** stand for the stored ones."""

    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS], help_text=KIND_HELP)
    url = forms.CharField(
        label="URL",
        max_length=2000,
        widget=forms.TextInput(attrs={"size": 70, "placeholder": "http://localhost:9200/products/_search"}),
    )
    method = forms.ChoiceField(
        choices=[("", "the kind's default"), ("GET", "GET"), ("POST", "POST")], required=False
    )
    template = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 70, "class": "mono", "spellcheck": "false"}),
        help_text="Placeholders {{query}}, {{query_id}}, {{depth}}; escaped for JSON bodies and URL "
        "parameters. Empty: the kind's default (multi_match over title and body; Solr q={{query}}&rows={{depth}}).",
    )
    hits_path = forms.CharField(
        required=False, max_length=500, help_text="json: where the list of hits is (dotted path or JMESPath)"
    )
    id_field = forms.CharField(required=False, max_length=500, help_text="json: the id of a hit")
    score_field = forms.CharField(required=False, max_length=500, help_text="optional: the score of a hit")
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 70, "class": "mono", "spellcheck": "false"}),
        help_text="One per line, Name: value. Put credentials in the auth fields below.",
    )
    auth_kind = forms.ChoiceField(
        label="Authentication", choices=[("", "none"), *[(k, k) for k in AUTH_KINDS]], required=False
    )
    auth_user = forms.CharField(label="User (basic)", required=False, max_length=200)
    auth_secret_env = forms.CharField(
        label="Secret from the environment variable",
        required=False,
        max_length=200,
        help_text="Preferred: the name of an environment variable of the web server and worker "
        "(e.g. SEARCH_API_KEY); the secret then never enters the database.",
    )
    auth_secret = forms.CharField(
        label="Or store this secret",
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: never shown again. Leave empty to keep the stored one.",
    )
    clear_secret = forms.BooleanField(label="Remove the stored secret", required=False)
    auth_header = forms.CharField(
        label="API key header",
        required=False,
        max_length=200,
        help_text="apikey: send the bare key in this header",
    )
    depth = forms.IntegerField(min_value=1, max_value=MAX_DEPTH, initial=DEFAULT_DEPTH)
    schedule = forms.ChoiceField(
        choices=Schedule.choices, initial=Schedule.NONE, help_text="for manage.py capture_due"
    )

    test_query = forms.CharField(
        label="Test with the query",
        required=False,
        max_length=1000,
        help_text="Test sends this one query to the form's endpoint as it is now, saved or not, and "
        "shows the top 10 or the engine's error. Nothing is stored.",
    )

    # Fields only some kinds use (the page shows them for those kinds only); the others are ignored.
    KIND_ONLY = ("method", "hits_path", "id_field", "score_field")

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        if kind in KIND_FIELDS:
            for name in self.KIND_ONLY:
                if name not in KIND_FIELDS[kind]:
                    data[name] = ""
        if data.get("auth_kind") != "basic":
            data["auth_user"] = ""
        if data.get("auth_kind") != "apikey":
            data["auth_header"] = ""
        return data

    def definition(self) -> dict:
        """The cleaned fields `services.draft_spec` / `set_endpoint` take (the secret included)."""
        data = self.cleaned_data
        names = ("kind", "url", "method", "template", "hits_path", "id_field", "score_field", "headers")
        names += ("auth_kind", "auth_user", "auth_secret_env", "auth_header")
        return {**{name: data[name] for name in names}, "auth_secret": self.secret()}

    def clean_headers(self) -> list[list[str]]:
        headers = []
        for number, line in enumerate(self.cleaned_data["headers"].splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition(":")
            if not sep or not name.strip():
                raise forms.ValidationError(f'line {number}: write "Name: value"')
            headers.append([name.strip(), value.strip()])
        return headers

    def secret(self) -> str | None:
        """The secret to store: None keeps the stored one, "" removes it."""
        if self.cleaned_data.get("clear_secret"):
            return ""
        return self.cleaned_data.get("auth_secret") or None


class CaptureForm(forms.Form):
    depth = forms.IntegerField(min_value=1, max_value=MAX_DEPTH, initial=DEFAULT_DEPTH)
    concurrency = forms.IntegerField(min_value=1, max_value=MAX_CONCURRENCY, initial=DEFAULT_CONCURRENCY)
    keep_partial = forms.BooleanField(
        required=False,
        label="Keep a partial run",
        help_text="store the run even if some queries fail (they score 0)",
    )

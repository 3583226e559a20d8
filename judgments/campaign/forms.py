"""Forms of the campaign pages: a pool's settings, its people, teams and their configurations."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator

from judgments import access, services
from judgments.models import (
    DISTRACTOR,
    DISTRACTOR_DESCRIPTION,
    DISTRACTOR_LABEL,
    Grade,
    Pool,
    Team,
    default_grade_scale,
)

LABEL_MAX, DESCRIPTION_MAX = 40, 300


class _Grade(int):
    """A grade of the settings form (value like Grade's)."""

    @property
    def value(self) -> int:
        return int(self)


class PoolForm(forms.ModelForm):
    """A pool's settings, with one label and description per grade 0-4 (stored in Pool.grade_scale).
    The name is set once: URLs, exported file names and scripts use it."""

    class Meta:
        model = Pool
        fields = (
            "name",
            "description",
            "guidelines",
            "raters_per_pair",
            "combine_rule",
            "queue_access",
            "share_rankings",
            "distractors_enabled",
            "queue_strategy",
            "queue_depth",
            "stop_when_settled",
            "gold_rate",
        )
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "guidelines": forms.Textarea(attrs={"rows": 14, "class": "markdown-source"}),
            "queue_access": forms.RadioSelect,
            "queue_strategy": forms.RadioSelect,
        }
        help_texts = {
            "name": "Letters, digits and - _ . without spaces; used in URLs, file names and commands. "
            "It cannot be changed later.",
            "description": "One or two sentences on the pool's list of pools.",
            "guidelines": "Markdown. Raters see it above every pair they grade.",
            "raters_per_pair": "How many raters grade each pair before it leaves the queue (1-20).",
            "combine_rule": "How several raters' grades become the pool's grade (an admin's final grade wins). "
            "Changing it recomputes every score in the background.",
            "queue_access": "Admins always build the queue. Engineers may be allowed to send their "
            "configurations' unjudged top documents to the raters (from the comparison pages).",
            "distractors_enabled": "Adds the grade -1, Distractor (key d on the grading page): a document "
            "that looks relevant but misleads. Model judges' prompts describe it. UDCG counts it as harmful; "
            "NDCG and trec_eval count it as unjudged. It cannot be turned off while a grade uses it.",
            "queue_strategy": "Depth-k pooling serves the pairs many configurations retrieve first. Adaptive "
            "re-orders the queue after every grade toward the configurations that keep finding relevant "
            "documents (a bandit over the runs, after Losada et al.). After changing it or k, rebuild the queue "
            "(Judging queue page); grades are kept.",
            "queue_depth": "The queue pools the top k documents of every configuration's current run (1-1000).",
            "stop_when_settled": "The queue stops serving pairs while the leaderboard has settled (expected "
            "Kendall tau >= 0.9 and judged@10 >= 0.8 for every configuration, shown on the leaderboard); "
            "raters see that the pool is complete for now.",
            "gold_rate": "Share of the pairs served to a rater that are gold pairs (known grades; mark them on "
            "the gold page of the Judging queue, in the API or with import_judgments --gold), unannounced: 0 to 0.5.",
            "share_rankings": "Engineers see every team's rankings (which documents, in which order) on the "
            "query pages, run pages, downloads and API; otherwise only their own teams'. Scores are "
            "shared either way.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            del self.fields["name"]
        for name in (
            "queue_strategy",
            "queue_depth",
            "gold_rate",
        ):  # a form that leaves them out keeps the pool's
            self.fields[name].required = False
        given = {e.get("grade"): e for e in self.instance.grade_scale or [] if isinstance(e, dict)}
        defaults = {e["grade"]: e for e in default_grade_scale()}
        defaults[DISTRACTOR] = {
            "grade": DISTRACTOR,
            "label": DISTRACTOR_LABEL,
            "description": DISTRACTOR_DESCRIPTION,
        }
        for grade in self.scale_grades():
            entry = given.get(grade.value, defaults[grade.value])
            self.fields[f"label_{grade.value}"] = forms.CharField(
                label=f"Grade {grade.value} label",
                max_length=LABEL_MAX,
                initial=entry.get("label") or defaults[grade.value]["label"],
                # The distractor's row is optional (forms written before it existed do not send it).
                required=grade.value != DISTRACTOR,
            )
            self.fields[f"description_{grade.value}"] = forms.CharField(
                label=f"Grade {grade.value} description",
                max_length=DESCRIPTION_MAX,
                required=False,
                initial=entry.get("description", ""),
            )

    @staticmethod
    def scale_grades() -> list[_Grade]:
        """The grades with a label and description: -1 (the distractor, used when enabled), then 0-4."""
        return [_Grade(DISTRACTOR), *(_Grade(g.value) for g in Grade)]

    def grade_rows(self) -> list[tuple[int, forms.BoundField, forms.BoundField]]:
        return [
            (g.value, self[f"label_{g.value}"], self[f"description_{g.value}"]) for g in self.scale_grades()
        ]

    def clean_queue_strategy(self) -> str:
        return self.cleaned_data["queue_strategy"] or self.instance.queue_strategy

    def clean_queue_depth(self) -> int:
        depth = self.cleaned_data["queue_depth"]
        return self.instance.queue_depth if depth is None else depth

    def clean_gold_rate(self) -> float:
        rate = self.cleaned_data["gold_rate"]
        return self.instance.gold_rate if rate is None else rate

    def clean_distractors_enabled(self) -> bool:
        enabled = self.cleaned_data["distractors_enabled"]
        problem = services.distractors_problem(self.instance, enabled)
        if problem:
            raise forms.ValidationError(problem)
        return enabled

    def main_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if not name.startswith(("label_", "description_"))]

    def save(self, commit: bool = True) -> Pool:
        pool = super().save(commit=False)
        pool.grade_scale = [
            {
                "grade": g.value,
                "label": self.cleaned_data.get(f"label_{g.value}", "").strip()
                or (DISTRACTOR_LABEL if g.value == DISTRACTOR else ""),
                "description": self.cleaned_data.get(f"description_{g.value}", "").strip()
                or (DISTRACTOR_DESCRIPTION if g.value == DISTRACTOR else ""),
            }
            for g in self.scale_grades()
            # The distractor's wording is kept only while the pool has that grade.
            if g.value != DISTRACTOR or pool.distractors_enabled
        ]
        if commit:
            pool.save()
        return pool


def find_user(identifier: str):
    """The account with this username, else with this e-mail address (case ignored). Raises
    forms.ValidationError saying what to do when there is none, or several."""
    User = get_user_model()
    text = identifier.strip()
    user = User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": text}).first()
    if user is not None:
        return user
    if "@" in text:
        matches = list(User.objects.filter(email__iexact=text)[:2])
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise forms.ValidationError(f"Several accounts use {text}; give the username instead.")
    raise forms.ValidationError(
        f"No account has the username or e-mail {text!r}. Create one below (raters), or check the spelling."
    )


class UserField(forms.CharField):
    """A username or an e-mail address, cleaned to the account."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 254)
        kwargs.setdefault("label", "Username or e-mail")
        super().__init__(**kwargs)

    def clean(self, value):
        return find_user(super().clean(value))


class AddMemberForm(forms.Form):
    KEEP = "keep"
    user = UserField()
    role = forms.ChoiceField(
        choices=[
            (access.RATER, "as a rater (grades pairs)"),
            (access.ENGINEER, "as an engineer (sees configurations and scores)"),
            (KEEP, "with the roles they have"),
        ],
        initial=access.RATER,
        widget=forms.RadioSelect,
    )


class NewRaterForm(forms.Form):
    username = forms.CharField(
        max_length=150,
        validators=[UnicodeUsernameValidator()],
        help_text="Letters, digits and @ . + - _ only.",
    )
    email = forms.EmailField(required=False, label="E-mail (optional)")

    def clean_username(self):
        username = self.cleaned_data["username"]
        User = get_user_model()
        if User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).exists():
            raise forms.ValidationError(
                f"{username} is taken. To add that account to the pool, use “Add an existing account”."
            )
        return username


class TeamForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ("name",)
        labels = {"name": "New team"}

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the team a name.")
        if Team.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError(f"There is a team named {name} already.")
        return name


class TeamMemberForm(forms.Form):
    user = UserField(help_text="An account without a role becomes an engineer.")


class MoveConfigurationForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.all(), empty_label=None, label="Move to")

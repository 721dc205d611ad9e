"""Staff forms for setting up and running a study."""

from __future__ import annotations

from django import forms

from evaluation.benchmarks import registry
from evaluation.models import Benchmark, Judge

from .models import Item, Study
from .selectors import eligible_strata
from .services import StudyPlan

# One paragraph per line: the page wraps them, so a line break never falls mid-sentence.
DEFAULT_GUIDELINE = (
    "Listen to the conversation and to the agent's response, then decide:\n\n"
    "Consistent: the response fits the conversation: it follows what was said, answers or acts "
    "on what the group asked of the agent, and does not contradict the facts established so "
    "far.\n\n"
    "Inconsistent: the response ignores, misreads or contradicts the conversation, or answers "
    "something nobody asked.\n\n"
    "If the audio does not play or is too damaged to judge, choose \"Can't judge: audio "
    'problem". Judge the response itself; do not guess which system produced it.'
)


def _kind_choices() -> list[tuple[str, str]]:
    """Every study kind a benchmark declares, named with its benchmark."""
    return [
        (kind.key, f"{plugin.name}: {kind.label}")
        for plugin in registry().values()
        for kind in plugin.study_kinds
    ]


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=50)
    benchmark = forms.ModelChoiceField(queryset=Benchmark.objects.order_by("slug"))
    judge = forms.ModelChoiceField(
        queryset=Judge.objects.select_related("benchmark").order_by("benchmark__slug", "slug"),
        help_text="The judge whose verdicts the raters check",
    )
    kind = forms.ChoiceField(choices=_kind_choices, initial="discussion")
    strata = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.none(),
        label="Submissions (strata)",
        widget=forms.SelectMultiple(attrs={"size": 12}),
    )
    per_stratum = forms.IntegerField(min_value=1, initial=20, label="Items per stratum")
    seed = forms.IntegerField(min_value=0, initial=0)
    skip_empty_responses = forms.BooleanField(required=False, initial=True)
    overlap = forms.IntegerField(min_value=1, initial=3, help_text="Raters per item")
    batch_size = forms.IntegerField(min_value=1, initial=30)
    gold_per_batch = forms.IntegerField(min_value=0, initial=0)
    attention_per_batch = forms.IntegerField(min_value=0, initial=0)
    require_play_through = forms.BooleanField(required=False)
    lock_minutes = forms.IntegerField(min_value=1, initial=60)
    allow_accounts = forms.BooleanField(required=False)
    positive_label = forms.CharField(max_length=50, initial="consistent")
    negative_label = forms.CharField(max_length=50, initial="inconsistent")
    tie_rule = forms.ChoiceField(choices=Study.TieRule.choices, initial=Study.TieRule.DROP)
    guideline_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["strata"].queryset = eligible_strata(user=user)
        self.fields["strata"].label_from_instance = lambda s: (
            f"{s.benchmark.slug}: {s.system.name} (#{s.pk})"
        )
        self.fields["guideline_text"].initial = DEFAULT_GUIDELINE
        self.fields["strata"].help_text = (
            "Unpublished submissions keep raters blind: a published one's responses sit beside "
            "its system's name on the board."
        )

    def plan(self) -> StudyPlan:
        data = self.cleaned_data
        return StudyPlan(
            name=data["name"],
            slug=data["slug"],
            benchmark=data["benchmark"],
            judge=data["judge"],
            kind=data["kind"],
            strata=tuple(data["strata"]),
            guideline_text=data["guideline_text"],
            per_stratum=data["per_stratum"],
            seed=data["seed"],
            overlap=data["overlap"],
            batch_size=data["batch_size"],
            gold_per_batch=data["gold_per_batch"],
            attention_per_batch=data["attention_per_batch"],
            require_play_through=data["require_play_through"],
            lock_minutes=data["lock_minutes"],
            allow_accounts=data["allow_accounts"],
            skip_empty_responses=data["skip_empty_responses"],
            positive_label=data["positive_label"],
            negative_label=data["negative_label"],
            tie_rule=data["tie_rule"],
        )


class GuidelineForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 8}))


class InviteForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=200, initial=1)
    name = forms.CharField(max_length=90, required=False, help_text="Empty: Rater N")


class CheckItemForm(forms.Form):
    role = forms.ChoiceField(
        choices=[(Item.Role.GOLD, "Gold (known answer)"), (Item.Role.ATTENTION, "Attention check")]
    )
    submission = forms.ModelChoiceField(queryset=Judge.objects.none())
    task_id = forms.CharField(max_length=200)
    expected_label = forms.ChoiceField()
    instruction = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text='Attention checks only, e.g. "To show you are listening, choose Inconsistent."',
    )

    def __init__(self, *args, study: Study, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["submission"].queryset = eligible_strata(user=user).filter(
            benchmark=study.benchmark
        )
        self.fields["submission"].label_from_instance = lambda s: f"{s.system.name} (#{s.pk})"
        self.fields["expected_label"].choices = [(label, label) for label in study.labels]

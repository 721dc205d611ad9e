"""Staff forms for setting up and running a study."""

from __future__ import annotations

from django import forms

from evaluation.benchmarks import registry
from evaluation.benchmarks.base import StudyKind, kind_guideline
from evaluation.calibration import calibrated_columns, metric_label
from evaluation.models import Benchmark, Judge

from .models import Item, Study
from .selectors import eligible_strata, task_languages
from .services import StudyPlan


class StudyForm(forms.Form):
    """A new study on one benchmark, of one of its item kinds: the judges, submissions and
    languages offered are that benchmark's; the labels are the kind's and its guideline is the
    one the page starts from. The benchmark and kind come from the page's first step (its
    query string) and travel with the form."""

    benchmark = forms.ModelChoiceField(
        queryset=Benchmark.objects.order_by("name"), widget=forms.HiddenInput
    )
    kind = forms.ChoiceField(widget=forms.HiddenInput)
    name = forms.CharField(
        max_length=200, label="Your title", help_text="For you and other staff: raters never see it"
    )
    rater_title = forms.CharField(
        max_length=200,
        required=False,
        label="Title raters see",
        help_text="Empty: the benchmark and the kind of item",
    )
    slug = forms.SlugField(max_length=50)
    judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(), help_text="The judge whose verdicts the raters check"
    )
    language = forms.ChoiceField(
        required=False,
        help_text="Raters see only tasks in this language: choose one they read",
    )
    strata = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.none(),
        label="Submissions (strata)",
        widget=forms.CheckboxSelectMultiple,
    )
    calibrated_metric = forms.ChoiceField(
        required=False,
        label="Calibrates",
        help_text=(
            "A calibration study samples, per submission, units uniformly at random among all "
            "the metric counts (no language or empty-response filter), and its labels correct "
            "the judge's value on the board. Its kind must be the metric's."
        ),
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
    tie_rule = forms.ChoiceField(choices=Study.TieRule.choices, initial=Study.TieRule.DROP)
    guideline_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}))

    def __init__(self, *args, user, benchmark: Benchmark, kind: StudyKind, **kwargs):
        super().__init__(*args, **kwargs)
        plugin = registry()[benchmark.plugin]
        self.kind = kind
        self.fields["benchmark"].initial = benchmark.pk
        self.fields["kind"].choices = [(k.key, k.label) for k in plugin.study_kinds]
        self.fields["kind"].initial = kind.key
        self.fields["judge"].queryset = benchmark.judges.order_by("-is_official", "slug")
        self.fields["strata"].queryset = eligible_strata(user=user).filter(benchmark=benchmark)
        self.fields["strata"].label_from_instance = lambda s: f"{s.system.name} (#{s.pk})"
        self.fields["strata"].help_text = (
            "Unpublished submissions keep raters blind: a published one's responses sit beside "
            "its system's name on the board."
        )
        languages = task_languages(benchmark=benchmark)
        if languages:
            self.fields["language"].choices = [("", "every language")] + [
                (language, language) for language in languages
            ]
        else:
            del self.fields["language"]
        self.fields["guideline_text"].initial = kind_guideline(kind)
        kinds = {k.key: k.label for k in plugin.study_kinds}
        self.fields["calibrated_metric"].choices = [("", "nothing: an agreement study")] + [
            (column, f"{metric_label(plugin, column)} ({kinds.get(c.study_kind, c.study_kind)})")
            for column, c, _ in calibrated_columns(plugin)
        ]

    def plan(self) -> StudyPlan:
        data = self.cleaned_data
        return StudyPlan(
            name=data["name"],
            rater_title=data["rater_title"],
            slug=data["slug"],
            benchmark=data["benchmark"],
            judge=data["judge"],
            kind=data["kind"],
            language=data.get("language") or "",
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
            # The kind's labels: the first is the judge's yes (evaluation.benchmarks.base).
            positive_label=self.kind.labels[0],
            negative_label=self.kind.labels[1],
            tie_rule=data["tie_rule"],
            calibrated_metric=data.get("calibrated_metric") or "",
        )


def study_choice(params, *, user) -> tuple[Benchmark | None, StudyKind | None]:
    """The benchmark and item kind a new study is of, from the page's first step: the chosen
    benchmark (the only one, when there is one), and the chosen kind when it is that
    benchmark's, else its first. Benchmarks whose plug-in declares no kind are not offered."""
    offered = [b for b in Benchmark.objects.order_by("name") if registry()[b.plugin].study_kinds]
    wanted = str(params.get("benchmark", ""))
    benchmark = next((b for b in offered if str(b.pk) == wanted or b.slug == wanted), None)
    if benchmark is None and len(offered) == 1:
        benchmark = offered[0]
    if benchmark is None:
        return None, None
    kinds = registry()[benchmark.plugin].study_kinds
    kind = next((k for k in kinds if k.key == params.get("kind")), kinds[0])
    return benchmark, kind


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

from django import forms

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark
from leaderboard.uploads.selectors import teams_of


class UploadStartForm(forms.Form):
    """What the submit page sends before the first byte: the submission's fields and the file's
    name and size."""

    team = forms.ModelChoiceField(
        queryset=None,
        to_field_name="slug",
        label="Team",
        error_messages={"invalid_choice": "You are not a member of that team."},
    )
    system_name = forms.CharField(max_length=200, label="System name")
    system_type = forms.ChoiceField(required=False, label="System type")
    judge = forms.ModelChoiceField(
        queryset=None,
        to_field_name="slug",
        required=False,
        empty_label="the official judge",
        label="Judge",
    )
    allow_partial = forms.BooleanField(
        required=False,
        label="Accept an incomplete bundle (missing tasks are scored as the rules score an "
        "absent answer)",
    )
    publish = forms.BooleanField(
        required=False,
        label="Publish on the leaderboard once scored (otherwise team-only)",
        help_text="Team owners only: other members leave it off and ask an owner to publish.",
    )
    filename = forms.CharField(max_length=255, widget=forms.HiddenInput, required=False)
    size = forms.IntegerField(
        min_value=1, widget=forms.HiddenInput, required=False, label="Bundle file"
    )

    def __init__(self, *args, user, benchmark: Benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        teams = teams_of(user=user)
        self.fields["team"].queryset = teams
        if len(mine := list(teams[:2])) == 1:
            # One team: nothing to choose, so no empty choice either.
            self.fields["team"].initial = mine[0].slug
            self.fields["team"].empty_label = None
        else:
            self.fields["team"].empty_label = "choose a team"
        judge = self.fields["judge"]
        judge.queryset = benchmark.judges.order_by("-is_official", "name")
        judge.label_from_instance = lambda j: j.name
        if not benchmark.judges.filter(is_official=True).exists():
            judge.required, judge.empty_label = True, None
        plugin = get_plugin(benchmark.plugin)
        groups = [(group.key, group.label) for group in plugin.row_groups]
        if groups:
            self.fields["system_type"].choices = [("", "as in the upload's manifest"), *groups]
        else:
            del self.fields["system_type"]
        # The choices the benchmark asks a submitter to declare (a run mode, say).
        self.option_names = []
        for option in plugin.upload.options:
            self.fields[f"option_{option.name}"] = forms.ChoiceField(
                choices=option.choices,
                initial=option.default,
                label=option.label,
                help_text=option.help,
            )
            self.option_names.append(option.name)

    def option_fields(self) -> list:
        """The bound fields of the benchmark's declared options, in declaration order."""
        return [self[f"option_{name}"] for name in self.option_names]

    def options(self) -> dict:
        return {name: self.cleaned_data[f"option_{name}"] for name in self.option_names}

    def clean(self):
        cleaned = super().clean()
        if self.is_bound and not cleaned.get("size"):
            self.add_error("size", "Choose a file to upload.")
        return cleaned

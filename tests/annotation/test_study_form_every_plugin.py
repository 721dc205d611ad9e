"""The new-study form follows the benchmark and the kind chosen, for every registered plug-in
(the example one included): only that benchmark's judges and scored submissions are offered
(the submissions as check boxes, not a Ctrl-click list), only its kinds; the labels are the
kind's and the guideline starts from the kind's; a language filter is offered where the
benchmark's tasks have languages, and a study made with it samples only tasks in that
language. Another benchmark's judges and submissions stay out of the form."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation.models import Study
from evaluation.benchmarks import registry
from evaluation.benchmarks.base import kind_guideline
from tests.annotation.factories import make_board
from tests.conftest import demo_runs_scored, every_plugin_board

pytestmark = pytest.mark.django_db

SLUGS = [*sorted(registry()), "toy-bench"]


def options(page: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S)
    return re.findall(r'<option value="([^"]*)"', select.group(1)) if select else []


@pytest.mark.parametrize("slug", SLUGS)
def test_the_new_study_form_follows_the_chosen_benchmark_and_kind(slug, settings, demo_files):
    other = make_board(submissions=2, tasks=4, audio=False)  # another benchmark, its judge
    benchmark, plugin = every_plugin_board(slug, settings, demo_files(slug), name="study")
    runs = demo_runs_scored(benchmark, plugin, demo_files(slug), count=2)
    staff = User.objects.create_user("owner", password="pw-owner-1234", is_staff=True)
    client = Client()
    client.force_login(staff)

    for kind in plugin.study_kinds:
        page = client.get(f"/studies/new/?benchmark={benchmark.pk}&kind={kind.key}")
        assert page.status_code == 200
        text = page.content.decode()
        assert options(text, "kind") == [k.key for k in plugin.study_kinds]
        judges = {str(pk) for pk in benchmark.judges.values_list("pk", flat=True)}
        assert set(options(text, "judge")) - {""} == judges
        assert str(other.judge.pk) not in options(text, "judge")
        boxes = re.findall(r'<input type="checkbox" name="strata" value="(\d+)"', text)
        assert sorted(map(int, boxes)) == sorted(run.pk for run in runs)
        assert not re.search(r"<select[^>]*multiple", text)
        assert f'name="kind" value="{kind.key}"' in text
        guideline = re.search(r'<textarea name="guideline_text"[^>]*>(.*?)</textarea>', text, re.S)
        assert html.unescape(guideline.group(1)).strip() == kind_guideline(kind).strip()
        labels = html.unescape(re.search(r'<p id="kind-labels">(.*?)</p>', text, re.S).group(1))
        assert f"<strong>{kind.labels[0]}</strong>" in labels
        assert f"<strong>{kind.labels[1]}</strong>" in labels
        languages = options(text, "language")
        if plugin.task_language:
            found = {t.spec[plugin.task_language] for t in benchmark.tasks.all()}
            assert languages == ["", *sorted(found)] and len(found) > 1
        else:
            assert languages == [] and 'name="language"' not in text

    # A study made from the form: the kind's labels, and the chosen language's tasks only.
    kind = plugin.study_kinds[0]
    language = (
        sorted({t.spec[plugin.task_language] for t in benchmark.tasks.all()})[0]
        if (plugin.task_language)
        else ""
    )
    form = {
        "benchmark": benchmark.pk,
        "kind": kind.key,
        "name": "Can the offline judge be trusted?",
        "rater_title": "",
        "slug": "from-the-form",
        "judge": benchmark.judges.get(slug="offline").pk,
        "language": language,
        "strata": [run.pk for run in runs],
        "per_stratum": 2,
        "seed": 0,
        "skip_empty_responses": "on",
        "overlap": 1,
        "batch_size": 4,
        "gold_per_batch": 0,
        "attention_per_batch": 0,
        "lock_minutes": 60,
        "tie_rule": "drop",
        "guideline_text": kind_guideline(kind),
        # Labels are the kind's: any posted are not the study's.
        "positive_label": "consistent",
        "negative_label": "inconsistent",
    }
    # Another benchmark's judge is refused.
    refused = client.post("/studies/new/", {**form, "judge": other.judge.pk})
    assert refused.status_code == 200 and not Study.objects.filter(slug="from-the-form").exists()
    made = client.post("/studies/new/", form)
    assert made.status_code == 302, made.content.decode()[:2000]
    study = Study.objects.get(slug="from-the-form")
    assert (study.positive_label, study.negative_label) == kind.labels
    assert study.guidelines.get().text == kind_guideline(kind)
    assert study.items.count() == 4
    if language:
        spoken = {item.task_result.task.spec[plugin.task_language] for item in study.items.all()}
        assert spoken == {language}

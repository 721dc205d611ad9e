"""Held-out tasks on a benchmark that lives only in the tests: staff hold q1 out, a submission
is scored on the public tasks and apart on q1, and q1 stays out of every public view."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from evaluation.models import Judge, Score, Submission
from tests.toyplugin import toy
from tests.toyplugin.test_toy_plugin import grade, registered, release  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_held_out_toy_task_is_scored_apart_and_shown_to_staff_only(
    registered,  # noqa: F811
    release,  # noqa: F811
    eager,
    judge_server,
    tmp_path,
    client,
):
    call_command("import_benchmark", "toy-bench", str(release), stdout=io.StringIO())
    call_command("held_out", "toy-bench", "--tasks", "q1", stdout=io.StringIO())
    official = Judge.objects.get(benchmark__slug="toy-bench", is_official=True)
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    Judge.objects.filter(pk=official.pk).update(
        base_url=judge_server.url, price_input_per_mtok=0, price_output_per_mtok=0
    )
    judge_server.responder = grade
    answers = tmp_path / "answers.jsonl"
    toy.write_answers(answers, correct=6)  # every answer right
    out = io.StringIO()
    call_command(
        "submit",
        str(answers),
        "--benchmark=toy-bench",
        "--system=Toy A",
        "--system-type=large",
        "--option=mode=voice",
        "--publish",
        "--wait",
        "--json",
        stdout=out,
    )
    submission = Submission.objects.get(pk=json.loads(out.getvalue())["submission"])
    score = Score.objects.get(submission=submission, judge=official)
    # English is q1-q3: public q2 and q3, held out q1 (German q4-q6 has nothing held out).
    assert score.results["en"]["answered"]["total"] == 2
    assert score.held_out_results["en"]["answered"]["total"] == 1

    assert client.get(f"/submissions/{submission.pk}/tasks/q1/").status_code == 404
    assert client.get(f"/submissions/{submission.pk}/tasks/q2/").status_code == 200
    tasks = client.get(f"/api/submissions/{submission.pk}/tasks/").json()["results"]
    assert "q1" not in {t["task_id"] for t in tasks}
    response = client.get(f"/submissions/{submission.pk}/outcomes.csv")
    outcomes = b"".join(response.streaming_content).decode()
    listed = {line.split(",")[0] for line in outcomes.splitlines()[1:]}
    assert "q1" not in listed and "q2" in listed, outcomes[:400]

    client.force_login(User.objects.create_user("staff", is_staff=True))
    assert client.get(f"/submissions/{submission.pk}/tasks/q1/").status_code == 200
    tasks = client.get(f"/api/submissions/{submission.pk}/tasks/").json()["results"]
    assert "q1" in {t["task_id"] for t in tasks}

"""What a team does with its own submission, and what stays findable: publish, unpublish, show
anonymously and reveal, delete with its files (each confirmed first); a permalink to the numbers
as scored, kept through re-scoring; every task's outcome and judgment as CSV/JSON; a warning when
the same team uploads the same file twice; submission facts read from the manifest."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.core.management import call_command

from evaluation.benchmarks.mpbench import demo
from evaluation.models import (
    Judgment,
    Membership,
    Score,
    ScoreRecord,
    Submission,
    System,
    TaskJudgment,
    TaskResult,
    Team,
)
from evaluation.services import benchmark_import, submission_create
from evaluation.services.records import score_record_add

pytestmark = pytest.mark.django_db(transaction=True)

ANON = "Anonymous (under review)"


@pytest.fixture
def board(eager, tmp_path):
    demo.write_demo_benchmark(tmp_path / "source")
    return benchmark_import(
        slug="demo", directory=tmp_path / "source", plugin="mp-bench", name="Demo", is_demo=True
    ).benchmark


@pytest.fixture
def people(db):
    team = Team.objects.create(name="Owners", slug="owners")
    others = Team.objects.create(name="Others", slug="others")
    owner = User.objects.create_user("owner", password="pw")
    outsider = User.objects.create_user("outsider", password="pw")
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    Membership.objects.create(team=others, user=outsider, role=Membership.Role.OWNER)
    return SimpleNamespace(team=team, others=others, owner=owner, outsider=outsider, staff=staff)


def bundle_file(tmp_path: Path, *, profile="strong", seed=3, manifest=None, audio=True) -> Path:
    path = tmp_path / f"{profile}-{seed}-{time.monotonic_ns()}.zip"
    demo.write_demo_bundle_zip(path, profile=profile, seed=seed, manifest=manifest, audio=audio)
    return path


def submit(board, path, *, team, name="Agent X", publish=True, **kwargs) -> Submission:
    submission = submission_create(
        benchmark=board,
        bundle_path=path,
        system_name=name,
        judge=board.judges.get(slug="offline"),
        team=team,
        publish=publish,
        **kwargs,
    )
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    return submission


def as_user(client, user):
    client.logout()
    if user is not None:
        client.force_login(user)


# --- 1. System facts from the manifest ---------------------------------------------------------


def test_manifest_facts_make_the_filters_work_and_later_uploads_do_not_change_them(
    client, board, people, tmp_path
):
    manifest = {
        "architecture": "cascaded",
        "open_weights": True,
        "full_duplex": True,
        "organization": "Lab A",
        "parameters": "7B",
        "paper_url": "https://example.org/paper",
        "code_url": "https://example.org/code",
    }
    first = submit(board, bundle_file(tmp_path, manifest=manifest), team=people.team)
    system = first.system
    assert (system.architecture, system.open_weights, system.full_duplex) == (
        "cascaded",
        True,
        True,
    )
    # A later upload of the same system says otherwise: the system keeps what it was.
    submit(
        board,
        bundle_file(
            tmp_path, seed=4, manifest={"architecture": "end-to-end", "open_weights": False}
        ),
        team=people.team,
    )
    system.refresh_from_db()
    assert (system.architecture, system.open_weights) == ("cascaded", True)
    other = submit(
        board,
        bundle_file(tmp_path, profile="silent", manifest={"architecture": "end-to-end"}),
        team=people.others,
        name="Quiet",
    )
    assert other.system.full_duplex is None  # not stated: unknown, not "no"

    def shown(query):
        data = client.get(f"/api/benchmarks/demo/leaderboard/?{query}").json()
        return sorted(e["system"] for e in data["entries"])

    assert shown("arch=cascaded") == ["Agent X"]
    assert shown("open=yes") == ["Agent X"]
    assert shown("duplex=yes") == ["Agent X"]
    assert shown("duplex=no") == []  # "unknown" is neither yes nor no
    assert shown("arch=end-to-end") == ["Quiet"]
    page = client.get(f"/systems/{system.pk}/").content.decode()
    assert "Cascaded" in page and "Lab A" in page and "7B" in page
    assert "https://example.org/paper" in page and "https://example.org/code" in page
    # The board's row carries the organisation (the team's word for it: unverified), the team,
    # the date and the paper and code links.
    board_page = client.get("/benchmarks/demo/").content.decode()
    row = board_page[board_page.index('data-system="Agent X"') :].split("</tr>")[0]
    assert (
        'class="org"><span class="declared" title="organisation as declared by the team, not '
        'verified">Lab A</span> <span class="unverified"'
    ) in row
    assert "team: Owners</span>" in row
    assert f">{first.created_at.date().isoformat()}<" in row
    assert 'href="https://example.org/paper"' in row and 'href="https://example.org/code"' in row


def test_an_empty_filter_result_links_to_clearing_the_filters(client, board, people, tmp_path):
    submit(board, bundle_file(tmp_path), team=people.team)
    page = client.get("/benchmarks/demo/?duplex=yes&group=none").content.decode()
    assert "No row matches these filters." in page
    href = re.search(r'<a href="([^"]*)" id="clear-filters">', page).group(1)
    # Clearing keeps the view (judge, one list) and drops only the filters.
    assert parse_qs(urlsplit(html.unescape(href)).query) == {
        "judge": ["offline"],
        "group": ["none"],
    }
    cleared = client.get("/benchmarks/demo/" + html.unescape(href)).content.decode()
    assert 'data-system="Agent X"' in cleared


# --- 10 and 25. Owners' actions, with confirmation ----------------------------------------------


def test_owners_publish_unpublish_and_anonymize_after_confirming(client, board, people, tmp_path):
    submission = submit(board, bundle_file(tmp_path), team=people.team, publish=False)
    base = f"/submissions/{submission.pk}/manage"
    as_user(client, people.outsider)
    assert client.get(f"{base}/publish/").status_code == 404  # cannot even see it
    as_user(client, people.owner)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f'href="{base}/publish/"' in page and f'href="{base}/delete/"' in page
    confirm = client.get(f"{base}/publish/")
    assert confirm.status_code == 200 and "Yes, publish" in confirm.content.decode()
    submission.refresh_from_db()
    assert not submission.is_published  # asking is not doing
    done = client.post(f"{base}/publish/")
    assert done.status_code == 302 and done["Location"] == f"/submissions/{submission.pk}/"
    assert '<p class="notice" role="status">Published.</p>' in client.get(done["Location"]).text
    # The notice was said once; a link cannot make the site say anything.
    forged = client.get(f"/submissions/{submission.pk}/?done=Deleted:+mail+us+your+token").text
    assert "Published." not in forged and "mail us" not in forged
    submission.refresh_from_db()
    assert submission.is_published
    as_user(client, people.outsider)
    assert client.get(f"{base}/unpublish/").status_code == 403  # visible, not theirs
    assert client.post(f"{base}/unpublish/").status_code == 403

    # Shown anonymously: everyone outside the team sees "Anonymous (under review)" only.
    as_user(client, people.owner)
    client.post(f"{base}/anonymize/")
    submission.refresh_from_db()
    assert submission.is_anonymous
    name = submission.system.name
    for user in (None, people.outsider):
        as_user(client, user)
        entries = client.get("/api/benchmarks/demo/leaderboard/").json()["entries"]
        assert [(e["system"], e["system_id"], e["facets"]) for e in entries] == [(ANON, None, {})]
        board_page = client.get("/benchmarks/demo/").content.decode()
        assert name not in board_page and ANON in board_page
        assert f"/systems/{submission.system_id}/" not in board_page
        csv_text = client.get("/benchmarks/demo/leaderboard.csv").content.decode()
        assert name not in csv_text and ANON in csv_text
        charts = client.get("/benchmarks/demo/charts.json").content.decode()
        assert name not in charts and f"/systems/{submission.system_id}/" not in charts
        sub_page = client.get(f"/submissions/{submission.pk}/").content.decode()
        assert name not in sub_page and ANON in sub_page
        assert client.get(f"/systems/{submission.system_id}/").status_code == 404
        api = client.get(f"/api/submissions/{submission.pk}/").json()
        assert api["system"] is None and api["team"] is None and api["is_anonymous"]
        assert client.get(f"/api/systems/{submission.system_id}/").status_code == 404
        listed = client.get(f"/api/submissions/?system={submission.system_id}").json()
        assert listed["count"] == 0
        # A name search cannot find it, and facts filters do not match it either.
        assert client.get(f"/api/benchmarks/demo/leaderboard/?q={name[:5]}").json()["entries"] == []
    # The team still sees its own name, marked.
    as_user(client, people.owner)
    board_page = client.get("/benchmarks/demo/").content.decode()
    assert name in board_page and "anonymous to others" in board_page
    client.post(f"{base}/reveal/")
    as_user(client, None)
    assert client.get("/api/benchmarks/demo/leaderboard/").json()["entries"][0]["system"] == name


def test_delete_takes_the_rows_and_files_of_an_unpublished_submission(
    client, board, people, tmp_path
):
    kept = submit(board, bundle_file(tmp_path, seed=5), team=people.team, name="Kept")
    doomed = submit(board, bundle_file(tmp_path), team=people.team, publish=True)
    base = f"/submissions/{doomed.pk}/manage"
    as_user(client, people.owner)
    refused = client.post(f"{base}/delete/")
    assert refused.status_code == 409 and "Unpublish" in refused.content.decode()
    client.post(f"{base}/unpublish/")
    keys = [doomed.bundle.name] + [
        entry["key"]
        for files in TaskResult.objects.filter(submission=doomed).values_list("files", flat=True)
        for entry in files.values()
        if "key" in entry
    ]
    assert len(keys) > 1 and all(default_storage.exists(k) for k in keys)
    used = set(
        TaskJudgment.objects.filter(task_result__submission=doomed)
        .exclude(judgment=None)
        .values_list("judgment_id", flat=True)
    )
    shared = set(
        TaskJudgment.objects.filter(task_result__submission=kept)
        .exclude(judgment=None)
        .values_list("judgment_id", flat=True)
    )
    response = client.post(f"{base}/delete/")
    assert response.status_code == 302 and response["Location"].startswith("/benchmarks/demo/")
    assert not Submission.objects.filter(pk=doomed.pk).exists()
    assert not any(default_storage.exists(k) for k in keys)
    assert not System.objects.filter(pk=doomed.system_id).exists()
    # Judgments only it used are gone; ones the other submission shares stay.
    assert not Judgment.objects.filter(pk__in=used - shared).exists()
    assert Judgment.objects.filter(pk__in=used & shared).count() == len(used & shared)
    assert Score.objects.filter(submission=kept).exists()
    assert client.get(f"/submissions/{doomed.pk}/").status_code == 404


# --- 12. The same upload again -------------------------------------------------------------------


def test_the_same_team_is_warned_about_the_same_upload_and_no_one_else(
    client, board, people, tmp_path
):
    path = bundle_file(tmp_path)
    first = submit(board, path, team=people.team, name="One")
    second = submit(board, path, team=people.team, name="Two")
    elsewhere = submit(board, path, team=people.others, name="Theirs")
    as_user(client, people.owner)
    page = client.get(f"/submissions/{second.pk}/").content.decode()
    assert 'id="duplicate-bundle"' in page and f'href="/submissions/{first.pk}/"' in page
    assert f"/submissions/{elsewhere.pk}/" not in page
    assert 'id="duplicate-bundle"' not in client.get(f"/submissions/{first.pk}/").content.decode()
    as_user(client, people.outsider)
    theirs = client.get(f"/submissions/{elsewhere.pk}/").content.decode()
    assert 'id="duplicate-bundle"' not in theirs  # another team's uploads are never compared
    assert 'id="duplicate-bundle"' not in client.get(f"/submissions/{second.pk}/").content.decode()


# --- 24. A permalink to the numbers as scored, with their history --------------------------------


def test_a_score_keeps_its_permalink_through_re_scoring(client, board, people, tmp_path):
    submission = submit(board, bundle_file(tmp_path), team=people.team)
    records = list(ScoreRecord.objects.filter(submission=submission))
    assert len(records) == 1
    first = records[0]
    score = Score.objects.get(submission=submission, judge=submission.judge)
    assert first.results == score.results
    assert first.judge_config["slug"] == "offline"
    assert {v["kind"] for v in first.prompt_versions} <= {
        "understanding",
        "speaker_name",
        "discussion",
        "turnbased",
    }
    assert first.processing["rules"] and first.processing["steps"]
    # A re-score that changes nothing adds no record.
    call_command("rescore", "--submission", str(submission.pk), stdout=io.StringIO())
    assert ScoreRecord.objects.filter(submission=submission).count() == 1
    # New numbers (as after a judge or rules change) are a new record; the old one stays.
    changed = json.loads(json.dumps(score.results))
    changed["understanding"]["overall_acc"] = {"count": 1, "total": 2, "pct": 50.0}
    score.results = changed
    score.save()
    score_record_add(score=score)  # as the pipeline's aggregation does after every score
    assert ScoreRecord.objects.filter(submission=submission).count() == 2
    old = client.get(f"/submissions/{submission.pk}/scores/{first.pk}/")
    page = old.content.decode()
    assert old.status_code == 200 and 'id="record-replaced"' in page
    shown = first.results["understanding"]["overall_acc"]["pct"]
    assert f'data-key="understanding.overall_acc">{shown:.2f}<' in page
    newest = ScoreRecord.objects.filter(submission=submission).order_by("-pk").first()
    assert f"/submissions/{submission.pk}/scores/{newest.pk}/" in page  # the history links on
    current = client.get(f"/submissions/{submission.pk}/scores/{newest.pk}/").content.decode()
    assert (
        'id="record-current"' in current
        and 'data-key="understanding.overall_acc">50.00<' in current
    )
    sub_page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert sub_page.count('class="permalink"') == 2
    # Private work stays private at its permalink too.
    as_user(client, people.owner)
    client.post(f"/submissions/{submission.pk}/manage/unpublish/")
    as_user(client, None)
    assert client.get(f"/submissions/{submission.pk}/scores/{first.pk}/").status_code == 404


# --- 26. Every task's outcome and judgment -------------------------------------------------------


def test_outcomes_download_as_csv_and_json(client, board, people, tmp_path):
    submission = submit(board, bundle_file(tmp_path), team=people.team)
    links = TaskJudgment.objects.filter(task_result__submission=submission, judge=submission.judge)
    data = client.get(f"/submissions/{submission.pk}/outcomes.json").json()
    rows = data["rows"]
    assert data["submission"] == submission.pk and data["judge"] == "offline"
    assert len(rows) == links.count()  # every task of the demo is judged at least once
    by_key = {(r["task_id"], r["kind"], r["slot"]): r for r in rows}
    for link in links.select_related("task_result__task", "judgment"):
        row = by_key[(link.task_result.task.task_id, link.kind, link.slot)]
        if link.judgment is None:
            assert row["state"] == "fixed" and row["decided_without_call"] is True
            assert row["verdict"] == link.fixed.get("verdict")
        else:
            assert row["state"] == link.judgment.status
            assert row["verdict"] == link.judgment.verdict
            assert row["raw_output"] == link.judgment.raw_output
    response = client.get(f"/submissions/{submission.pk}/outcomes.csv")
    assert response["Content-Disposition"].endswith(f'submission-{submission.pk}-outcomes.csv"')
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(table) == len(rows)
    assert {"task_id", "kind", "verdict", "Family", "Spoke"} <= set(table[0])
    verdicts = {(r["task_id"], r["kind"]): r["verdict"] for r in table}
    for row in rows:
        expected = "" if row.get("verdict") is None else ("yes" if row["verdict"] else "no")
        assert verdicts[(row["task_id"], row["kind"])] == expected
    as_user(client, people.owner)
    client.post(f"/submissions/{submission.pk}/manage/unpublish/")
    as_user(client, people.outsider)
    assert client.get(f"/submissions/{submission.pk}/outcomes.json").status_code == 404


# --- 11. Scored as silent, said as a warning -------------------------------------------------


def test_a_response_without_its_input_transcript_is_a_warning_per_task(board, tmp_path):
    from evaluation.services import bundle_validate

    source = bundle_file(tmp_path, audio=False)
    target = tmp_path / "no-input.zip"
    with zipfile.ZipFile(source) as inside, zipfile.ZipFile(target, "w") as out:
        dropped = None
        for info in inside.infolist():
            if dropped is None and info.filename.endswith("/all_stitched.json"):
                dropped = info.filename.rsplit("/", 2)[-2]
                continue
            out.writestr(info, inside.read(info))
    report, contents = bundle_validate(benchmark=board, path=target, allow_partial=False)
    assert report.ok  # the harness scores it (as silent), so it is accepted
    warnings = [w for w in report.warnings if w.task == dropped]
    assert [w.message.split(":")[0] for w in warnings] == ["scored as silent"]
    assert warnings[0].file == "response.json"
    # Nothing else of the bundle warns like that.
    assert all(w.task == dropped for w in report.warnings if "scored as silent" in w.message)


def test_the_missing_task_message_names_the_browser_checkbox_too(board, tmp_path):
    from evaluation.services import bundle_validate

    source = bundle_file(tmp_path, audio=False)
    target = tmp_path / "short.zip"
    with zipfile.ZipFile(source) as inside, zipfile.ZipFile(target, "w") as out:
        folders = sorted({n.split("/")[0] for n in inside.namelist() if "/" in n})
        for info in inside.infolist():
            if not info.filename.startswith(folders[0] + "/"):
                out.writestr(info, inside.read(info))
    report, _ = bundle_validate(benchmark=board, path=target, allow_partial=False)
    missing = [p for p in report.problems if p.task == folders[0]]
    assert len(missing) == 1
    message = missing[0].message
    assert "the submit page's checkbox" in message and "--allow-partial" in message
    assert "allow_partial=true in the API" in message
    accepted, _ = bundle_validate(benchmark=board, path=target, allow_partial=True)
    assert accepted.ok


def test_deleting_names_the_submission_on_the_board_which_no_longer_shows_it(
    client, board, people, tmp_path
):
    doomed = submit(board, bundle_file(tmp_path), team=people.team, name="Doomed Agent")
    as_user(client, people.owner)
    client.post(f"/submissions/{doomed.pk}/manage/unpublish/")
    # The board as the team sees it, read (and cached) before the deletion.
    assert "Doomed Agent" in client.get("/benchmarks/demo/").content.decode()
    response = client.post(f"/submissions/{doomed.pk}/manage/delete/", follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0].startswith("/benchmarks/demo/")
    assert f"Submission #{doomed.pk} (Doomed Agent) deleted with its files." in page
    assert "#None" not in page
    assert "Doomed Agent" not in page.replace(f"Submission #{doomed.pk} (Doomed Agent) deleted", "")
    assert "Doomed Agent" not in client.get("/benchmarks/demo/").content.decode()

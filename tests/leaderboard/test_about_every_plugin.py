"""Each benchmark's About page, for every registered plug-in (the toy plug-in included): it
offers "Cite this benchmark" with the plug-in's BibTeX entry, and its copy-paste API command,
run as printed with curl against a live server, submits the page's own example upload to the
demo board (which has no official judge, so the command must name one)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import urllib.request

import pytest
from django.contrib.auth.models import User

from evaluation.benchmarks import registry
from evaluation.models import Membership, Submission, Team
from leaderboard.accounts.services import api_token_create
from leaderboard.uploads.models import Upload
from leaderboard.views_about import example_upload_path
from tests.conftest import every_plugin_board

SLUGS = [*sorted(registry()), "toy-bench"]
# One BibTeX entry: @type{key, field={...}, ...} with a title.
BIBTEX_ENTRY = re.compile(r"^@(misc|article|inproceedings)\{[\w:-]+,\n(\s+\w+=\{.*\},?\n)+\}$")


def _pre(page: str, element_id: str) -> str:
    found = re.search(rf'<pre[^>]* id="{element_id}">(.*?)</pre>', page, re.S)
    assert found, f"no #{element_id} on the page"
    return html.unescape(found.group(1))


@pytest.mark.django_db
@pytest.mark.parametrize("slug", SLUGS)
def test_every_about_page_offers_the_benchmarks_bibtex(slug, client, settings, demo_files):
    benchmark, plugin = every_plugin_board(slug, settings, demo_files(slug), name="cite")
    page = client.get(f"/benchmarks/{benchmark.slug}/about/").content.decode()
    assert 'id="cite"' in page and "Cite this benchmark" in page
    entry = _pre(page, "bibtex")
    assert entry == plugin.citation
    assert BIBTEX_ENTRY.match(entry), entry
    assert "title={" in entry
    assert entry.count("{") == entry.count("}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("slug", SLUGS)
def test_the_about_pages_api_command_submits_to_the_demo_board(
    slug, live_server, settings, tmp_path, eager, demo_files
):
    if shutil.which("curl") is None:
        pytest.skip("no curl on this machine")
    settings.VAR_DIR = tmp_path / "var"
    benchmark, plugin = every_plugin_board(slug, settings, demo_files(slug), name="api")
    assert not benchmark.judges.filter(is_official=True).exists()
    team = Team.objects.create(slug="delta", name="Delta Lab")
    owner = User.objects.create_user("dora", "dora@example.org", "pw")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    _, token = api_token_create(user=owner, name="about page")

    with urllib.request.urlopen(f"{live_server.url}/benchmarks/{benchmark.slug}/about/") as got:
        command = _pre(got.read().decode(), "curl-example")
    run = f"run{plugin.upload.suffixes[0]}"
    assert f"-F bundle=@{run}" in command
    shutil.copy(example_upload_path(plugin), tmp_path / run)
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "FLOORBOARD_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert not answer["error"], answer
    upload = Upload.objects.get()
    assert upload.status == Upload.Status.ACCEPTED, upload.error
    submission = Submission.objects.get(pk=upload.submission_id)
    assert submission.system.name == "My Agent"
    assert submission.options == {option.name: option.default for option in plugin.upload.options}


@pytest.mark.django_db
def test_the_api_takes_the_declared_options_and_names_a_wrong_one(
    client, settings, tmp_path, eager, django_capture_on_commit_callbacks
):
    settings.VAR_DIR = tmp_path / "var"
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="opts")
    team = Team.objects.create(slug="delta", name="Delta Lab")
    owner = User.objects.create_user("dora", "dora@example.org", "pw")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    _, token = api_token_create(user=owner, name="options")
    example = example_upload_path(plugin)

    def post(**fields):
        with example.open("rb") as bundle:
            return client.post(
                "/api/submissions/",
                {"bundle": bundle, "benchmark": benchmark.slug, "system": "Voice", **fields},
                HTTP_AUTHORIZATION=f"Bearer {token}",
            )

    wrong = post(judge="offline", mode="shouting")
    assert wrong.status_code == 400
    assert wrong.json()["fields"] == {"mode": ["mode must be one of text, voice"]}
    assert not Upload.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        taken = post(judge="offline", mode="voice")
    assert taken.status_code == 202, taken.json()
    upload = Upload.objects.get()
    assert upload.options == {"mode": "voice"}
    assert Submission.objects.get(pk=upload.submission_id).options == {"mode": "voice"}

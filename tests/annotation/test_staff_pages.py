"""Staff pages of a study: who may see them, creating a study, running it, the dashboard, exports
and snapshots, and plotly.js served from the installed package."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re

import plotly
import pytest
from django.core.files.storage import default_storage
from django.urls import reverse
from plotly.offline import get_plotlyjs

from annotation import assignment as rating
from annotation.models import Item, Rater, Rating, Study, item_clip
from annotation.selectors import EXPORT_FIELDS
from tests.annotation.factories import invite, make_board, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(django_user_model):
    return django_user_model.objects.create_user("mel", password="pw")


def rate_all(study, raters, label="consistent"):
    for rater in raters:
        while (current := rating.rater_current(rater=rater, start=True)) is not None:
            rating.assignment_submit(rater=rater, code=current.code, label=label)


@pytest.mark.parametrize(
    "name,args",
    [
        ("annotation:studies", []),
        ("annotation:study-new", []),
        ("annotation:study", ["s"]),
        ("annotation:export-csv", ["s"]),
        ("annotation:export-json", ["s"]),
    ],
)
def test_study_pages_are_for_staff_only(client, admin_client, member, name, args):
    board = make_board(submissions=1, tasks=2, audio=False)
    make_study(board, slug="s", per_stratum=2)
    url = reverse(name, args=args)
    anonymous = client.get(url)
    # Anonymous: to the site's own login (not the admin's), and back here after it.
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/?next=")
    client.force_login(member)
    assert client.get(url).status_code == 403  # signed in, not staff
    assert admin_client.get(url).status_code == 200


def test_staff_create_a_study_from_the_form(admin_client):
    board = make_board(submissions=2, tasks=4, audio=False)
    form = {
        "name": "Checking the judge",
        "slug": "checking",
        "benchmark": board.benchmark.pk,
        "judge": board.judge.pk,
        "kind": "discussion",
        "strata": [s.pk for s in board.submissions],
        "per_stratum": 3,
        "seed": 5,
        "skip_empty_responses": "on",
        "overlap": 3,
        "batch_size": 30,
        "gold_per_batch": 0,
        "attention_per_batch": 0,
        "lock_minutes": 60,
        "positive_label": "consistent",
        "negative_label": "inconsistent",
        "tie_rule": "drop",
        "guideline_text": "Judge the reply.",
    }
    response = admin_client.post(reverse("annotation:study-new"), {**form, "per_stratum": 9})
    assert response.status_code == 200
    assert "not enough discussion items to sample 9 per stratum" in response.content.decode()
    assert not Study.objects.exists()
    response = admin_client.post(reverse("annotation:study-new"), form)
    assert response.status_code == 302
    study = Study.objects.get(slug="checking")
    assert study.items.count() == 6 and study.status == "draft"
    assert study.guidelines.get().text == "Judge the reply."


def test_running_a_study_from_its_dashboard(admin_client):
    board = make_board(submissions=1, tasks=6, audio=False)
    study = make_study(board, slug="run", per_stratum=4, open_now=False)
    base = reverse("annotation:study", args=["run"])
    admin_client.post(f"{base}status/", {"status": "open"})
    admin_client.post(f"{base}invites/", {"count": 3, "name": "Panel"})
    admin_client.post(f"{base}guideline/", {"text": "Version two of the guideline."})
    admin_client.post(
        f"{base}checks/",
        {
            "role": "gold",
            "submission": board.submissions[0].pk,
            "task_id": next(
                f"scenario_discussion-{n:03d}"
                for n in range(6)
                if not study.items.filter(task_id=f"scenario_discussion-{n:03d}").exists()
            ),
            "expected_label": "inconsistent",
        },
    )
    study.refresh_from_db()
    assert study.status == "open"
    assert sorted(study.raters.values_list("name", flat=True)) == ["Panel 1", "Panel 2", "Panel 3"]
    assert study.guidelines.count() == 2
    assert study.items.filter(role=Item.Role.GOLD, expected_label="inconsistent").count() == 1
    rater = study.raters.first()
    admin_client.post(f"{base}raters/{rater.pk}/", {"action": "exclude"})
    admin_client.post(f"{base}raters/{rater.pk}/", {"action": "withdraw"})
    rater.refresh_from_db()
    assert rater.is_excluded and not rater.is_active
    page = admin_client.get(base).content.decode()
    for other in study.raters.exclude(pk=rater.pk):
        assert f"/rate/{other.token}/" in page  # invite links to hand out
    # A bad check item is refused with the reason.
    response = admin_client.post(
        f"{base}checks/",
        {
            "role": "attention",
            "submission": board.submissions[0].pk,
            "task_id": "scenario_discussion-999",
            "expected_label": "consistent",
            "instruction": "Choose Consistent.",
        },
        follow=True,
    )
    assert "has no task &#x27;scenario_discussion-999&#x27;" in response.content.decode()


def test_the_dashboard_shows_undefined_with_reasons_then_figures_from_a_snapshot(admin_client):
    from annotation.models import Snapshot

    board = make_board(submissions=2, tasks=3, audio=False)
    study = make_study(board, slug="dash", per_stratum=3, overlap=2, batch_size=6)
    page = admin_client.get(reverse("annotation:study", args=["dash"])).content.decode()
    assert "undefined (no ratings)" in page
    assert not re.search(r"\bnan\b", page, re.IGNORECASE)
    # No ratings: no chart axes drawn over nothing.
    assert 'id="empty-charts"' in page and "chart-strata" not in page
    rate_all(study, invite(study, 2))
    response = admin_client.get(reverse("annotation:study", args=["dash"]))
    page = response.content.decode()
    # Live figures: looking at the dashboard stores nothing (storage would grow with every
    # GET during a live study); a snapshot is taken when asked for.
    assert response.context["rating_count"] == 12 and Snapshot.objects.count() == 0
    assert "from 2 raters who rated, of 2 invited" in " ".join(page.split())
    # Every label is "consistent": no variation, so alpha is undefined with that reason.
    assert "undefined (every paired label is &#x27;consistent&#x27;" in page
    for submission in board.submissions:
        assert f"{submission.system.name} (#{submission.pk})" in page  # strata named for staff
    charts = json.loads(response.context["charts_json"])
    assert set(charts) == {"strata", "confusion", "raters"}
    assert f"/assets/plotly-{plotly.__version__}.min.js" in page
    # No script from another host (a rater's random invite token may well contain "cdn").
    assert not re.search(r"<script[^>]*\ssrc=\"(?:https?:)?//", page, re.IGNORECASE)
    admin_client.get(reverse("annotation:study", args=["dash"]))
    assert Snapshot.objects.count() == 0
    frozen = admin_client.post(reverse("annotation:study-snapshot", args=["dash"]))
    snapshot = Snapshot.objects.get()
    assert frozen["Location"] == reverse("annotation:snapshot", args=["dash", snapshot.sha256])
    assert snapshot.rating_count == 12
    page = admin_client.get(reverse("annotation:study", args=["dash"])).content.decode()
    assert reverse("annotation:snapshot", args=["dash", snapshot.sha256]) in page
    snap = admin_client.get(reverse("annotation:snapshot", args=["dash", snapshot.sha256]))
    assert snap.status_code == 200 and snapshot.sha256 in snap.content.decode()
    data = admin_client.get(
        reverse("annotation:snapshot-json", args=["dash", snapshot.sha256])
    ).json()
    assert data["sha256"] == snapshot.sha256 and len(data["ratings"]) == 12
    # Closing the study freezes its figures once more only if the ratings changed: same here.
    admin_client.post(reverse("annotation:study-status", args=["dash"]), {"status": "closed"})
    assert Snapshot.objects.count() == 1


def test_exports_are_long_format_with_versions_timestamps_and_audio_hashes(admin_client):
    board = make_board(submissions=1, tasks=3)
    study = make_study(board, slug="exp", per_stratum=3, overlap=2, batch_size=3)
    a, b = invite(study, 2)
    rate_all(study, [a])
    rate_all(study, [b], label="missing")
    response = admin_client.get(reverse("annotation:export-csv", args=["exp"]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert tuple(rows[0]) == EXPORT_FIELDS
    assert len(rows) == 6 == Rating.objects.count()
    for row in rows:
        item = Item.objects.get(code=row["item"])
        with default_storage.open(item_clip(item, "response")["key"], "rb") as handle:
            assert f"response={hashlib.sha256(handle.read()).hexdigest()}" in row["audio_sha256"]
        assert row["guideline_version"] == "1"
        assert row["submitted_at"] and row["shown_at"]
        rater = Rater.objects.get(pk=row["rater"])
        assert row["label"] == ("consistent" if rater == a else "")
        assert row["missing_reason"] == ("" if rater == a else "audio_problem")
    data = admin_client.get(reverse("annotation:export-json", args=["exp"])).json()
    assert len(data["ratings"]) == 6 and data["labels"] == ["consistent", "inconsistent"]
    assert {r["label"] for r in data["ratings"]} == {"consistent", None}


def test_dashboard_uses_the_sites_plotly_js(client):
    url = reverse("plotly-js", args=[plotly.__version__])
    assert url == f"/assets/plotly-{plotly.__version__}.min.js"
    body = b"".join(client.get(url).streaming_content).decode()
    assert body == get_plotlyjs()


def test_signed_in_users_join_studies_that_take_accounts(client, member, django_user_model):
    board = make_board(submissions=1, tasks=2, audio=False)
    open_study = make_study(board, slug="open", per_stratum=2, allow_accounts=True)
    make_study(board, slug="closed", per_stratum=2)
    join = reverse("annotation:study-join", args=["open"])
    assert client.get(join).status_code == 302 and "login" in client.get(join)["Location"]
    client.force_login(member)
    response = client.get(join)
    rater = open_study.raters.get(user=member)
    assert response["Location"] == reverse("annotation:rate", args=[rater.token])
    assert client.get(reverse("annotation:study-join", args=["closed"])).status_code == 404
    # An account's link does not work for someone else.
    other = django_user_model.objects.create_user("otto", password="pw")
    client.force_login(other)
    response = client.get(reverse("annotation:rate", args=[rater.token]))
    assert response.status_code == 302 and "login" in response["Location"]

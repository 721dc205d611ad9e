"""Raters see a title written for them, never the owner's own (which may say what the study
suspects, "can the offline judge be trusted…"): the one the owner gave raters, else the
benchmark and the kind of item. Every page an invite link reaches is read: before a batch,
an item, after the last one, and a signed-in user's join."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from annotation.models import Study
from tests.annotation.factories import invite, make_board, make_study

pytestmark = pytest.mark.django_db

OWNERS_TITLE = "Can the offline judge be trusted on discussions"


def rater_pages(client, study: Study) -> list[str]:
    rater = invite(study)
    before = client.get(reverse("annotation:rate", args=[rater.token])).content.decode()
    client.post(reverse("annotation:rate-start", args=[rater.token]))
    item = client.get(reverse("annotation:rate", args=[rater.token])).content.decode()
    assert 'data-item="' in item or "rate-part" in item
    return [before, item]


@pytest.mark.parametrize(
    ("rater_title", "shown"),
    [("Rating replies in a conversation", "Rating replies in a conversation"), ("", None)],
)
def test_raters_see_the_title_written_for_them(client, rater_title, shown):
    board = make_board(submissions=1, tasks=4, audio=False)
    study = make_study(board, per_stratum=2, allow_accounts=True)
    Study.objects.filter(pk=study.pk).update(name=OWNERS_TITLE, rater_title=rater_title)
    study.refresh_from_db()
    # Without one of their own: the benchmark and the kind of item, by their names.
    shown = shown or f"{board.benchmark.name}: Discussion appropriateness"
    pages = rater_pages(client, study)
    user = User.objects.create_user("joiner", password="pw-joiner-1234")
    client.force_login(user)
    joined = client.get(reverse("annotation:study-join", args=[study.slug]), follow=True)
    pages.append(joined.content.decode())
    for page in pages:
        assert OWNERS_TITLE not in page
        assert shown in page


def test_the_owner_writes_both_titles_on_the_new_study_form(admin_client):
    board = make_board(submissions=1, tasks=4, audio=False)
    page = admin_client.get(f"/studies/new/?benchmark={board.benchmark.pk}").content.decode()
    assert 'name="name"' in page and 'name="rater_title"' in page
    assert "raters never see it" in page

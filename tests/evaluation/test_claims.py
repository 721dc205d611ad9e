"""Claiming judgments from a list of ids a worker read once: taken by primary key, skipping
those another worker took meanwhile; a dead worker's lapsed lease is found when the list is read
again; every open judgment is claimed exactly once."""

from __future__ import annotations

from collections import deque
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import Judgment, TaskJudgment
from evaluation.services import submission_create
from evaluation.services.judging import judgments_claim

pytestmark = pytest.mark.django_db(transaction=True)


def test_claims_from_a_list_read_once(eager, toybench, toy_partial):
    submission = submission_create(
        benchmark=toybench,
        bundle_path=toy_partial,
        system_name="Claimed",
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
    )
    used = TaskJudgment.objects.filter(task_result__submission=submission).values("judgment_id")
    mine = Judgment.objects.filter(pk__in=used)
    mine.update(status=Judgment.Status.PENDING)  # open again, as a calling judge's would be
    ids = sorted(mine.values_list("pk", flat=True))
    assert len(ids) >= 4

    def claim(owner: str, todo: deque, limit: int = 1) -> list[int]:
        taken = judgments_claim(
            submission_id=submission.pk,
            judge_id=submission.judge_id,
            owner=owner,
            limit=limit,
            todo=todo,
        )
        return [judgment.pk for judgment in taken]

    first, second = deque(), deque()
    assert claim("first", first) == [ids[0]]
    assert list(first) == ids[1:]  # read once: the rest is kept for later claims
    assert claim("second", second) == [ids[1]]  # its own read skips what the first holds
    # The first's list still has ids[1]: taken meanwhile, it is skipped, not taken over.
    assert claim("first", first) == [ids[2]]
    assert Judgment.objects.get(pk=ids[1]).lease_owner == "second"

    # The first worker dies: its leases lapse, and a list read afresh finds them.
    Judgment.objects.filter(lease_owner="first").update(
        lease_until=timezone.now() - timedelta(seconds=1)
    )
    third = deque()
    taken = claim("third", third, limit=len(ids))
    assert taken == [ids[0], ids[2], *ids[3:]]
    assert claim("third", third) == []  # nothing left: read again once, then empty
    assert claim("second", second) == []
    owners = dict(mine.values_list("pk", "lease_owner"))
    assert owners == {pk: "second" if pk == ids[1] else "third" for pk in ids}

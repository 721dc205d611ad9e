"""Rows written by multi-row statements (evaluation.bulk) are stored as the ORM stores them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from evaluation.bulk import instance_values, rows_insert
from evaluation.models import JudgeCharge, Judgment

pytestmark = pytest.mark.django_db


def test_inserted_rows_read_back_as_the_orm_stores_them(mpbench):
    judge = mpbench.judges.get(slug="official")
    when = timezone.now()
    values = dict(
        judge_id=judge.pk,
        calls=2,
        input_tokens=1234,
        output_tokens=56,
        estimated=True,
        cost_usd=Decimal("0.012345"),
        charged_at=when,
    )
    by_orm = JudgeCharge.objects.create(**values)
    rows_insert(JudgeCharge, list(values), [list(values.values())])
    fields = [f.attname for f in JudgeCharge._meta.concrete_fields if not f.primary_key]
    stored = list(JudgeCharge.objects.order_by("pk").values(*fields))
    assert len(stored) == 2 and stored[1] == stored[0]
    assert stored[0]["submission_id"] is None and stored[0]["charged_at"] == when
    assert instance_values(by_orm, ["calls", "judge_id"]) == [2, judge.pk]


def test_a_conflict_keeps_or_updates_the_stored_row_as_asked(mpbench):
    version = mpbench.prompts.first()
    key = ("identity", "a" * 64)
    columns = (
        "judge_identity",
        "prompt_sha256",
        "prompt",
        "context",
        "output",
        "kind",
        "provider",
        "model",
        "prompt_version_id",
    )
    common = dict(kind=version.kind, provider="openai", model="m", prompt_version=version)
    Judgment.objects.create(
        judge_identity=key[0], prompt_sha256=key[1], prompt="first", context={"a": 1}, **common
    )
    row = [*key, "second", {"b": [1, None]}, None, version.kind, "openai", "m", version.pk]
    unique = ("judge_identity", "prompt_sha256")
    rows_insert(Judgment, columns, [row], unique=unique)  # kept as it was
    stored = Judgment.objects.get()
    assert (stored.prompt, stored.context, stored.status) == ("first", {"a": 1}, "pending")

    rows_insert(Judgment, columns, [row], unique=unique, update=("prompt", "context", "output"))
    stored = Judgment.objects.get()
    assert (stored.prompt, stored.context, stored.output) == ("second", {"b": [1, None]}, None)
    assert stored.created_at is not None and Judgment.objects.count() == 1

    # A new key is inserted, taking the defaults for every column not given.
    rows_insert(Judgment, columns, [[key[0], "b" * 64, *row[2:]]], unique=unique)
    new = Judgment.objects.get(prompt_sha256="b" * 64)
    assert (new.status, new.attempts, new.earlier_outputs, new.verdict) == ("pending", 0, [], None)


@pytest.mark.parametrize("batch", [1, 7, 500])
def test_rows_past_one_statement_are_all_written_once(mpbench, monkeypatch, batch):
    """More rows than one statement holds (BATCH, and on SQLite its 999 parameters: 1,200 rows of
    four columns plus the defaults need several): every row once, each with its own values, and
    a second write of the same keys updates them in place."""
    from evaluation import bulk

    monkeypatch.setattr(bulk, "BATCH", batch)
    version = mpbench.prompts.first()
    columns = ("judge_identity", "prompt_sha256", "prompt", "prompt_version_id")
    rows = [("identity", f"{n:064d}", f"prompt {n}", version.pk) for n in range(1200)]
    unique = ("judge_identity", "prompt_sha256")
    rows_insert(Judgment, columns, rows, unique=unique)
    stored = dict(Judgment.objects.values_list("prompt_sha256", "prompt"))
    assert stored == {f"{n:064d}": f"prompt {n}" for n in range(1200)}

    again = [(*row[:2], row[2].upper(), row[3]) for row in rows]
    rows_insert(Judgment, columns, again, unique=unique, update=("prompt",))
    stored = dict(Judgment.objects.values_list("prompt_sha256", "prompt"))
    assert len(stored) == 1200 and stored[f"{1199:064d}"] == "PROMPT 1199"

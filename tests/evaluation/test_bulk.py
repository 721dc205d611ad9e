"""Rows written by multi-row statements (evaluation.bulk) are stored as the ORM stores them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError
from django.utils import timezone

from evaluation.bulk import (
    insert_statement,
    instance_values,
    rows_insert,
    statements_run,
    update_statements,
)
from evaluation.models import JudgeCharge, Judgment, Team

pytestmark = pytest.mark.django_db


def test_inserted_rows_read_back_as_the_orm_stores_them(toybench):
    judge = toybench.judges.get(slug="official")
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


def test_a_conflict_keeps_or_updates_the_stored_row_as_asked(toybench):
    version = toybench.prompts.first()
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
def test_rows_past_one_statement_are_all_written_once(toybench, monkeypatch, batch):
    """More rows than one statement holds (BATCH, and on SQLite its 999 parameters: 1,200 rows of
    four columns plus the defaults need several): every row once, each with its own values, and
    a second write of the same keys updates them in place."""
    from evaluation import bulk

    monkeypatch.setattr(bulk, "BATCH", batch)
    version = toybench.prompts.first()
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


# Text and JSON that quoting must carry through whole: an array parameter's own syntax (braces,
# commas, double quotes, backslashes, the word NULL), SQL's quote, newlines, non-ASCII.
AWKWARD_TEXT = ['{"a", b}', "NULL", "", 'back\\slash "quoted"', "it's\nthere", "é 音 🎧", ","]
AWKWARD_JSON = [
    {"k": '{"x": "\\\\"}', "list": [None, True, 1.5, "NULL"]},
    [],
    "a string",
    None,
    {"nested": {"quote": "'", "brace": "}"}},
    [1, [2, [3]]],
    0,
]


def _judgment_values(version, n: int) -> dict:
    return dict(
        judge_identity=f"identity {n}",
        prompt_sha256=f"{n:064d}",
        prompt=AWKWARD_TEXT[n % len(AWKWARD_TEXT)],
        system_prompt=AWKWARD_TEXT[(n + 1) % len(AWKWARD_TEXT)],
        context={"text": AWKWARD_TEXT[n % len(AWKWARD_TEXT)]},
        output=AWKWARD_JSON[n % len(AWKWARD_JSON)],
        kind=version.kind,
        provider="openai",
        model="m",
        prompt_version_id=version.pk,
        input_tokens=None if n % 2 else n,
        verdict=(None, True, False)[n % 3],
    )


def _stored(queryset) -> list[dict]:
    names = [f.attname for f in Judgment._meta.concrete_fields if f.attname not in ("id",)]
    rows = list(queryset.order_by("prompt_sha256").values(*names))
    for row in rows:
        row.pop("created_at")
    return rows


def test_awkward_text_and_json_are_stored_as_the_orm_stores_them(toybench):
    """Every value the ORM stores comes back the same from rows_insert, on either database: a
    column of NULLs only, JSON null beside SQL NULL, quoting characters of every layer."""
    version = toybench.prompts.first()
    count = 2 * len(AWKWARD_TEXT) * len(AWKWARD_JSON)
    for n in range(count):
        Judgment.objects.create(**_judgment_values(version, n))
    expected = _stored(Judgment.objects.all())
    Judgment.objects.all().delete()

    columns = list(_judgment_values(version, 0))
    rows_insert(
        Judgment, columns, [list(_judgment_values(version, n).values()) for n in range(count)]
    )
    assert _stored(Judgment.objects.all()) == expected
    # And a column whose every value is NULL.
    Judgment.objects.all().delete()
    rows_insert(
        Judgment,
        ["judge_identity", "prompt_sha256", "prompt", "prompt_version_id", "output", "verdict"],
        [["i", f"{n:064d}", "p", version.pk, None, None] for n in range(3)],
    )
    assert list(Judgment.objects.values_list("output", "verdict")) == [(None, None)] * 3


@pytest.mark.parametrize("batch", [1, 500])
def test_an_update_sets_only_the_rows_its_keys_match(toybench, monkeypatch, batch):
    """rows_update sets the given columns of each stored row whose match columns equal the
    row's, as one ORM update per row would; a row whose keys match nothing changes nothing."""
    from evaluation import bulk

    monkeypatch.setattr(bulk, "BATCH", batch)
    version = toybench.prompts.first()
    made = [Judgment.objects.create(**_judgment_values(version, n)) for n in range(12)]
    for judgment in made[:8]:
        Judgment.objects.filter(pk=judgment.pk).update(status="running", lease_owner="me")
    when = timezone.now()
    changes = {
        judgment.pk: dict(
            raw_output=AWKWARD_TEXT[n % len(AWKWARD_TEXT)],
            output=AWKWARD_JSON[(n + 3) % len(AWKWARD_JSON)],
            status="done",
            lease_owner="",
            completed_at=when,
            input_tokens=None if n % 3 else 7,
        )
        for n, judgment in enumerate(made)
    }
    owners = {judgment.pk: "me" if n % 4 else "someone else" for n, judgment in enumerate(made)}
    columns = list(changes[made[0].pk])
    bulk.rows_update(
        Judgment,
        columns,
        ("id", "status", "lease_owner"),
        [[*changes[pk].values(), pk, "running", owners[pk]] for pk in changes],
    )
    by_rows = _stored(Judgment.objects.all())

    # The same by the ORM, row by row, on a copy of the rows as they were.
    Judgment.objects.all().delete()
    made = [Judgment.objects.create(**_judgment_values(version, n)) for n in range(12)]
    for judgment in made[:8]:
        Judgment.objects.filter(pk=judgment.pk).update(status="running", lease_owner="me")
    for n, judgment in enumerate(made):
        Judgment.objects.filter(
            pk=judgment.pk, status="running", lease_owner="me" if n % 4 else "someone else"
        ).update(**changes[list(changes)[n]])
    assert by_rows == _stored(Judgment.objects.all())
    # Rows 1-3 and 5-7 were running and held by "me": six rows changed.
    assert sum(row["status"] == "done" for row in by_rows) == 6


@pytest.mark.parametrize("unique", [(), ("judge_identity", "prompt_sha256")])
def test_rows_take_ids_in_the_order_given(toybench, unique):
    """Readers that go by id (task results in upload order) find the rows as they were given,
    whether or not a conflict has to be settled on the way."""
    version = toybench.prompts.first()
    shas = [f"{n:064d}" for n in (5, 1, 9, 3, 7, 2, 8, 0, 6, 4)] * 30
    shas = [f"{n:03d}{sha[3:]}" for n, sha in enumerate(shas)]
    columns = ("judge_identity", "prompt_sha256", "prompt", "prompt_version_id")
    rows_insert(Judgment, columns, [("i", sha, "p", version.pk) for sha in shas], unique=unique)
    assert list(Judgment.objects.order_by("pk").values_list("prompt_sha256", flat=True)) == shas


def test_rows_written_are_returned_as_stored_and_rows_left_as_stored_are_not(toybench):
    """With returning, every row inserted or updated comes back with the columns asked for,
    as the ORM reads them; a conflict that leaves the stored row returns nothing for it."""
    version = toybench.prompts.first()
    columns = ("judge_identity", "prompt_sha256", "prompt", "prompt_version_id")
    unique = ("judge_identity", "prompt_sha256")
    asked = ("id", "judge_identity", "prompt_sha256", "prompt_version", "status")
    kept = Judgment.objects.create(
        judge_identity="i", prompt_sha256="b" * 64, prompt="kept", prompt_version=version
    )
    rows = [("i", f"{n:064d}", "p", version.pk) for n in range(5)] + [
        ("i", "b" * 64, "new", version.pk)
    ]

    written = rows_insert(Judgment, columns, rows, unique=unique, returning=asked)
    stored = Judgment.objects.exclude(pk=kept.pk).values_list(
        "pk", "judge_identity", "prompt_sha256", "prompt_version_id", "status"
    )
    assert sorted(written) == sorted(stored) and len(written) == 5
    assert Judgment.objects.get(pk=kept.pk).prompt == "kept"

    # Updated on a conflict: returned too, with the ids they had.
    again = rows_insert(
        Judgment, columns, rows, unique=unique, update=("prompt",), returning=("id", "prompt")
    )
    assert sorted(again) == sorted(Judgment.objects.values_list("pk", "prompt"))
    assert {prompt for _, prompt in again} == {"p", "new"} and len(again) == 6
    # With no conflict to settle, and without asking.
    charge = ("judge_id", "calls", "charged_at")
    charges = [(toybench.judges.get(slug="official").pk, n, timezone.now()) for n in (1, 2)]
    made = rows_insert(JudgeCharge, charge, charges, returning=("id", "calls"))
    assert sorted(made) == sorted(JudgeCharge.objects.values_list("pk", "calls"))
    assert rows_insert(JudgeCharge, charge, charges) is None


# Values of every type the pipeline hands the bulk writes, and some it does not.
SAMPLES = (
    "",
    "text",
    "7",
    0,
    1,
    -3,
    2**40,
    True,
    False,
    None,
    1.5,
    Decimal("0.5"),
    [1, "a"],
    {"a": None},
)


def _prepared_or_error(prepare, value):
    try:
        prepared = prepare(value)
    except Exception as exc:  # the ORM refuses some samples: the shortcut must refuse them too
        return ("refused", type(exc))
    # PostgreSQL's JSON wrapper has no equality of its own: its value is compared.
    return ("prepared", type(prepared), getattr(prepared, "obj", prepared))


def test_every_column_is_prepared_as_the_orm_prepares_it():
    """The shortcut of evaluation.bulk gives each column's get_db_prep_save result, of the same
    type, for every concrete field of every model, on the database the suite runs on."""
    from django.apps import apps
    from django.db import connection

    from evaluation.bulk import _preparer

    checked = 0
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            prepare = _preparer(field)
            for value in SAMPLES:
                expected = _prepared_or_error(
                    lambda v: field.get_db_prep_save(v, connection),  # noqa: B023
                    value,
                )
                assert _prepared_or_error(prepare, value) == expected, (field, value)
                checked += 1
    assert checked > 1000


@pytest.mark.django_db(transaction=True)
def test_statements_run_writes_all_or_none():
    """An answer and its charge go as one unit: when the second statement fails, the first is
    undone (on PostgreSQL, one query the server runs as one transaction)."""
    kept = Team.objects.create(name="Kept", slug="kept")
    other = Team.objects.create(name="Other", slug="other")
    renamed = update_statements(Team, ["name"], ["id"], [["Renamed", kept.pk]])
    clashing = insert_statement(Team, ["name", "slug"], [["Clash", "other"]])
    with pytest.raises(IntegrityError):
        statements_run([*renamed, clashing])
    assert Team.objects.get(pk=kept.pk).name == "Kept"
    assert Team.objects.count() == 2

    statements_run([*renamed, insert_statement(Team, ["name", "slug"], [["New", "new"]]), None])
    assert Team.objects.get(pk=kept.pk).name == "Renamed"
    new = Team.objects.get(slug="new")
    assert new.name == "New" and new.created_at is not None  # the rest from their defaults
    assert Team.objects.get(pk=other.pk).name == "Other"

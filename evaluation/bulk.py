"""Many rows written by multi-row INSERT statements, for the pipeline's hot paths: a
submission's task results, judgment links, judgments and charges, by the thousand. The ORM's
bulk_create builds a model instance per row, which costs more than the database's own work when
the judge is fast. One statement per row run over the rows (executemany) costs a plan per row on
PostgreSQL, and its pipelined sends stalled for 0.2 s at a time on this machine.

Values are prepared by the model's own fields (get_db_prep_save), so what is stored is what
the ORM would store. Conflicts on a unique constraint use INSERT ... ON CONFLICT, which
PostgreSQL and SQLite both speak.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

BATCH = 500


def _fields(model: type[Model], names: Sequence[str]):
    """Concrete fields by name or attname (``judge`` and ``judge_id`` are the same column)."""
    found = []
    for name in names:
        field = model._meta.get_field(name)
        if not field.concrete:
            raise ValueError(f"{model.__name__}.{name} is not a column")
        found.append(field)
    return found


def rows_insert(
    model: type[Model],
    columns: Sequence[str],
    rows: Iterable[Sequence],
    *,
    unique: Sequence[str] = (),
    update: Sequence[str] = (),
) -> None:
    """Insert ``rows`` (values in the order of ``columns``; a foreign key takes the related
    row's id). Every other column gets its field's default, or now for auto_now(_add) ones.
    With ``unique``: a row whose unique fields match a stored one updates that row's
    ``update`` fields from the new values, or, with no ``update``, leaves the stored row."""
    meta = model._meta
    given = _fields(model, columns)
    named = {field.name for field in given}
    now = timezone.now()
    rest = [
        field for field in meta.concrete_fields if field.name not in named and not field.primary_key
    ]
    defaults = [
        now
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        else field.get_default()
        for field in rest
    ]
    fields = given + rest
    quote = connection.ops.quote_name
    head = (
        f"INSERT INTO {quote(meta.db_table)} ("
        + ", ".join(quote(field.column) for field in fields)
        + ") VALUES "
    )
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    tail = ""
    if unique:
        tail = " ON CONFLICT (" + ", ".join(quote(f.column) for f in _fields(model, unique)) + ")"
        if update:
            tail += " DO UPDATE SET " + ", ".join(
                f"{quote(f.column)} = EXCLUDED.{quote(f.column)}" for f in _fields(model, update)
            )
        else:
            tail += " DO NOTHING"
    # Rows per statement: within the backend's parameter limit (999 on SQLite).
    size = min(BATCH, (connection.features.max_query_params or BATCH * len(fields)) // len(fields))
    prepared_defaults = [
        field.get_db_prep_save(value, connection)
        for field, value in zip(rest, defaults, strict=True)
    ]
    batch: list = []
    # One transaction: outside one, SQLite would commit (and sync) after every statement.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:

        def write():
            count = len(batch) // len(fields)
            cursor.execute(head + ", ".join([one] * count) + tail, batch)

        for row in rows:
            batch.extend(
                field.get_db_prep_save(value, connection)
                for field, value in zip(given, row, strict=True)
            )
            batch.extend(prepared_defaults)
            if len(batch) >= size * len(fields):
                write()
                batch = []
        if batch:
            write()


def instance_values(obj: Model, columns: Sequence[str]) -> list:
    """A model instance's values for ``columns`` (as rows_insert takes them)."""
    return [getattr(obj, field.attname) for field in _fields(type(obj), columns)]

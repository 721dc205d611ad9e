"""Many rows written by a few statements, for the pipeline's hot paths: a submission's task
results, judgment links, judgments and charges, by the thousand. The ORM's bulk_create builds a
model instance per row, which costs more than the database's own work when the judge is fast.
One statement per row run over the rows (executemany) costs a plan per row on PostgreSQL, and
its pipelined sends stalled for 0.2 s at a time on this machine.

On PostgreSQL rows travel by COPY, which the driver formats in C: into the table itself, or,
where a conflict must be settled, into a temporary table of the transaction's own that one
INSERT ... SELECT ... ON CONFLICT reads. Multi-row INSERT statements cost five times as much
for a submission's judgments (their parameters are parsed and quoted in Python). An update
sends each column as one array, unnested into rows and matched by index. SQLite runs
in-process: there, multi-row INSERT statements within its parameter limit, and an update's
statement run over the rows.

Values are prepared by the model's own fields (get_db_prep_save), so what is stored is what
the ORM would store; text, integer ids and counters, and bools skip its layers of calls, for the
same values (see _preparer). Conflicts on a unique constraint use INSERT ... ON CONFLICT, which
PostgreSQL and SQLite both speak.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache

from django.db import connection, models, transaction
from django.db.models import Field, Model
from django.utils import timezone

BATCH = 500

# Fields whose get_db_prep_save gives a value of one exact type back as it is (an integer key
# among them, checked by validate_autopk_value, which changes nothing on PostgreSQL or SQLite).
_IDS = (models.AutoField, models.BigAutoField)
_AS_GIVEN: dict[type[Field], type] = {
    models.CharField: str,
    models.TextField: str,
    models.BooleanField: bool,
    **dict.fromkeys(_IDS, int),
}
# Counters: an int is only adapted for the driver (on PostgreSQL, typed by the column's size).
_COUNTERS = (
    models.IntegerField,
    models.BigIntegerField,
    models.SmallIntegerField,
    models.PositiveIntegerField,
    models.PositiveBigIntegerField,
    models.PositiveSmallIntegerField,
)


def _fields(model: type[Model], names: Sequence[str]) -> list[Field]:
    """Concrete fields by name or attname (``judge`` and ``judge_id`` are the same column)."""
    return list(_fields_named(model, tuple(names)))


@cache
def _fields_named(model: type[Model], names: tuple[str, ...]) -> tuple[Field, ...]:
    found = []
    for name in names:
        field = model._meta.get_field(name)
        if not field.concrete:
            raise ValueError(f"{model.__name__}.{name} is not a column")
        found.append(field)
    return tuple(found)


def _preparer(field: Field) -> Callable:
    """``field.get_db_prep_save``, without its layers of calls for the values the pipeline
    writes by the thousand: text for a text column, an int for a key or a counter, a bool. Any
    other value goes through the field itself."""
    orm = field.get_db_prep_save
    # A key to a row with an integer id is that id.
    key = type(field) is models.ForeignKey and type(field.target_field) in _IDS
    given = int if key else _AS_GIVEN.get(type(field))
    if given is not None:
        return lambda value: value if type(value) is given else orm(value, connection)
    if type(field) in _COUNTERS:
        adapt, internal = connection.ops.adapt_integerfield_value, field.get_internal_type()
        return lambda value: (
            adapt(value, internal) if type(value) is int else orm(value, connection)
        )
    return lambda value: orm(value, connection)


def _arrays(fields: Sequence[Field]) -> str:
    """unnest(...) over one array parameter per field, typed as the field's column."""
    return "unnest(" + ", ".join(f"%s::{field.db_type(connection)}[]" for field in fields) + ")"


def _copy(cursor, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    """PostgreSQL's COPY of ``rows`` into ``table`` (names already quoted)."""
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _staged(cursor, fields: Sequence[Field], rows: Iterable[Sequence]) -> str:
    """A temporary table, dropped when the transaction ends, holding ``rows`` in columns v0,
    v1, ... typed as ``fields``; returns its name."""
    name = f"floorboard_rows_{uuid.uuid4().hex}"
    columns = ", ".join(f"v{n} {field.db_type(connection)}" for n, field in enumerate(fields))
    cursor.execute(f"CREATE TEMPORARY TABLE {name} ({columns}) ON COMMIT DROP")
    _copy(cursor, name, [f"v{n}" for n in range(len(fields))], rows)
    return name


def _prepared(preparers: Sequence[Callable], row: Sequence) -> list:
    return [prepare(value) for prepare, value in zip(preparers, row, strict=True)]


def batches(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of ``size`` (the last may be shorter), taken as they come: a generator
    is never held whole."""
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _insert_columns(model: type[Model], columns: Sequence[str]) -> tuple[list[Field], Callable]:
    """Every column an insert writes (``columns``, then the rest but the primary key), and
    what turns a row of ``columns`` values into values for all of them: every other column gets
    its field's default, or now for auto_now(_add) ones."""
    given = _fields(model, columns)
    named = {field.name for field in given}
    now = timezone.now()
    rest = [
        field
        for field in model._meta.concrete_fields
        if field.name not in named and not field.primary_key
    ]
    defaults = [
        now
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        else field.get_default()
        for field in rest
    ]
    prepared_defaults = _prepared([_preparer(field) for field in rest], defaults)
    preparers = [_preparer(field) for field in given]
    return given + rest, lambda row: _prepared(preparers, row) + prepared_defaults


def _insert_head(model: type[Model], fields: Sequence[Field]) -> str:
    quote = connection.ops.quote_name
    return (
        f"INSERT INTO {quote(model._meta.db_table)} ("
        + ", ".join(quote(field.column) for field in fields)
        + ") "
    )


def _values(fields: Sequence[Field], rows: int) -> str:
    """VALUES with a placeholder for each of ``fields`` in each of ``rows`` rows."""
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return "VALUES " + ", ".join([one] * rows)


def _update_sql(model: type[Model], given: Sequence[Field], keys: Sequence[Field]) -> str:
    """One row's UPDATE: ``given`` set, ``keys`` matched, each a placeholder."""
    quote = connection.ops.quote_name
    return (
        f"UPDATE {quote(model._meta.db_table)} SET "
        + ", ".join(f"{quote(field.column)} = %s" for field in given)
        + " WHERE "
        + " AND ".join(f"{quote(field.column)} = %s" for field in keys)
    )


def rows_insert(
    model: type[Model],
    columns: Sequence[str],
    rows: Iterable[Sequence],
    *,
    unique: Sequence[str] = (),
    update: Sequence[str] = (),
    returning: Sequence[str] = (),
) -> list[tuple] | None:
    """Insert ``rows`` (values in the order of ``columns``; a foreign key takes the related
    row's id). Every other column gets its field's default, or now for auto_now(_add) ones.
    With ``unique``: a row whose unique fields match a stored one updates that row's
    ``update`` fields from the new values, or, with no ``update``, leaves the stored row.
    With ``returning`` (field names; "id" and foreign keys' ids, text): those columns of
    every row written, inserted or updated, in no set order, as the database gives them; a
    row left as stored is not among them. None when not asked, or when the database cannot say
    (an SQLite before 3.35): then the caller reads them."""
    meta = model._meta
    fields, row_values = _insert_columns(model, columns)
    quote = connection.ops.quote_name
    head = _insert_head(model, fields)
    tail = ""
    if unique:
        tail = " ON CONFLICT (" + ", ".join(quote(f.column) for f in _fields(model, unique)) + ")"
        if update:
            tail += " DO UPDATE SET " + ", ".join(
                f"{quote(f.column)} = EXCLUDED.{quote(f.column)}" for f in _fields(model, update)
            )
        else:
            tail += " DO NOTHING"
    asked = bool(returning) and connection.features.can_return_rows_from_bulk_insert
    if asked:
        tail += " RETURNING " + ", ".join(quote(f.column) for f in _fields(model, returning))
    written: list[tuple] = []
    prepared = (row_values(row) for row in rows)
    # One transaction: outside one, SQLite would commit (and sync) after every statement.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            if not unique and not asked:
                _copy(cursor, quote(meta.db_table), [quote(f.column) for f in fields], prepared)
                return None
            staged = _staged(cursor, fields, prepared)
            columns = ", ".join(f"v{n}" for n in range(len(fields)))
            # In the order given, as the rows' ids were taken before.
            cursor.execute(f"{head}SELECT {columns} FROM {staged} ORDER BY ctid{tail}")
            if asked:
                written = cursor.fetchall()
            cursor.execute(f"DROP TABLE {staged}")
        else:
            # Rows per statement: within the backend's parameter limit (999 on SQLite).
            limit = connection.features.max_query_params or BATCH * len(fields)
            for batch in batches(prepared, min(BATCH, limit // len(fields))):
                cursor.execute(
                    head + _values(fields, len(batch)) + tail,
                    [value for row in batch for value in row],
                )
                if asked:
                    written.extend(cursor.fetchall())
    return written if asked else None


def rows_update(
    model: type[Model],
    columns: Sequence[str],
    match: Sequence[str],
    rows: Iterable[Sequence],
) -> None:
    """Set ``columns`` of the stored rows whose ``match`` columns equal a row's values (each
    row: its ``columns`` values, then its ``match`` values). A row that matches nothing
    changes nothing."""
    meta = model._meta
    given, keys = _fields(model, columns), _fields(model, match)
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    preparers = [_preparer(field) for field in given + keys]
    prepared = (_prepared(preparers, row) for row in rows)
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            names = [f"v{n}" for n in range(len(given) + len(keys))]
            sql = (
                f"UPDATE {table} SET "
                + ", ".join(
                    f"{quote(field.column)} = v.{name}"
                    for field, name in zip(given, names, strict=False)
                )
                + f" FROM {_arrays(given + keys)} AS v({', '.join(names)}) WHERE "
                + " AND ".join(
                    f"{table}.{quote(field.column)} = v.{name}"
                    for field, name in zip(keys, names[len(given) :], strict=True)
                )
            )
            for batch in batches(prepared, BATCH):
                cursor.execute(sql, [list(column) for column in zip(*batch, strict=True)])
            return
        for batch in batches(prepared, BATCH):
            cursor.executemany(_update_sql(model, given, keys), batch)


def instance_values(obj: Model, columns: Sequence[str]) -> list:
    """A model instance's values for ``columns`` (as rows_insert takes them)."""
    return [getattr(obj, field.attname) for field in _fields(type(obj), columns)]


# --- A few rows in one round trip -----------------------------------------------------------
#
# The judging loop stores each answer as it comes, with what its call cost: one or two rows of
# two tables, a few hundred times a minute. These build the plain statements for so few rows,
# and statements_run sends them together.


def insert_statement(model: type[Model], columns: Sequence[str], rows: Sequence[Sequence]):
    """One INSERT ... VALUES of ``rows`` (as rows_insert writes them), as (sql, parameters);
    None for no rows."""
    if not rows:
        return None
    fields, row_values = _insert_columns(model, columns)
    return (
        _insert_head(model, fields) + _values(fields, len(rows)),
        [value for row in rows for value in row_values(row)],
    )


def update_statements(
    model: type[Model], columns: Sequence[str], match: Sequence[str], rows: Iterable[Sequence]
) -> list[tuple[str, list]]:
    """rows_update's rows as one plain UPDATE each, as (sql, parameters)."""
    given, keys = _fields(model, columns), _fields(model, match)
    sql = _update_sql(model, given, keys)
    preparers = [_preparer(field) for field in given + keys]
    return [(sql, _prepared(preparers, row)) for row in rows]


def statements_run(statements: Sequence[tuple[str, Sequence] | None]) -> None:
    """Run ``statements`` (sql, parameters; None is skipped) all or none. On PostgreSQL with
    client-side binding (the default) they go as one query: one round trip, which the server
    runs as one transaction when none is open (0.7 ms against 1.5 ms for an answer and its
    charge sent one by one in a transaction, on this machine). Elsewhere, one after another in
    one transaction."""
    statements = [statement for statement in statements if statement is not None]
    if not statements:
        return
    options = connection.settings_dict.get("OPTIONS", {})
    if connection.vendor == "postgresql" and not options.get("server_side_binding"):
        with connection.cursor() as cursor:
            cursor.execute(
                "; ".join(sql for sql, _ in statements),
                [value for _, params in statements for value in params],
            )
        return
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)

"""GET /api/benchmarks/<slug>/leaderboard/ a page at a time (FLOORBOARD_API_BOARD_PAGE_SIZE
rows, 50 by default), every row with rows=all, both served from the response cache once read."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.devtools.management.commands.bench_leaderboard import seed

pytestmark = pytest.mark.django_db

ROWS = 120  # 50 + 50 + 20


@pytest.fixture
def address(settings):
    settings.BOARD_STATE_SECONDS = 300
    benchmark = seed(systems=ROWS, submissions=ROWS, judges=1, prefix="-pages")
    return f"/api/benchmarks/{benchmark.slug}/leaderboard/"


def test_a_page_at_a_time(client, address):
    first = client.get(address).json()
    assert (first["count"], first["page"], first["pages"], first["page_size"]) == (ROWS, 1, 3, 50)
    assert len(first["entries"]) == 50
    assert first["previous"] is None
    assert first["next"].endswith(f"{address}?judge=official&page=2")
    second = client.get(first["next"]).json()
    assert len(second["entries"]) == 50
    assert second["previous"].endswith(f"{address}?judge=official")
    last = client.get(second["next"]).json()
    assert (len(last["entries"]), last["page"], last["next"]) == (20, 3, None)

    every = client.get(f"{address}?rows=all").json()
    assert (every["count"], every["pages"], every["page_size"], every["next"]) == (
        ROWS,
        1,
        None,
        None,
    )
    paged = [e["submission"] for page in (first, second, last) for e in page["entries"]]
    assert paged == [e["submission"] for e in every["entries"]]
    assert len(set(paged)) == ROWS


def test_rows_all_is_cached_too(client, address):
    for query in ("", "?rows=all", "?page=2"):
        client.get(address + query)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(address + query).status_code == 200
        assert len(queries) == 0, query


def test_a_smaller_page_size(client, address, settings):
    settings.API_BOARD_PAGE_SIZE = 7
    body = client.get(f"{address}?page=18").json()
    assert (body["pages"], len(body["entries"])) == (18, 120 - 17 * 7)


@pytest.mark.parametrize(
    "query, status, says",
    [
        ("?page=0", 400, "'0' is not a page number"),
        ("?page=two", 400, "'two' is not a page number"),
        ("?page=-1", 400, "'-1' is not a page number"),
        ("?rows=all&page=2", 400, "rows=all gives every row"),
        ("?page=4", 404, "this board has 3"),
    ],
)
def test_a_bad_page_is_named(client, address, query, status, says):
    response = client.get(address + query)
    assert response.status_code == status
    assert says in response.json()["detail"]

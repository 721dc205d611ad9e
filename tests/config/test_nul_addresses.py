"""An address holding a NUL character (%00) gets a 400 that says so, on every page and API
endpoint of every registered benchmark: PostgreSQL refuses NUL in a query, so a view that
filters by what it was given would answer 500."""

from __future__ import annotations

import pytest

from evaluation.benchmarks import registry

pytestmark = pytest.mark.django_db

ADDRESSES = [
    "/?q=%00",
    "/?q=a%00b",
    "/benchmarks/{slug}/?judge=%00",
    "/benchmarks/{slug}/?slice=family%3D%00",
    "/benchmarks/{slug}/compare/?judge=%00",
    "/benchmarks/{slug}/compare/?a=1&b=%00",
    "/benchmarks/{slug}/leaderboard.csv?judge=%00",
    "/benchmarks/{slug}/charts.json?%00=1",
    "/api/benchmarks/{slug}/leaderboard/?judge=%00",
    "/api/benchmarks/{slug}/compare/?judge=%00",
    "/api/submissions/?benchmark=%00",
    "/benchmarks/%00/",
]


@pytest.mark.parametrize("slug", sorted(registry()))
@pytest.mark.parametrize("address", ADDRESSES)
def test_an_address_with_a_nul_character_is_refused_with_a_clear_400(client, slug, address):
    response = client.get(address.format(slug=slug))
    assert response.status_code == 400
    assert response.text == "The address holds a NUL character (%00), which no page takes."


def test_an_address_without_one_is_served_as_before(client):
    assert client.get("/?q=anything").status_code == 200

"""A system's paper and code addresses are links only when they are http(s) addresses: on the
system page and on the board a javascript:, data: or vbscript: address is never an href (a
stored one is shown as text); a manifest, a paper's row or the admin form naming one is refused
with the field named."""

from __future__ import annotations

import html
import re
import time

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.forms.models import model_to_dict
from django.test import RequestFactory

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import ReportedRow, SourceError
from evaluation.benchmarks.mpbench import demo
from evaluation.bundles import BundleRejected
from evaluation.models import Benchmark, Judge, Submission, System
from evaluation.services import benchmark_import, reported_rows_load, submission_create
from tests.leaderboard.test_board_page import mp_results, scored_row

pytestmark = pytest.mark.django_db

SCRIPTED = [
    "javascript:alert(document.cookie)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "java\tscript:alert(1)",
]


def hrefs(page: str) -> list[str]:
    return [html.unescape(value) for value in re.findall(r'href="([^"]*)"', page)]


@pytest.fixture
def bench(db):
    benchmark = Benchmark.objects.create(slug="links-bench", name="Links", plugin="mp-bench")
    judge = Judge.objects.create(
        benchmark=benchmark, slug="offline", name="Off", provider="offline"
    )
    return benchmark, judge


@pytest.mark.parametrize("address", SCRIPTED)
def test_a_stored_scripted_address_is_text_on_the_system_page_and_absent_from_the_board(
    client, bench, address
):
    benchmark, judge = bench
    row = scored_row(benchmark, judge, "Tricky", mp_results(300, 50, 120, 64, 130, 72))
    # Stored before addresses were checked at input: the pages alone must keep it harmless.
    System.objects.filter(pk=row.system_id).update(paper_url=address, code_url=address)
    page = client.get(f"/systems/{row.system_id}/").content.decode()
    assert address not in hrefs(page)
    assert not any(h.lower().startswith(("javascript", "data:", "vbscript")) for h in hrefs(page))
    # Shown as text, escaped: two cells (paper, code) hold it.
    assert page.count(f"<td>{html.escape(address)}</td>") == 2
    board = client.get(f"/benchmarks/{benchmark.slug}/?judge=offline").content.decode()
    assert 'data-system="Tricky"' in board
    assert address not in hrefs(board)
    assert 'class="ext"' not in board  # no paper or code link on the row


def test_web_addresses_stay_links(client, bench):
    benchmark, judge = bench
    row = scored_row(benchmark, judge, "Plain", mp_results(300, 50, 120, 64, 130, 72))
    System.objects.filter(pk=row.system_id).update(
        paper_url="https://example.org/p.pdf", code_url="http://example.org/c"
    )
    page = client.get(f"/systems/{row.system_id}/").content.decode()
    assert '<a href="https://example.org/p.pdf" rel="nofollow noopener">' in page
    assert '<a href="http://example.org/c" rel="nofollow noopener">' in page
    board = client.get(f"/benchmarks/{benchmark.slug}/?judge=offline").content.decode()
    assert '<a class="ext" href="https://example.org/p.pdf" rel="nofollow noopener">paper</a>' in (
        board
    )
    assert '<a class="ext" href="http://example.org/c" rel="nofollow noopener">code</a>' in board


@pytest.fixture
def demo_board(tmp_path):
    demo.write_demo_benchmark(tmp_path / "source")
    return benchmark_import(
        slug="demo", directory=tmp_path / "source", plugin="mp-bench", name="Demo", is_demo=True
    ).benchmark


@pytest.mark.parametrize(
    ("field", "address"),
    [
        ("paper_url", "javascript:alert(1)"),
        ("code_url", "data:text/html,<b>hi</b>"),
        ("url", "vbscript:msgbox(1)"),
    ],
)
def test_a_manifest_with_a_scripted_address_is_refused_naming_the_field(
    demo_board, tmp_path, field, address
):
    path = tmp_path / f"bundle-{time.monotonic_ns()}.zip"
    demo.write_demo_bundle_zip(path, profile="strong", seed=3, manifest={field: address})
    with pytest.raises(BundleRejected) as caught:
        submission_create(
            benchmark=demo_board,
            bundle_path=path,
            system_name="Sneaky",
            judge=demo_board.judges.get(slug="offline"),
        )
    problems = [str(problem) for problem in caught.value.report.problems]
    assert any(
        f"field '{field}' must be a web address starting with http:// or https://" in problem
        and problem.startswith("manifest.json")
        for problem in problems
    ), problems
    assert not System.objects.filter(name="Sneaky").exists()
    assert not Submission.objects.filter(system__name="Sneaky").exists()


def test_a_papers_row_with_a_scripted_address_is_refused(bench, monkeypatch):
    benchmark, _ = bench
    plugin = get_plugin("mp-bench")
    rows = [
        ReportedRow(
            system="Paper Agent",
            results=mp_results(1, 1, 1, 1, 1, 1),
            facts={"paper_url": "javascript:alert(1)"},
        )
    ]
    monkeypatch.setattr(plugin, "reported_rows", lambda: rows)
    with pytest.raises(SourceError, match="'Paper Agent': field 'paper_url' must be a web address"):
        reported_rows_load(benchmark=benchmark)
    assert not System.objects.filter(name="Paper Agent").exists()


def test_the_admin_form_takes_only_web_addresses(bench):
    system = System.objects.create(name="Edited")
    staff = User.objects.create_user("staff", password="pw", is_staff=True, is_superuser=True)
    request = RequestFactory().post("/")
    request.user = staff
    form_class = admin.site._registry[System].get_form(request, system)
    data = {k: ("" if v is None else v) for k, v in model_to_dict(system).items()}
    data.update(
        {
            "open_weights": "unknown",
            "full_duplex": "unknown",
            "metadata": "{}",
            "team": "",
            "paper_url": "ftp://example.org/paper.pdf",  # URLField alone takes ftp
            "code_url": "https://example.org/code",
        }
    )
    form = form_class(data, instance=system)
    assert not form.is_valid()
    assert list(form.errors) == ["paper_url"]
    assert "must be a web address starting with http:// or https://" in str(form.errors)
    data["paper_url"] = "https://example.org/paper.pdf"
    form = form_class(data, instance=system)
    assert form.is_valid(), form.errors

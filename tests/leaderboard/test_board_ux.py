"""What a newcomer met on the board and around it, checked by request: ranks explained and ties
shared, the first screen and the whole table, a name search that keeps ranks, the cached table,
compressed responses, the home page, the favicon, the About page from the plug-in's
declarations, the API schema, chart legends and label placement."""

from __future__ import annotations

import gzip
import html
import json
import re
import zipfile
from pathlib import Path

import plotly
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark, Judge
from leaderboard.charts import CHAR_WIDTH, LABEL_HEIGHT, LABEL_POSITIONS, label_positions
from leaderboard.views import FIRST_ROWS
from tests.leaderboard.test_board_page import mp_results, scored_row

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture
def judge(mpbench_demo) -> Judge:
    return Judge.objects.create(
        benchmark=mpbench_demo,
        slug="gpt",
        name="GPT judge",
        provider=Judge.Provider.OPENAI,
        models_by_kind={"understanding": "m"},
    )


def many_rows(mpbench_demo, judge, count: int) -> None:
    # Overall accuracy k of 543 for row k: every row ranks apart, best last made.
    for k in range(count):
        scored_row(
            mpbench_demo,
            judge,
            f"Row {k:03d}",
            mp_results(k, 0, 0, 0, 0, 0),
            system_type="realtime",
        )


# --- 2. Ranking, said and done -------------------------------------------------------------------


def test_exact_ties_share_a_rank_and_the_page_says_how_ranks_are_given(client, mpbench_demo, judge):
    # Two rows with the same counts everywhere; a third differs only at the third decimal of a
    # percentage that rounds the same (2 of 543 vs 2 of 543 is a tie; 100/128 vs 100/128 too).
    scored_row(mpbench_demo, judge, "Tied A", mp_results(300, 50, 120, 64, 130, 72))
    scored_row(mpbench_demo, judge, "Tied B", mp_results(300, 50, 120, 64, 130, 72))
    scored_row(mpbench_demo, judge, "Below", mp_results(299, 50, 120, 64, 130, 72))
    scored_row(
        mpbench_demo, judge, "Other group", mp_results(10, 0, 0, 0, 0, 0), system_type="text-llm"
    )
    entries = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=gpt&group=none").json()[
        "entries"
    ]
    ranks = {e["system"]: e["rank"] for e in entries}
    # Standard competition ranking: 1, 1, 3 (the next rank is skipped), then 4.
    assert ranks == {"Tied A": 1, "Tied B": 1, "Below": 3, "Other group": 4}
    grouped = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=gpt").json()["entries"]
    assert {e["system"]: e["rank"] for e in grouped}["Other group"] == 1  # within its group
    page = client.get("/benchmarks/mp-bench/?judge=gpt").content.decode()
    note = re.search(r'<p id="ranking-note">(.*?)</p>', page, re.S).group(1)
    plugin = get_plugin("mp-bench")
    for key in plugin.rank_keys:
        metric = plugin.metric(key)
        assert f"{metric.group} {metric.label}" in note
    assert "unrounded" in note and "(1, 2, 2, 4)" in note and "within each group" in note
    one_list = client.get("/benchmarks/mp-bench/?judge=gpt&group=none").content.decode()
    assert "One ranking of every row shown." in one_list


# --- 9.8 The board at scale: first screen, whole table, cache ------------------------------------


def test_the_first_screen_shows_the_best_rows_and_the_whole_table_is_one_click_away(
    client, mpbench_demo, judge
):
    many_rows(mpbench_demo, judge, FIRST_ROWS + 7)
    page = client.get("/benchmarks/mp-bench/?judge=gpt&group=none").content.decode()
    shown = re.findall(r'data-system="(Row \d+)"', page)
    assert len(shown) == FIRST_ROWS
    assert shown[0] == f"Row {FIRST_ROWS + 6:03d}"  # the best first
    assert f"Showing the first {FIRST_ROWS} of {FIRST_ROWS + 7} rows" in page
    link = re.search(r'<a href="([^"]*)" id="show-all-rows">', page).group(1)
    assert "rows=all" in link
    whole = client.get("/benchmarks/mp-bench/" + link.replace("&amp;", "&")).content.decode()
    assert len(re.findall(r'data-system="Row \d+"', whole)) == FIRST_ROWS + 7
    # The exports carry every row, whatever the page shows (the API with rows=all).
    data = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=gpt&group=none&rows=all").json()
    assert len(data["entries"]) == FIRST_ROWS + 7
    csv_rows = client.get("/benchmarks/mp-bench/leaderboard.csv?judge=gpt").content.decode()
    assert len(csv_rows.strip().splitlines()) == FIRST_ROWS + 7 + 1


def test_a_name_search_keeps_the_boards_ranks(client, mpbench_demo, judge):
    many_rows(mpbench_demo, judge, 12)
    data = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=gpt&group=none&q=row 00").json()
    # Rows 000-009 match; row 009 is third best of twelve overall, and keeps rank 3.
    assert [(e["system"], e["rank"]) for e in data["entries"][:2]] == [
        ("Row 009", 3),
        ("Row 008", 4),
    ]
    assert len(data["entries"]) == 10
    page = client.get("/benchmarks/mp-bench/?judge=gpt&group=none&q=ROW 011").content.decode()
    assert re.findall(r'data-system="(Row \d+)"', page) == ["Row 011"]
    assert '<td class="rank"><span class="rank-number">1</span>' in page
    assert "1 row matches these filters" in page


def test_the_rendered_table_is_cached_until_a_score_changes(client, mpbench_demo, judge):
    many_rows(mpbench_demo, judge, 5)
    url = "/benchmarks/mp-bench/?judge=gpt"
    with CaptureQueriesContext(connection) as cold:
        first = client.get(url).content.decode()
    with CaptureQueriesContext(connection) as warm:
        again = client.get(url).content.decode()
    assert again == first and len(warm) < len(cold)
    scored_row(mpbench_demo, judge, "Newcomer", mp_results(540, 0, 0, 0, 0, 0))
    assert 'data-system="Newcomer"' in client.get(url).content.decode()


# --- Compressed responses ------------------------------------------------------------------------


def test_pages_json_and_plotly_js_go_out_compressed(client, mpbench_demo, judge):
    many_rows(mpbench_demo, judge, 30)
    page = client.get("/benchmarks/mp-bench/?judge=gpt", HTTP_ACCEPT_ENCODING="gzip")
    assert page["Content-Encoding"] == "gzip"
    plain = client.get("/benchmarks/mp-bench/?judge=gpt").content
    assert gzip.decompress(page.content) == plain and len(page.content) < len(plain) / 3
    api = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=gpt", HTTP_ACCEPT_ENCODING="gzip")
    assert api["Content-Encoding"] == "gzip"
    url = f"/assets/plotly-{plotly.__version__}.min.js"
    shipped = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()
    packed = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    assert packed["Cache-Control"] == "public, max-age=31536000, immutable"
    assert gzip.decompress(packed.content) == shipped
    assert len(packed.content) < len(shipped) / 2
    raw = client.get(url)
    assert "Content-Encoding" not in raw and b"".join(raw.streaming_content) == shipped


# --- 6 and 7. The home page and the favicon -------------------------------------------------------


def test_the_home_page_shows_each_benchmark_with_its_size_systems_and_leader(
    client, mpbench_demo, judge
):
    page = client.get("/").content.decode()
    card = page[page.index('data-benchmark="mp-bench"') :].split("</article>")[0]
    plugin = get_plugin("mp-bench")
    assert plugin.description[:40] in card
    assert f'class="tasks">{mpbench_demo.tasks.count()}<' in card
    assert "0 scored here · 14 reported in a paper" in card
    # Under the official judge the paper's best row leads (87.48 overall accuracy).
    assert "Gemini-3.1-Pro (SpkD-ASR)" in card and "reported in paper" in card
    assert 'href="/benchmarks/mp-bench/about/"' in card
    Benchmark.objects.create(slug="empty", name="Empty", plugin="mp-bench")
    empty = client.get("/").content.decode()
    card = empty[empty.index('data-benchmark="empty"') :].split("</article>")[0]
    assert "(not imported yet)" in card and "none yet" in card


def test_every_page_names_its_icon_and_favicon_ico_finds_it(client, mpbench_demo):
    page = client.get("/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    svg = (Path(__file__).resolve().parents[2] / "static" / "favicon.svg").read_text()
    assert svg.startswith("<svg")


# --- 5. About each benchmark, from its declarations -----------------------------------------------


def test_the_about_page_says_what_the_plugin_declares(client, mpbench_demo):
    plugin = get_plugin("mp-bench")
    page = html.unescape(client.get("/benchmarks/mp-bench/about/").content.decode())
    assert plugin.description in page
    for rule in plugin.rules:
        assert rule in page
    for metric in plugin.metrics:
        assert f"<td>{metric.label}</td>" in page
    for kind in plugin.judge_kinds:
        assert f"<strong>{kind.label}</strong>" in page
    for line in plugin.judge_validation:
        assert line in page
    assert plugin.upload.label[0].upper() + plugin.upload.label[1:] in page
    assert 'href="/benchmarks/mp-bench/example-upload/"' in page
    assert 'curl -H "Authorization: Bearer $FLOORBOARD_TOKEN"' in page
    assert "-F benchmark=mp-bench" in page and "http://testserver/api/submissions/" in page
    assert "manage.py submit run.zip --benchmark mp-bench" in page
    bibtex = re.search(r'<pre class="bibtex" id="bibtex">(.*?)</pre>', page, re.S).group(1)
    assert bibtex == plugin.citation
    # The board links here and carries the same BibTeX.
    board = client.get("/benchmarks/mp-bench/").content.decode()
    assert 'href="/benchmarks/mp-bench/about/"' in board and 'id="bibtex"' in board


def test_the_example_upload_is_the_plugins_demo_run_and_passes_on_the_demo_board(
    client, mpbench_demo, settings, tmp_path
):
    from evaluation.benchmarks.mpbench import demo
    from evaluation.services import benchmark_import, bundle_validate

    settings.VAR_DIR = tmp_path / "var"
    response = client.get("/benchmarks/mp-bench/example-upload/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="mp-bench-example.zip"'
    path = tmp_path / "example.zip"
    path.write_bytes(b"".join(response.streaming_content))
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert "manifest.json" in names and any(n.endswith("/response.json") for n in names)
    demo.write_demo_benchmark(tmp_path / "source")
    board = benchmark_import(
        slug="demo", directory=tmp_path / "source", plugin="mp-bench", is_demo=True
    ).benchmark
    report, _ = bundle_validate(benchmark=board, path=path, allow_partial=False)
    assert report.ok, report.lines()
    # Written once, then served as is.
    assert list((tmp_path / "var" / "example-uploads" / "mp-bench").iterdir()) == [
        tmp_path / "var" / "example-uploads" / "mp-bench" / "example.zip"
    ]


# --- 8. A benchmark without a judge; named form errors -----------------------------------------


def test_a_benchmark_not_imported_says_what_to_do_and_form_errors_name_their_field(client, db):
    from django.contrib.auth.models import User

    from evaluation.models import Membership, Team

    Benchmark.objects.create(slug="bare", name="Bare", plugin="mp-bench")
    user = User.objects.create_user("u")
    team = Team.objects.create(name="T", slug="t")
    Membership.objects.create(team=team, user=user)
    client.force_login(user)
    page = client.get("/benchmarks/bare/submit/").content.decode()
    assert 'id="not-imported"' in page
    assert "python manage.py import_benchmark mp-bench PATH/TO/RELEASE" in page
    assert 'id="upload-form"' not in page  # no form with an empty judge list
    started = client.post("/benchmarks/bare/submit/start/", {"team": "t", "size": "10"})
    body = started.json()
    assert started.status_code == 400
    assert "System name: This field is required." in body["messages"]
    assert all(":" in message for message in body["messages"])


def test_one_team_means_no_empty_team_choice(client, mpbench_demo):
    from django.contrib.auth.models import User

    from evaluation.models import Membership, Team

    user = User.objects.create_user("u")
    Membership.objects.create(team=Team.objects.create(name="T", slug="t"), user=user)
    client.force_login(user)
    page = client.get("/benchmarks/mp-bench/submit/").content.decode()
    team_select = page[page.index('name="team"') :].split("</select>")[0]
    assert "---------" not in team_select and 'value="t" selected' in team_select
    assert 'id="upload-progress-text"></span>' in page  # no "0%" before anything happens
    assert "--allow-partial" not in page


# --- 13. The API schema ----------------------------------------------------------------------------


def test_the_schema_shows_the_create_body_the_board_parameters_and_the_docs_show_them(client, db):
    schema = json.loads(client.get("/api/schema/?format=json").content)
    create = schema["paths"]["/api/submissions/"]["post"]
    body = create["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][body.rsplit("/", 1)[1]]
    assert fields["properties"]["bundle"]["format"] == "binary"
    assert {"bundle", "benchmark", "system"} <= set(fields["required"])
    board = schema["paths"]["/api/benchmarks/{slug}/leaderboard/"]["get"]
    params = {p["name"]: p for p in board["parameters"]}
    for name in ("judge", "split", "sort", "group", "ci", "type", "arch", "open", "duplex", "q"):
        assert name in params, name
    assert set(params["group"]["schema"]["enum"]) == {"type", "none"}
    assert set(params["arch"]["schema"]["enum"]) == {"end-to-end", "cascaded"}
    assert set(create["responses"]) >= {"202", "200", "429"}
    state = schema["components"]["schemas"]["UploadState"]["properties"]
    assert {"url", "status", "report", "submission"} <= set(state)
    assert "/api/uploads/{id}/" in schema["paths"]
    docs = client.get("/api/docs/").content.decode()
    assert "Request body: <code>multipart/form-data</code>" in docs
    assert "<td><code>bundle</code> <strong>required</strong></td><td>file</td>" in docs


def test_a_wrong_judge_lists_the_valid_ones(client, mpbench_demo):
    from django.contrib.auth.models import User

    from evaluation.models import Membership, Team
    from leaderboard.accounts.services import api_token_create

    user = User.objects.create_user("u")
    Membership.objects.create(team=Team.objects.create(name="T", slug="t"), user=user)
    token = api_token_create(user=user, name="t")[1]
    response = client.post(
        "/api/submissions/",
        {"benchmark": "mp-bench", "system": "S", "judge": "nope", "bundle": io_file()},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400
    assert response.json()["error"] == (
        "benchmark mp-bench has no judge 'nope'; choose one of: official, offline"
    )
    assert response.json()["judges"] == ["offline", "official"] or set(
        response.json()["judges"]
    ) == {"official", "offline"}
    board = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=nope")
    assert board.status_code == 404 and "judges: official" in board.json()["detail"]


def io_file():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("run.zip", b"PK\x05\x06" + b"\0" * 18, "application/zip")


# --- 3. Charts: what the legend says, where the names go ---------------------------------------------


def test_chart_legends_say_paper_rows_have_no_interval(client, mpbench_demo, judge):
    figures = client.get("/benchmarks/mp-bench/charts.json").json()  # the official board
    for figure in figures["figures"]:
        notes = [t["name"] for t in figure["data"] if t.get("legendgroup") == "note"]
        assert notes == ["reported in a paper: no counts, so no 95% interval"]
        assert figure["layout"]["showlegend"] is True
    scatter = figures["figures"][0]
    # Axis ranges leave room for the names beside the outermost points.
    xs = [x for t in scatter["data"] if t.get("visible", True) is not False for x in t["x"] if x]
    assert scatter["layout"]["xaxis"]["range"][1] > max(xs)


def boxes(points, positions):
    found = []
    offsets = {name: (dx, dy) for name, dx, dy in LABEL_POSITIONS}
    for (x, y, text), where in zip(points, positions, strict=True):
        width = max(3, len(text)) * CHAR_WIDTH
        dx, dy = offsets[where]
        cx, cy = x + dx * width, y + dy * LABEL_HEIGHT * 1.4
        found.append((cx - width / 2, cy - LABEL_HEIGHT / 2, cx + width / 2, cy + LABEL_HEIGHT / 2))
    return found


def test_point_names_are_placed_apart_and_inside_the_plot():
    # The paper's discussion chart, as fractions of the plot (latency 0-8.3 s, accuracy -7 to
    # 64%): Moshi, PersonaPlex and Freeze-Omni sit within a few pixels of each other, and
    # Gemini-3.1 Live by the top-right corner, where a centred name would be cut off.
    def at(latency, accuracy):
        return latency / 8.3, (accuracy + 7) / 71

    points = [
        (*at(0.5, 1.56), "Moshi"),
        (*at(0.5, 0.0), "PersonaPlex"),
        (*at(1.0, 0.0), "Freeze-Omni"),
        (*at(2.1, 3.91), "DuplexCascade"),
        (*at(1.7, 42.19), "Covo-Audio"),
        (*at(2.3, 34.38), "GLM-4-Voice"),
        (*at(3.6, 39.06), "Ultravox"),
        (*at(6.0, 53.13), "GPT-Realtime"),
        (*at(6.5, 36.72), "Gemini-2.5 Live"),
        (*at(7.4, 57.03), "Gemini-3.1 Live"),
    ]
    placed = boxes(points, label_positions(points))
    for i, a in enumerate(placed):
        assert a[0] >= 0 and a[2] <= 1 and a[1] >= 0 and a[3] <= 1, (points[i], a)
        for b in placed[i + 1 :]:
            overlap = max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(
                0, min(a[3], b[3]) - max(a[1], b[1])
            )
            assert overlap == 0, (a, b)

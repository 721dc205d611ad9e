"""The leaderboard page, its JSON and CSV exports and charts: layout, sorting, filters, badges,
permalinks, Wilson intervals, and SQL queries that do not grow with the rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import plotly
import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.models import Benchmark, Judge, Score, Submission, System
from tests import factories
from tests.conftest import fresh, fresh_all
from tests.evaluation.test_stats import wilson_by_quadratic

# Every test sees the same rows: MP-Bench (its plug-in's demo release) with the paper's, and five
# scored under a second judge.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("shared_db", "shared_board")]

SPLITS = {"understanding": 543, "discussion": 128, "turnbased": 256}
SPK_TOTAL = 99


def mp_results(
    overall: int, spk: int, d_tt: int, d_app: int, t_tt: int, t_app: int, lat=(None, None, None)
) -> dict:
    """An MP-Bench results structure from correct counts, out of the real benchmark's split
    sizes (the board reads the counts and totals from the score, not the benchmark's tasks)."""
    return {
        "understanding": {
            "n": SPLITS["understanding"],
            "overall_acc": factories.rate(overall, SPLITS["understanding"]),
            "spk_name_acc": factories.rate(spk, SPK_TOTAL),
            "latency_s": lat[0],
        },
        "discussion": {
            "n": SPLITS["discussion"],
            "tt_acc": factories.rate(d_tt, SPLITS["discussion"]),
            "app_acc": factories.rate(d_app, SPLITS["discussion"]),
            "latency_s": lat[1],
        },
        "turnbased": {
            "n": SPLITS["turnbased"],
            "tt_acc": factories.rate(t_tt, SPLITS["turnbased"]),
            "app_acc": factories.rate(t_app, SPLITS["turnbased"]),
            "latency_s": lat[2],
        },
    }


def scored_row(
    benchmark: Benchmark,
    judge: Judge,
    name: str,
    results: dict,
    *,
    system_type: str = "realtime",
    team=None,
    published: bool = True,
    **system_fields,
) -> Submission:
    """A system with one submission that answered every task of ``benchmark``, scored under
    ``judge`` with ``results`` (tests/factories.py): its score alone, which is all a board
    reads, without the task results."""
    return factories.scored_submission(
        benchmark,
        system=name,
        results=results,
        judge=judge,
        team=team,
        published=published,
        row_group=system_type,
        system_fields=system_fields,
        task_rows=False,
    )


ROWS = {
    # name: (type, facets, counts (overall, spk, d_tt, d_app, t_tt, t_app), latencies)
    "Alpha": (
        "realtime",
        {"architecture": "end-to-end", "open_weights": True, "full_duplex": True},
        (300, 50, 120, 64, 130, 72),
        (1.2, 0.8, 1.0),
    ),
    "Beta": (
        "non-realtime",
        {
            "architecture": "cascaded",
            "open_weights": False,
            "full_duplex": False,
            "asr_model": "whisper-large-v3",
            "llm_model": "llama-3-70b",
            "tts_model": "xtts-v2",
        },
        (400, 90, 128, 100, 140, 139),
        (None, None, None),
    ),
    "Gamma": (
        "text-llm",
        {"architecture": "", "open_weights": True, "full_duplex": None},
        (450, 95, 128, 110, 250, 240),
        (None, None, None),
    ),
    "Delta": (
        "realtime",
        {"architecture": "cascaded", "open_weights": False, "full_duplex": True},
        (100, 20, 110, 30, 120, 100),
        (2.5, 3.1, 0.4),
    ),
    "Epsilon": (
        "realtime",
        {"architecture": "end-to-end", "open_weights": True, "full_duplex": False},
        (100, 40, 90, 70, 128, 128),
        (0.6, None, 5.2),
    ),
}


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def second_judge(benchmark: Benchmark) -> Judge:
    """A judge beside the official one, named "gpt" on the board."""
    return Judge.objects.create(
        benchmark=benchmark,
        slug="gpt",
        name="GPT judge",
        provider=Judge.Provider.OPENAI,
        models_by_kind={
            "understanding": "m",
            "speaker_name": "m",
            "discussion": "m",
            "turnbased": "m",
        },
    )


@pytest.fixture(scope="module")
def shared_board(shared_mpbench_demo):
    """A second judge and five systems scored under it, made once for the module (see
    shared_db); the official judge has only the paper's rows."""
    judge = second_judge(shared_mpbench_demo)
    made = {}
    for name, (system_type, facets, counts, latencies) in ROWS.items():
        made[name] = scored_row(
            shared_mpbench_demo,
            judge,
            name,
            mp_results(*counts, lat=latencies),
            system_type=system_type,
            **facets,
        )
    return judge, made


@pytest.fixture
def gpt_judge(db, shared_board) -> Judge:
    return fresh(shared_board[0])


@pytest.fixture
def board(db, shared_board):
    """The module's five scored systems, read afresh for this test."""
    cache.clear()
    return fresh_all(shared_board[1])


def api(client, query: str = "", judge: str = "gpt") -> dict:
    sep = "&" if query else ""
    response = client.get(f"/api/benchmarks/mp-bench/leaderboard/?judge={judge}{sep}{query}")
    assert response.status_code == 200, response.content
    return response.json()


def names(data: dict) -> list[str]:
    return [e["system"] for e in data["entries"]]


def value(name: str, key: str):
    """The number behind a column for one of ROWS, computed from the counts by hand."""
    _, _, counts, latencies = ROWS[name]
    totals = {
        "understanding.overall_acc": (counts[0], 543),
        "understanding.spk_name_acc": (counts[1], SPK_TOTAL),
        "discussion.tt_acc": (counts[2], 128),
        "discussion.app_acc": (counts[3], 128),
        "turnbased.tt_acc": (counts[4], 256),
        "turnbased.app_acc": (counts[5], 256),
    }
    if key in totals:
        k, n = totals[key]
        return round(100.0 * k / n, 2)
    return dict(
        zip(
            ["understanding.latency_s", "discussion.latency_s", "turnbased.latency_s"],
            latencies,
            strict=True,
        )
    )[key]


def rank_order() -> list[str]:
    """Table 3 order: overall accuracy, then discussion and turn-based appropriateness."""
    return sorted(
        ROWS,
        key=lambda n: (
            -value(n, "understanding.overall_acc"),
            -value(n, "discussion.app_acc"),
            -value(n, "turnbased.app_acc"),
            n,
        ),
    )


COLUMNS = [
    "understanding.overall_acc",
    "understanding.spk_name_acc",
    "understanding.latency_s",
    "discussion.tt_acc",
    "discussion.app_acc",
    "discussion.latency_s",
    "turnbased.tt_acc",
    "turnbased.app_acc",
    "turnbased.latency_s",
]


def test_default_board_groups_rows_by_type_and_ranks_by_table_3(client, board):
    data = api(client)
    # Text LLMs, then non-realtime, then realtime; grouped, rank is the Table 3 order within
    # each group.
    assert names(data) == ["Gamma", "Beta", "Alpha", "Epsilon", "Delta"]
    ranks = {e["system"]: e["rank"] for e in data["entries"]}
    expected = {}
    for group in ("text-llm", "non-realtime", "realtime"):
        members = [name for name in rank_order() if ROWS[name][0] == group]
        expected |= {name: i for i, name in enumerate(members, start=1)}
    assert ranks == expected
    # Delta and Epsilon tie on overall accuracy (100/543); discussion App Acc breaks the tie.
    assert ranks["Epsilon"] < ranks["Delta"]
    flat = api(client, "group=none")
    assert names(flat) == rank_order()
    # One list: the rank is the Table 3 order across all rows.
    assert {e["system"]: e["rank"] for e in flat["entries"]} == {
        name: i for i, name in enumerate(rank_order(), start=1)
    }
    assert data["judges"] == ["official", "gpt"] and data["judge"]["slug"] == "gpt"


@pytest.mark.parametrize("key", COLUMNS)
def test_every_column_sorts_both_ways_with_nulls_last(client, board, key):
    present = [n for n in ROWS if value(n, key) is not None]
    missing = sorted((n for n in ROWS if value(n, key) is None), key=rank_order().index)
    tie = rank_order().index
    ascending = sorted(present, key=lambda n: (value(n, key), tie(n))) + missing
    descending = sorted(present, key=lambda n: (-value(n, key), tie(n))) + missing
    assert names(api(client, f"group=none&sort={key}")) == ascending
    assert names(api(client, f"group=none&sort=-{key}")) == descending


def test_sort_by_name_type_and_rank(client, board):
    assert names(api(client, "group=none&sort=system")) == sorted(ROWS)
    assert names(api(client, "group=none&sort=-system")) == sorted(ROWS, reverse=True)
    assert names(api(client, "group=none&sort=-rank")) == rank_order()[::-1]
    by_type = names(api(client, "group=none&sort=system_type"))
    assert by_type[:2] == ["Gamma", "Beta"] and set(by_type[2:]) == {"Alpha", "Delta", "Epsilon"}
    assert names(api(client, "sort=-system_type"))[:3] == ["Alpha", "Epsilon", "Delta"]
    # Grouped, a column sort applies within each group.
    assert names(api(client, "sort=understanding.latency_s")) == [
        "Gamma",
        "Beta",
        "Epsilon",
        "Alpha",
        "Delta",
    ]


@pytest.mark.parametrize(
    "query,expected",
    [
        ("type=realtime", {"Alpha", "Delta", "Epsilon"}),
        ("type=text-llm", {"Gamma"}),
        ("arch=cascaded", {"Beta", "Delta"}),
        ("arch=end-to-end", {"Alpha", "Epsilon"}),
        ("open=yes", {"Alpha", "Gamma", "Epsilon"}),
        ("open=no", {"Beta", "Delta"}),
        ("duplex=yes", {"Alpha", "Delta"}),
        ("duplex=no", {"Beta", "Epsilon"}),
        ("type=realtime&open=yes&duplex=yes", {"Alpha"}),
        ("type=non-realtime&arch=end-to-end", set()),
    ],
)
def test_filters(client, board, query, expected):
    data = api(client, f"group=none&{query}")
    assert set(names(data)) == expected
    # Rank is the Table 3 order among the rows shown.
    assert sorted(e["rank"] for e in data["entries"]) == list(range(1, len(expected) + 1))
    page = client.get(f"/benchmarks/mp-bench/?judge=gpt&{query}").content.decode()
    for name in ROWS:
        assert (f'data-system="{name}"' in page) == (name in expected)


def test_filters_apply_to_paper_rows(client, mpbench_demo):
    everything = api(client, judge="official")
    assert len(everything["entries"]) == 14
    realtime = api(client, "type=realtime", judge="official")
    assert len(realtime["entries"]) == 10
    assert all(e["system_type"] == "realtime" for e in realtime["entries"])
    # The paper says nothing about weights: an open-weights filter leaves none of its rows.
    assert api(client, "open=yes", judge="official")["entries"] == []


def test_json_carries_wilson_intervals_and_facets(client, board):
    data = api(client)
    alpha = next(e for e in data["entries"] if e["system"] == "Alpha")
    low, high = wilson_by_quadratic(72, 256)
    assert alpha["intervals"]["turnbased.app_acc"] == {
        "low": round(100 * low, 2),
        "high": round(100 * high, 2),
    }
    assert alpha["intervals"]["turnbased.app_acc"] == {"low": 22.97, "high": 33.92}
    for key, (k, n) in {
        "understanding.overall_acc": (300, 543),
        "understanding.spk_name_acc": (50, 99),
        "discussion.app_acc": (64, 128),
    }.items():
        low, high = wilson_by_quadratic(k, n)
        assert alpha["intervals"][key]["low"] == pytest.approx(100 * low, abs=0.006)
        assert alpha["intervals"][key]["high"] == pytest.approx(100 * high, abs=0.006)
    assert set(alpha["intervals"]) == {c for c in COLUMNS if not c.endswith("latency_s")}
    assert alpha["facets"]["architecture"] == "end-to-end"
    assert alpha["facets"]["open_weights"] is True and alpha["facets"]["full_duplex"] is True
    assert alpha["system_id"] == board["Alpha"].system_id
    assert alpha["results"]["turnbased"]["app_acc"] == {"count": 72, "total": 256, "pct": 28.12}
    assert [c["better"] for c in data["columns"]] == [
        "lower" if c.endswith("latency_s") else "higher" for c in COLUMNS
    ]
    # Paper rows have no counts, hence no intervals.
    paper = api(client, judge="official")["entries"]
    assert all(v is None for e in paper for v in e["intervals"].values())


def test_page_layout_badges_chance_and_hover(client, board, mpbench_demo):
    alpha = board["Alpha"]
    alpha.is_verified = True
    alpha.save()
    board["Delta"].is_flagged = True
    board["Delta"].flag_reason = "latency measured on a different clock"
    board["Delta"].save()
    board["Beta"].is_partial = True
    board["Beta"].save()
    page = client.get("/benchmarks/mp-bench/?judge=gpt").content.decode()
    for text in (
        "Understanding",
        "Discussion",
        "Turn-based",
        "Overall Acc ↑",
        "Spk Name Acc ↑",
        "App Acc ↑",
        "Lat (s) ↓",
        "chance 33.3%",
        "chance 50.0%",
        "Text LLMs",
        "Non-realtime",
        "Realtime",
        "scored here",
        "verified by staff",
        "incomplete bundle",
        "flagged",
        "latency measured on a different clock",
        "judge: gpt",
    ):
        assert text in page, text
    assert page.count("verified by staff") == 1
    assert "private" not in page.split("<tbody>", 1)[1].split("</table>")[0].replace("private-", "")
    # Hover text: counts and the 95% Wilson interval of every accuracy.
    assert 'title="72/256 tasks; 95% Wilson interval 22.97–33.92%"' in page
    assert '<span class="ci"> [22.97–33.92]</span>' in page
    # Paper rows: no counts, no interval, and the hover says so.
    official = client.get("/benchmarks/mp-bench/").content.decode()
    assert "reported in the paper without counts: no interval" in official
    assert '<span class="ci">' not in official
    assert "judge: " not in official.split("<tbody>", 1)[1]


def test_interval_switch_is_part_of_the_state(client, board):
    page = client.get("/benchmarks/mp-bench/?judge=gpt&ci=1").content.decode()
    assert 'class="board show-ci"' in page
    assert 'id="show-ci" checked' in page
    plain = client.get("/benchmarks/mp-bench/?judge=gpt").content.decode()
    assert 'class="board"' in plain and 'show-ci"' not in plain.replace('id="show-ci"', "")


def _href(page: str, element_id: str) -> str:
    marker = f'id="{element_id}"'
    start = page.rindex("<a ", 0, page.index(marker))
    tag = page[start : page.index(">", start)]
    return tag.split('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")


def test_permalink_and_exports_keep_sort_and_filters(client, board):
    query = "judge=gpt&sort=-discussion.app_acc&type=realtime&open=yes&group=none&ci=1"
    page = client.get(f"/benchmarks/mp-bench/?{query}").content.decode()
    permalink = _href(page, "permalink")
    params = parse_qs(urlsplit(permalink).query)
    assert params == {
        "judge": ["gpt"],
        "sort": ["-discussion.app_acc"],
        "type": ["realtime"],
        "open": ["yes"],
        "group": ["none"],
        "ci": ["1"],
    }
    again = client.get(permalink).content.decode()
    shown = [n for n in ROWS if f'data-system="{n}"' in again]
    assert set(shown) == {"Alpha", "Epsilon"}
    assert again.index('data-system="Epsilon"') < again.index('data-system="Alpha"')  # 70 > 64

    json_rows = client.get(_href(page, "export-json")).json()
    assert names(json_rows) == ["Epsilon", "Alpha"]
    assert json_rows["sort"] == "-discussion.app_acc" and json_rows["group"] == "none"
    assert json_rows["filters"] == {
        "system_type": "realtime",
        "architecture": None,
        "open_weights": True,
        "full_duplex": None,
        "search": None,
        "input_modality": None,
        "output_modality": None,
        "contamination": None,
    }
    assert parse_qs(urlsplit(json_rows["permalink"]).query) == params

    response = client.get(_href(page, "export-csv"))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["system"] for r in rows] == ["Epsilon", "Alpha"]
    assert [int(r["rank"]) for r in rows] == [e["rank"] for e in json_rows["entries"]]
    alpha = rows[1]
    assert alpha["turnbased.app_acc"] == "28.12"
    assert (alpha["turnbased.app_acc.count"], alpha["turnbased.app_acc.total"]) == ("72", "256")
    assert (alpha["turnbased.app_acc.ci_low"], alpha["turnbased.app_acc.ci_high"]) == (
        "22.97",
        "33.92",
    )
    assert alpha["understanding.latency_s"] == "1.2" and alpha["scored_here"] == "yes"
    assert alpha["open_weights"] == "yes" and alpha["architecture"] == "end-to-end"

    # Column headers link to a sort that keeps every filter.
    header = page.split('data-sort="turnbased.latency_s"')[0].rsplit('href="', 1)[1]
    header_params = parse_qs(urlsplit(header.split('"')[0].replace("&amp;", "&")).query)
    assert header_params["sort"] == ["turnbased.latency_s"]  # lower latency first
    assert header_params["type"] == ["realtime"] and header_params["open"] == ["yes"]
    # The active column's link reverses it.
    active = page.split('data-sort="discussion.app_acc"')[0].rsplit('href="', 1)[1]
    assert "sort=discussion.app_acc" in active.split('"')[0]


def test_csv_without_filters_lists_the_same_rows_as_the_page_and_json(client, board):
    page = client.get("/benchmarks/mp-bench/?judge=gpt").content.decode()
    on_page = sorted(ROWS, key=lambda n: page.index(f'data-system="{n}"'))
    rows = list(csv.DictReader(io.StringIO(client.get(_href(page, "export-csv")).content.decode())))
    assert [r["system"] for r in rows] == on_page == names(api(client))
    assert [r["group"] for r in rows] == [
        "Text LLMs",
        "Non-realtime",
        "Realtime",
        "Realtime",
        "Realtime",
    ]


@pytest.mark.parametrize(
    "query,problem",
    [
        ("sort=latency", "sort: unknown column 'latency'"),
        ("type=robot", "type: unknown type 'robot'"),
        ("arch=hybrid", "arch: unknown architecture 'hybrid'"),
        ("open=maybe", "open: unknown value 'maybe'"),
        ("duplex=1", "duplex: unknown value '1'"),
        ("group=judge", "group: unknown grouping 'judge'"),
    ],
)
def test_bad_parameters_are_named(client, board, query, problem):
    for url in (
        f"/benchmarks/mp-bench/?{query}",
        f"/benchmarks/mp-bench/leaderboard.csv?{query}",
        f"/benchmarks/mp-bench/charts.json?{query}",
    ):
        response = client.get(url)
        assert response.status_code == 400 and problem in response.content.decode()
    response = client.get(f"/api/benchmarks/mp-bench/leaderboard/?{query}")
    assert response.status_code == 400 and problem in response.json()["detail"]
    assert client.get("/benchmarks/nope/").status_code == 404
    assert client.get("/benchmarks/mp-bench/leaderboard.csv?judge=nobody").status_code == 404


def test_judge_selector_appears_once_two_judges_have_scores(client, mpbench_demo, board):
    page = client.get("/benchmarks/mp-bench/").content.decode()
    assert '<select name="judge">' in page
    assert '<option value="gpt">GPT judge</option>' in page
    Score.objects.filter(judge__slug="gpt").delete()
    alone = client.get("/benchmarks/mp-bench/").content.decode()
    assert '<select name="judge">' not in alone


# --- SQL queries do not grow with the rows ---------------------------------------------------


def _add_rows(benchmark, judge, start: int, count: int) -> None:
    types = ["realtime", "non-realtime", "text-llm"]
    systems = System.objects.bulk_create(
        [
            System(
                name=f"Bulk {i:04d}",
                architecture=["end-to-end", "cascaded"][i % 2],
                open_weights=bool(i % 2),
                full_duplex=not i % 3,
            )
            for i in range(start, start + count)
        ]
    )
    submissions = Submission.objects.bulk_create(
        [
            Submission(
                benchmark=benchmark,
                system=system,
                judge=judge,
                row_group=types[int(system.name.split()[-1]) % 3],
                status=Submission.Status.SCORED,
                is_published=True,
            )
            for system in systems
        ]
    )
    Score.objects.bulk_create(
        [
            Score(
                submission=s,
                judge=judge,
                results=mp_results(
                    (i * 37) % 543,
                    i % 99,
                    i % 128,
                    (i * 7) % 128,
                    i % 256,
                    (i * 3) % 256,
                    lat=(round(0.1 * (i % 50), 1), None, 1.5),
                ),
            )
            for i, s in enumerate(submissions, start=start)
        ]
    )


URLS = [
    "/benchmarks/mp-bench/?judge=gpt&ci=1",
    "/benchmarks/mp-bench/?judge=gpt&sort=-turnbased.app_acc&open=yes",
    "/api/benchmarks/mp-bench/leaderboard/?judge=gpt",
    "/api/benchmarks/mp-bench/leaderboard/?judge=gpt&sort=understanding.latency_s&type=realtime",
    "/benchmarks/mp-bench/leaderboard.csv?judge=gpt",
    "/benchmarks/mp-bench/charts.json?judge=gpt",
    "/benchmarks/mp-bench/?judge=official",
]


def _queries(client, url: str) -> tuple[int, int]:
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(queries), response.content.count(b"Bulk ")


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("viewer", ["anonymous", "member", "staff"])
def test_queries_do_not_grow_with_rows(
    client, mpbench_demo, gpt_judge, url, viewer, django_assert_max_num_queries
):
    from evaluation.models import Membership, Team

    if viewer != "anonymous":
        user = User.objects.create_user(viewer, is_staff=viewer == "staff")
        team = Team.objects.create(name="T", slug="t")
        Membership.objects.create(team=team, user=user)
        client.force_login(user)
    _add_rows(mpbench_demo, gpt_judge, 0, 5)
    small, shown_small = _queries(client, url)
    _add_rows(mpbench_demo, gpt_judge, 5, 60)
    large, shown_large = _queries(client, url)
    if "official" not in url:
        assert shown_large > shown_small  # the second size really shows more rows
    assert large == small, f"{url}: {small} queries with 5 + 5 rows, {large} with 5 + 65"
    # 14: a page of the API counts its rows apart, as the board's first screen does, and the
    # human-calibrated numbers the viewer may see are read in one query.
    with django_assert_max_num_queries(14):
        client.get(url)


# --- Charts ----------------------------------------------------------------------------------


def test_chart_figures(client, board):
    cache.clear()
    figures = client.get("/benchmarks/mp-bench/charts.json?judge=gpt").json()
    assert figures["points"] == 5
    latency, splits = figures["figures"]
    # Only systems with a latency are placed; one point per system per split, Wilson error bars.
    traces = {t["name"]: t for t in latency["data"]}
    realtime_disc = traces["Realtime (Discussion)"]
    assert realtime_disc["text"] == ["Alpha", "Delta"]  # Epsilon has no discussion latency
    assert realtime_disc["x"] == [0.8, 3.1]
    assert realtime_disc["y"] == [
        value("Alpha", "discussion.app_acc"),
        value("Delta", "discussion.app_acc"),
    ]
    low, high = wilson_by_quadratic(64, 128)
    assert realtime_disc["error_y"]["array"][0] == pytest.approx(100 * high - 50.0, abs=0.006)
    assert realtime_disc["error_y"]["arrayminus"][0] == pytest.approx(50.0 - 100 * low, abs=0.006)
    turn = traces["Realtime (Turn-based)"]
    assert turn["text"] == ["Alpha", "Epsilon", "Delta"] and turn["visible"] is False
    # Understanding has no appropriateness accuracy: one button per split that has both.
    buttons = latency["layout"]["updatemenus"][0]["buttons"]
    assert [b["label"] for b in buttons] == ["Discussion", "Turn-based"]

    # One subplot per split (x axes x, x2, x3), its accuracies as grouped bars.
    bars = {
        (t.get("xaxis", "x"), t["name"]): t
        for t in splits["data"]
        if t.get("legendgroup") != "note"
    }
    # The legend says what the error bars are; with no paper row, nothing about paper rows.
    notes = [t["name"] for t in splits["data"] if t.get("legendgroup") == "note"]
    assert notes == ["scored here: bars are 95% intervals"]
    assert set(bars) == {
        ("x", "Overall Acc"),
        ("x", "Spk Name Acc"),
        ("x2", "T Acc"),
        ("x2", "App Acc"),
        ("x3", "T Acc"),
        ("x3", "App Acc"),
    }
    turn_app = bars[("x3", "App Acc")]
    assert turn_app["x"] == rank_order()
    assert turn_app["y"] == [value(n, "turnbased.app_acc") for n in rank_order()]
    low, high = wilson_by_quadratic(72, 256)
    alpha = rank_order().index("Alpha")
    assert turn_app["error_y"]["array"][alpha] == pytest.approx(100 * high - 28.12, abs=0.006)
    assert turn_app["error_y"]["arrayminus"][alpha] == pytest.approx(28.12 - 100 * low, abs=0.006)
    assert [s["text"] for s in splits["layout"]["annotations"][:3]] == [
        "Understanding",
        "Discussion",
        "Turn-based",
    ]
    chance = sorted(s["y0"] for s in splits["layout"]["shapes"])
    assert chance == [33.3, 50.0]
    texts = [a["text"] for a in splits["layout"]["annotations"]]
    assert "Spk Name Acc chance 33.3%" in texts and "T Acc chance 50.0%" in texts


def test_chart_cache_changes_when_scores_change(client, board, mpbench_demo, gpt_judge):
    cache.clear()
    url = "/benchmarks/mp-bench/charts.json?judge=gpt"
    first = client.get(url).json()
    with CaptureQueriesContext(connection) as cached:
        again = client.get(url).json()
    assert again == first
    with CaptureQueriesContext(connection) as fresh:
        cache.clear()
        client.get(url)
    assert len(cached) < len(fresh)

    scored_row(
        mpbench_demo,
        gpt_judge,
        "Zeta",
        mp_results(500, 98, 128, 120, 250, 250, lat=(0.5, 0.5, 0.5)),
    )
    assert client.get(url).json()["points"] == 6
    # A recomputed score (same rows, new numbers) shows at once too.
    score = Score.objects.get(submission__system__name="Zeta")
    score.results = mp_results(10, 1, 10, 10, 10, 10, lat=(9.0, 9.0, 9.0))
    score.save()
    scatter = client.get(url).json()["figures"][0]
    trace = next(t for t in scatter["data"] if "Zeta" in t["text"])
    assert trace["x"][trace["text"].index("Zeta")] == 9.0
    # Staff hiding an entry changes the public chart.
    Submission.objects.filter(system__name="Zeta").update(is_hidden=True)
    assert client.get(url).json()["points"] == 5


def test_plotly_js_is_served_from_the_installed_package(client):
    response = client.get(f"/assets/plotly-{plotly.__version__}.min.js")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert (
        "immutable" in response["Cache-Control"] and "max-age=31536000" in response["Cache-Control"]
    )
    body = b"".join(response.streaming_content)
    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert body == shipped.read_bytes()
    assert client.get("/assets/plotly-0.0.1.min.js").status_code == 404
    page = client.get("/benchmarks/nope/")
    assert page.status_code == 404


def test_page_points_at_the_local_plotly(client, board):
    page = client.get("/benchmarks/mp-bench/?judge=gpt").content.decode()
    assert f'data-plotly="/assets/plotly-{plotly.__version__}.min.js"' in page
    assert 'data-src="/benchmarks/mp-bench/charts.json?judge=gpt"' in page
    assert "cdn" not in page.lower()


# --- System page -----------------------------------------------------------------------------


def test_system_page(client, board, mpbench_demo, gpt_judge):
    beta = System.objects.get(name="Beta")
    beta.organization = "Beta Labs"
    beta.parameters = "70B"
    beta.license = "Apache-2.0"
    beta.paper_url = "https://example.org/beta.pdf"
    beta.code_url = "https://example.org/beta"
    beta.save()
    other = Benchmark.objects.create(slug="other-bench", name="Other Bench", plugin="mp-bench")
    other_judge = Judge.objects.create(
        benchmark=other, slug="offline", name="Off", provider="offline"
    )
    older = scored_row(other, other_judge, "Beta", mp_results(1, 1, 1, 1, 1, 1))
    page = client.get(f"/systems/{beta.pk}/").content.decode()
    for text in (
        "Beta Labs",
        "Non-realtime",
        "Cascaded",
        "ASR: whisper-large-v3",
        "LLM: llama-3-70b",
        "TTS: xtts-v2",
        "Open weights</th><td>no",
        "70B",
        "Apache-2.0",
        'href="https://example.org/beta.pdf"',
        'href="https://example.org/beta"',
        "MP-Bench",
        "Other Bench",
        f'href="/submissions/{board["Beta"].pk}/"',
        f'href="/submissions/{older.pk}/"',
        "73.66",  # 400/543
    ):
        assert text in page, text
    # Paper rows appear on their system's page too.
    moshi = System.objects.get(name="Moshi")
    moshi_page = client.get(f"/systems/{moshi.pk}/").content.decode()
    assert "reported in paper" in moshi_page and "28.12" in moshi_page
    # The leaderboard links each system name to its page.
    board_page = client.get("/benchmarks/mp-bench/?judge=gpt").content.decode()
    assert f'href="/systems/{beta.pk}/"' in board_page
    assert client.get("/systems/999999/").status_code == 404

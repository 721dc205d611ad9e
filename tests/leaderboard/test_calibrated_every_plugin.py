"""Human-calibrated numbers on the board, for every registered plug-in (the example one
included): the toggle appears only once a calibration study has written numbers under the
board's judge; the view shows the calibrated value and interval beside the judge's, the judge's
bias and n/N; ranked by the calibrated values, rank and rank range follow them (hand-chosen
numbers that reverse the judge's order); a row with too few labels says how many more it
needs; the JSON, the CSV, the submission page and the submission API carry the numbers; a cached
board shows a changed number to its next anonymous reader; and a private row's calibrated
numbers reach nobody who may not see the row.

The rows (evaluation.models.CalibratedScore) are written here directly, as the annotation app
writes them, with numbers chosen by hand, on scored rows the factories write (tests/factories.py).
The tests flush the database: a stored board changes when a change is announced, after its
transaction commits."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from evaluation.benchmarks import get_plugin, registry
from evaluation.board_state import _digest, board_changed
from evaluation.models import CalibratedScore, Membership, Score, Submission, Team
from tests import factories
from tests.conftest import every_plugin_board

pytestmark = pytest.mark.django_db(transaction=True)

SLUGS = [*sorted(registry()), "toy-bench"]
STUDY = "Calibration of the ninth wave"


def scored_rows(benchmark, count: int) -> list[Submission]:
    """``count`` published rows scored by the offline judge, every metric of the first at 80,
    of the next at 70, and so on."""
    return [
        factories.scored_submission(
            benchmark,
            system=f"System {n}",
            results=factories.plugin_results(
                benchmark.plugin, factories.every_metric(benchmark.plugin, 80 - 10 * n)
            ),
        )
        for n in range(count)
    ]


def calibrated_metric(plugin):
    """The metric to calibrate: the plug-in's first declared calibrated metric, else its first
    rate metric."""
    declared = [c.metric for c in plugin.calibrated_metrics]
    by_key = {m.key: m for m in plugin.metrics}
    if declared and declared[0] in by_key:
        return by_key[declared[0]]
    return next(m for m in plugin.metrics if m.type == "rate")


def stored_key(plugin, metric) -> str:
    """The key a calibration study writes a metric's rows under: the board column's, the
    first split's key first where the benchmark has splits (the board opens on it)."""
    return f"{plugin.splits[0].key}.{metric.key}" if plugin.splits else metric.key


def _rows(html: str) -> list[int]:
    """The submission ids of the board's rows, in order."""
    return [
        int(pk)
        for pk in re.findall(
            r'<tr class="[^"]*" data-system="[^"]*" '
            r'data-submission="(\d+)"',
            html,
        )
    ]


def _row(html: str, pk: int) -> str:
    match = re.search(rf'<tr [^>]*data-submission="{pk}">(.*?)</tr>', html, re.S)
    assert match, pk
    return match.group(1)


def judge_value(submission, judge, metric):
    """The judge's value of the metric for the submission, read from its stored results at
    the metric's path (the board's first split first)."""
    plugin = get_plugin(submission.benchmark.plugin)
    node = Score.objects.get(submission=submission, judge=judge).results
    for part in ((plugin.splits[0].key,) if plugin.splits else ()) + metric.path:
        node = node[part]
    return node


def _write(submission, judge, metric, **numbers) -> CalibratedScore:
    """A calibrated row as a study writes it: sampled from the judge's verdicts as they stand
    (judge_value is the judge's value unless given)."""
    defaults = {
        "study_id": 9,
        "study_name": STUDY,
        "population": 100,
        "labelled": 40,
        "labels_needed": 0,
        "judge_value": judge_value(submission, judge, metric),
        "value": None,
        "low": None,
        "high": None,
        "classical_value": None,
        "classical_low": None,
        "classical_high": None,
        "bias": None,
        "bias_low": None,
        "bias_high": None,
        "tuning": 0.5,
    }
    defaults.update(numbers)
    row, _ = CalibratedScore.objects.update_or_create(
        submission=submission,
        judge=judge,
        metric=stored_key(get_plugin(submission.benchmark.plugin), metric),
        defaults=defaults,
    )
    return row


def _text(value: float, metric) -> str:
    return f"{value:.{metric.decimals}f}"


@pytest.mark.parametrize("slug", SLUGS)
def test_calibrated_view_every_plugin(slug, settings, tmp_path):
    # The board state is kept for five minutes: only what is announced changes a stored page.
    settings.BOARD_STATE_SECONDS = 300
    cache.clear()
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="cal")
    scored_rows(benchmark, 3)
    metric = calibrated_metric(plugin)
    judge = benchmark.judges.get(slug="offline")
    client = Client()
    board = f"/benchmarks/{benchmark.slug}/"
    api = f"/api/benchmarks/{benchmark.slug}/leaderboard/"

    # No calibrated numbers: no toggle, and asking for the view is a clear 400.
    page = client.get(board + "?group=none")
    assert page.status_code == 200
    assert 'id="board-calibrated"' not in page.content.decode()
    body = client.get(api).json()
    assert body["calibrated_metrics"] == []
    assert all(e["calibrated"] == {} for e in body["entries"])
    refused = client.get(board + f"?calibrated={metric.key}")
    assert refused.status_code == 400
    assert "no metric of this board has human-calibrated numbers" in refused.content.decode()

    # Two scored rows of the board's default table, the judge's better one first.
    entries = [
        e for e in client.get(api + "?group=none").json()["entries"] if e["judge"] != "reported"
    ]
    assert len(entries) >= 2, slug
    first, second = (Submission.objects.get(pk=e["submission"]) for e in entries[:2])

    # The board read (and stored for anonymous readers) before the study writes.
    client.get(board)
    _write(
        first,
        judge,
        metric,
        value=30.0,
        low=20.0,
        high=40.0,
        classical_value=28.0,
        classical_low=15.0,
        classical_high=41.0,
        bias=4.5,
        bias_low=1.0,
        bias_high=8.0,
    )
    _write(
        second,
        judge,
        metric,
        value=70.0,
        low=60.0,
        high=80.0,
        bias=-25.0,
        bias_low=-30.0,
        bias_high=-20.0,
        labelled=25,
        population=80,
    )
    html = client.get(board).content.decode()
    assert 'id="board-calibrated"' in html, "the stored board was served after the study wrote"
    assert f'<option value="{metric.key}">' in html

    # The view: calibrated value and interval, bias with interval, n/N.
    view = board + f"?calibrated={metric.key}&group=none"
    html = client.get(view).content.decode()
    assert 'id="calibrated-group"' in html
    cells = _row(html, first.pk)
    assert (
        f'{_text(30.0, metric)} <span class="ci-cal">[{_text(20.0, metric)}–{_text(40.0, metric)}]'
        in cells
    )
    assert (
        f'+{_text(4.5, metric)} <span class="ci-cal">[{_text(1.0, metric)}–{_text(8.0, metric)}]'
        in cells
    )
    assert ">40/100<" in cells
    assert ">25/80<" in _row(html, second.pk)

    # JSON and CSV carry the numbers, documented names.
    body = client.get(api + f"?calibrated={metric.key}&group=none").json()
    assert body["calibrated_metrics"] == [metric.key]
    assert body["calibrated"] == metric.key and body["rank_by"] == "judge"
    shown = {e["submission"]: e for e in body["entries"]}
    assert shown[first.pk]["calibrated"][stored_key(plugin, metric)] == {
        "value": 30.0,
        "low": 20.0,
        "high": 40.0,
        "judge_value": judge_value(first, judge, metric),
        "classical_value": 28.0,
        "classical_low": 15.0,
        "classical_high": 41.0,
        "bias": 4.5,
        "bias_low": 1.0,
        "bias_high": 8.0,
        "labelled": 40,
        "population": 100,
        "labels_needed": 0,
        "tuning": 0.5,
        "stale": False,
    }
    table = list(
        csv.DictReader(io.StringIO(client.get(board + "leaderboard.csv").content.decode()))
    )
    by_id = {int(r["submission"]): r for r in table}
    column = next(
        c
        for c in body["columns"]
        if c["key"].split(".", 1)[-1] == metric.key or c["key"] == metric.key
    )["key"]
    assert by_id[first.pk][f"{column} (calibrated)"] == "30.0"
    assert by_id[first.pk][f"{column} (calibrated).low"] == "20.0"
    assert by_id[first.pk][f"{column} (calibrated).bias_high"] == "8.0"
    assert by_id[second.pk][f"{column} (calibrated).labelled"] == "25"
    assert by_id[second.pk][f"{column} (calibrated).labels_needed"] == "0"

    # Ranked by the calibrated values: the second row leads now, and the intervals (60–80
    # against 20–40) are apart, so both ranks are certain.
    ranked = view + "&rank_by=calibrated"
    if plugin.rank_keys:
        html = client.get(ranked).content.decode()
        order = _rows(html)
        assert order.index(second.pk) < order.index(first.pk)
        assert re.search(r'class="rank-number">1</span>.*?certain', _row(html, second.pk))
        assert 'class="rank-number">2</span>' in _row(html, first.pk)
        body = client.get(api + f"?calibrated={metric.key}&rank_by=calibrated&group=none").json()
        ranks = {e["submission"]: (e["rank"], e["rank_range"]) for e in body["entries"]}
        assert ranks[second.pk] == (1, [1, 1]) and ranks[first.pk] == (2, [2, 2])
        # Every other row has no calibrated value: unranked, after the ranked ones.
        others = [pk for pk in order if pk not in (first.pk, second.pk)]
        assert all(ranks[pk] == (None, None) for pk in others)
        assert order[:2] == [second.pk, first.pk]
    else:
        refused = client.get(ranked)
        assert refused.status_code == 400 and "ranks no system" in refused.content.decode()

    # Too few labels: the row says how many more it needs, and is ranked no more. The stored
    # board (read above) shows it at once.
    _write(second, judge, metric, labelled=3, population=80, labels_needed=7)
    html = client.get(view).content.decode()
    assert "needs 7 more labels" in _row(html, second.pk)
    if plugin.rank_keys:
        html = client.get(ranked).content.decode()
        order = _rows(html)
        assert order[0] == first.pk and order.index(second.pk) > 0
        assert 'class="rank-number">1</span>' in _row(html, first.pk)
        assert 'class="rank-number"' not in _row(html, second.pk)

    # A new number reaches the next anonymous reader of the stored board.
    _write(first, judge, metric, value=33.0, low=21.0, high=44.0)
    html = client.get(view).content.decode()
    assert (
        f'{_text(33.0, metric)} <span class="ci-cal">[{_text(21.0, metric)}–{_text(44.0, metric)}]'
        in _row(html, first.pk)
    )
    found = {e["submission"]: e for e in client.get(api).json()["entries"]}
    assert found[first.pk]["calibrated"][stored_key(plugin, metric)]["value"] == 33.0

    # The submission page and API: the numbers, the study named for staff only.
    page = client.get(f"/submissions/{first.pk}/").content.decode()
    assert 'id="calibrated-table"' in page and "a calibration study" in page and STUDY not in page
    assert "40 of 100" in page
    detail = client.get(f"/api/submissions/{first.pk}/").json()
    numbers = next(s for s in detail["scores"] if s["judge"] == "offline")["calibrated"][
        stored_key(plugin, metric)
    ]
    assert numbers["value"] == 33.0 and numbers["study"] == "a calibration study"
    staff = User.objects.create_user("staffer", password="pw-staff-1234", is_staff=True)
    insider = Client()
    insider.force_login(staff)
    assert STUDY in insider.get(f"/submissions/{first.pk}/").content.decode()
    detail = insider.get(f"/api/submissions/{first.pk}/").json()
    numbers = next(s for s in detail["scores"] if s["judge"] == "offline")["calibrated"][
        stored_key(plugin, metric)
    ]
    assert numbers["study"] == STUDY

    # Removing the numbers removes the view from the stored board.
    CalibratedScore.objects.filter(submission__benchmark=benchmark).delete()
    assert 'id="board-calibrated"' not in client.get(board).content.decode()
    assert client.get(view).status_code == 400


@pytest.mark.parametrize("slug", SLUGS)
def test_numbers_sampled_before_a_rescore_that_moved_the_judge_are_marked_stale(
    slug, settings, tmp_path
):
    cache.clear()
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="stale")
    (submission,) = scored_rows(benchmark, 1)
    metric = calibrated_metric(plugin)
    judge = benchmark.judges.get(slug="offline")
    key = stored_key(plugin, metric)
    sampled = judge_value(submission, judge, metric)
    _write(
        submission, judge, metric, value=sampled - 1, low=sampled - 3, high=sampled + 1, bias=1.0
    )
    client = Client()
    api = f"/api/benchmarks/{benchmark.slug}/leaderboard/?calibrated={metric.key}&rows=all"

    def shown() -> dict:
        entries = client.get(api).json()["entries"]
        return next(e for e in entries if e["submission"] == submission.pk)["calibrated"][key]

    assert shown()["stale"] is False and shown()["value"] == sampled - 1

    # The judge scores the submission again and its value moves by a whole point: the study's
    # labels calibrate verdicts that are no longer the board's.
    score = Score.objects.get(submission=submission, judge=judge)
    node = score.results
    path = ((plugin.splits[0].key,) if plugin.splits else ()) + metric.path
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = sampled + 1
    score.save()
    board_changed(submission_id=submission.pk)
    found = shown()
    assert found["stale"] is True
    assert found["value"] is None and found["bias"] is None
    assert found["classical_value"] is None or isinstance(found["classical_value"], float)
    html = client.get(f"/benchmarks/{benchmark.slug}/?calibrated={metric.key}").content.decode()
    assert "judge re-scored since" in _row(html, submission.pk)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "judge re-scored since the study sampled" in page
    detail = client.get(f"/api/submissions/{submission.pk}/").json()
    numbers = next(s for s in detail["scores"] if s["judge"] == "offline")["calibrated"][key]
    assert numbers["stale"] is True and numbers["value"] is None


@pytest.mark.parametrize("slug", SLUGS)
def test_a_private_rows_calibrated_numbers_stay_private(slug, settings, tmp_path):
    settings.BOARD_STATE_SECONDS = 300
    cache.clear()
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="calpriv")
    made = scored_rows(benchmark, 2)
    metric = calibrated_metric(plugin)
    judge = benchmark.judges.get(slug="offline")
    team = Team.objects.create(slug="quill", name="Quill")
    owner = User.objects.create_user("owner", password="pw-owner-1234")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    outsider = User.objects.create_user("outsider", password="pw-outsider-1234")
    secret = made[0]
    _write(secret, judge, metric, value=12.75, low=3.5, high=21.25)
    Submission.objects.filter(pk=secret.pk).update(team=team, is_published=False)
    board_changed(submission_id=secret.pk)
    board = f"/benchmarks/{benchmark.slug}/"
    api = f"/api/benchmarks/{benchmark.slug}/leaderboard/"

    anonymous, rival, member = Client(), Client(), Client()
    rival.force_login(outsider)
    member.force_login(owner)
    for reader in (anonymous, rival):
        # The only calibrated numbers are on a row the reader may not see: no toggle at all.
        assert 'id="board-calibrated"' not in reader.get(board).content.decode()
        assert reader.get(board + f"?calibrated={metric.key}").status_code == 400
        body = reader.get(api + "?rows=all").json()
        assert body["calibrated_metrics"] == []
        assert secret.pk not in {e["submission"] for e in body["entries"]}
        text = reader.get(board + "leaderboard.csv").content.decode()
        assert "12.75" not in text and "21.25" not in text
        assert reader.get(f"/submissions/{secret.pk}/").status_code == 404
        assert reader.get(f"/api/submissions/{secret.pk}/").status_code == 404
    body = member.get(api + f"?calibrated={metric.key}&rows=all").json()
    mine = {e["submission"]: e for e in body["entries"]}
    assert mine[secret.pk]["calibrated"][stored_key(plugin, metric)]["value"] == 12.75
    assert 'id="board-calibrated"' in member.get(board).content.decode()


def test_the_board_state_digest_counts_calibrated_scores(settings, tmp_path):
    """A calibrated number changed without any signal (a bulk update) still changes the board
    state once its few seconds are up: the digest reads the calibrated scores."""
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="caldigest")
    (scored,) = scored_rows(benchmark, 1)
    judge = benchmark.judges.get(slug="offline")
    before = _digest(benchmark.slug)
    row = _write(scored, judge, calibrated_metric(plugin), value=30.0, low=20.0, high=40.0)
    written = _digest(benchmark.slug)
    assert written != before
    CalibratedScore.objects.filter(pk=row.pk).update(value=31.0)
    # The same row count and ids: only its time of computation says it changed.
    CalibratedScore.objects.filter(pk=row.pk).update(computed_at=row.computed_at.replace(year=2031))
    assert _digest(benchmark.slug) != written

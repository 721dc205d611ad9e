"""The figures command on a small invented set: it judges a submission through a slow local
judge, times the engine's aggregation against the plain pass, checks their APR and ARS agree,
and leaves nothing behind."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from evaluation.models import Benchmark, Judgment, Submission

pytestmark = pytest.mark.django_db(transaction=True)

NUMBER = r"(\d+(?:\.\d+)?)"


def test_bench_command_reports_and_cleans_up():
    out = io.StringIO()
    call_command(
        "bench_audiomc",
        "--size",
        "small",
        "--repeat",
        "1",
        "--judge-delay",
        "0.02",
        "--concurrency",
        "4",
        stdout=out,
    )
    text = out.getvalue()
    # The small set: 12 tasks, 44 rubric items, one call per item.
    assert "dataset: 12 tasks, 44 rubric items imported" in text
    judge = re.search(
        rf"judge: (\d+) calls at 20 ms, concurrency 4: {NUMBER} s against the ideal {NUMBER} s "
        rf"= {NUMBER}x",
        text,
    )
    assert judge, text
    calls, wall, ideal, ratio = judge.groups()
    assert int(calls) == 44 and float(ideal) == pytest.approx(44 * 0.02 / 4, abs=0.01)
    assert float(wall) > 0 and float(ratio) > 0
    engine = re.search(
        rf"aggregation, engine .*: {NUMBER} s, peak traced memory {NUMBER} MiB", text
    )
    plain = re.search(
        rf"aggregation, plain pass .*: {NUMBER} s, peak traced memory {NUMBER} MiB", text
    )
    ratios = re.search(rf"aggregation ratio: wall {NUMBER}x, memory {NUMBER}x", text)
    assert engine and plain and ratios, text
    assert all(float(value) > 0 for value in (*engine.groups(), *plain.groups(), *ratios.groups()))
    assert "same APR/ARS overall and per axis: yes" in text
    assert re.search(rf"results: 12 tasks, 44 items, APR {NUMBER}% .*ARS {NUMBER}%", text)
    assert re.search(rf"whole pipeline: engine {NUMBER} s.*same APR/ARS values: yes", text)
    assert not Benchmark.objects.filter(slug="bench-audio-multichallenge").exists()
    assert not Submission.objects.exists() and not Judgment.objects.exists()

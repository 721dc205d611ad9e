"""The figures command on a small invented release: it scores the same upload through the
engine and the plain pass, checks they agree, times a slow judge, and leaves nothing behind."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from evaluation.models import Benchmark, Judgment, Submission

from .conftest import CHECKOUT_DIR

pytestmark = pytest.mark.django_db(transaction=True)


def test_bench_command_reports_and_cleans_up(stand_in_checkout):
    out = io.StringIO()
    call_command(
        "bench_msibench",
        "--size",
        "small",
        "--repeat",
        "1",
        "--judge-delay",
        "0.02",
        "--concurrency",
        "4",
        "--templates",
        str(stand_in_checkout / CHECKOUT_DIR),
        stdout=out,
    )
    text = out.getvalue()
    assert "same numbers: yes" in text
    assert re.search(r"engine stages: validate [\d.]+ s, store .*aggregate [\d.]+ s", text)
    # The small release: 24 base cases; the weak upload leaves 20 pairs to judge.
    judged = re.search(r"(\d+) judged pairs", text)
    calls = re.search(r"judge: (\d+) calls at 20 ms, concurrency 4: ([\d.]+) s", text)
    assert judged and calls and calls.group(1) == judged.group(1)
    assert not Benchmark.objects.filter(slug="bench-msi-bench").exists()
    assert not Submission.objects.exists() and not Judgment.objects.exists()

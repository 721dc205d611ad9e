"""Every benchmark's About page has a Methods section: per metric, the interval, the test a
comparison uses, the minimum n and the unit resampled, built by the core from the plug-in's
declarations (every registered plug-in, and the example one)."""

import html
import re

import pytest

from evaluation.benchmarks import registry
from evaluation.models import Benchmark

pytestmark = pytest.mark.django_db

SLUGS = [*sorted(registry()), "toy-bench"]


@pytest.mark.parametrize("slug", SLUGS)
def test_about_page_states_each_metrics_methods(client, settings, slug):
    if slug == "toy-bench":
        settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    plugin = registry()[slug]
    Benchmark.objects.create(slug=f"{slug}-about", name=plugin.name, plugin=slug)
    page = client.get(f"/benchmarks/{slug}-about/about/").content.decode()
    section = page.split('<section id="methods">', 1)[1].split("</section>", 1)[0]
    rows = {
        key: [
            html.unescape(re.sub(r"<[^>]+>", "", cell))
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)
        ]
        for key, row in re.findall(r'<tr data-key="([^"]+)">(.*?)</tr>', section)
    }
    assert set(rows) == {metric.key for metric in plugin.metrics}
    assert "below 6 tasks" in html.unescape(section)
    for metric in plugin.metrics:
        _, _, interval, test, minimum, resampled = rows[metric.key]
        if metric.interval == "wilson":
            z = "1.959964" if plugin.wilson_z == 1.959963984540054 else f"{plugin.wilson_z:g}"
            assert interval.startswith("95% Wilson score interval") and f"z = {z}" in interval
            assert metric.units in interval
            if metric.nested_in:
                assert "as independent" in interval
        elif metric.interval == "bootstrap":
            assert "bootstrap" in interval and minimum.startswith("interval: 6 tasks")
        else:
            assert interval == "none"
        if metric.type in ("count", "number"):
            # Reported, never compared: a p-value says it is one, any other number so.
            assert test.startswith("none") and minimum == "–"
            assert ("p-value" if metric.significant else "reported, not compared") in test
        elif metric.type == "rate" and not metric.nested_in:
            assert test.startswith("exact two-sided McNemar")
            assert minimum.endswith("test and interval of a difference: 6 tasks")
        elif not metric.significant:
            assert test.startswith("two-sided sign-flip permutation test over tasks")
            if metric.nested_in:
                assert metric.nested_in in test and metric.nested_in in resampled


def test_msi_bench_declares_its_z_and_nested_atoms(client):
    plugin = registry()["msi-bench"]
    assert plugin.wilson_z == 1.96
    ars = plugin.metric("ars")
    assert (ars.units, ars.nested_in) == ("atoms", "cases")

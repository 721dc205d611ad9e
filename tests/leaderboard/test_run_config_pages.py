"""A submission's run configuration and contamination disclosure, for every registered plug-in
(the toy plug-in included): shown on its page and on its system's page (whose cascade reads the
components the configuration names when the system's own fields are empty), set side by side
on the compare page with the fields that differ marked, and documented on the About page. Once
the submission is shown anonymously, a visitor sees none of it there, while its team still
does: every page asks the core's redaction (evaluation.identity)."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from evaluation.benchmarks import registry
from evaluation.benchmarks.base import BenchmarkPlugin
from evaluation.models import Membership, Submission
from evaluation.run_config import FIELDS
from tests import factories
from tests.conftest import every_plugin_board

pytestmark = pytest.mark.django_db

SLUGS = [*sorted(registry()), "toy-bench"]
CONFIG = {
    "model": "quartz-voice-7b",
    "revision": "r2026-03",
    "decoding": {"temperature": 0.2, "seed": 7},
    "components": {"asr": "quartz-asr-2", "llm": "quartz-lm-7b", "tts": "quartz-tts-1"},
    "input_modality": "audio",
    "output_modality": "audio",
    "hardware": "2x L4",
}
NOTE = "trained on a crawl that may hold the dev set"


def text_of(response) -> str:
    """The page's text as a reader sees it: tags dropped, entities read, spaces collapsed."""
    assert response.status_code == 200, response.status_code
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def compares(plugin) -> bool:
    kind = type(plugin)
    return (
        kind.metric_contributions is not BenchmarkPlugin.metric_contributions
        or kind.task_contributions is not BenchmarkPlugin.task_contributions
    )


@pytest.fixture
def board(request, settings, demo_files):
    folder = demo_files(request.param)
    benchmark, plugin = every_plugin_board(request.param, settings, folder, name="config")
    team = factories.team("Quartz Lab", slug="quartz")
    owner = factories.user("owner", password="pw-owner-1234")
    factories.team_join(team, owner, role=Membership.Role.OWNER)

    def scored(name: str, n: int, **fields) -> Submission:
        return factories.scored_submission(
            benchmark,
            system=name,
            results=factories.plugin_results(
                benchmark.plugin, factories.every_metric(benchmark.plugin, 60 - 10 * n)
            ),
            contributions=factories.every_task_contributions(
                benchmark, lambda place: (place + n) % 2 == 0
            ),
            **fields,
        )

    configured = scored(
        "System A", 0, team=team, run_config=CONFIG, contamination="yes", contamination_note=NOTE
    )
    other = scored(
        "System B",
        1,
        run_config={"model": "slate-voice-3b", "hardware": "2x L4"},
        contamination="no",
    )
    return benchmark, plugin, configured, other, owner


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_run_configuration_on_the_submission_system_and_compare_pages(board):
    benchmark, plugin, configured, other, owner = board
    visitor = Client()

    page = text_of(visitor.get(f"/submissions/{configured.pk}/"))
    assert "Run configuration" in page
    for shown in (
        "Model quartz-voice-7b",
        "Revision r2026-03",
        "Decoding seed: 7, temperature: 0.2",  # in key order, on every database
        "Components ASR: quartz-asr-2, LLM: quartz-lm-7b, TTS: quartz-tts-1",
        "Input audio",
        "Hardware 2x L4",
        f"Benchmark data in training Saw the benchmark's data in training: {NOTE}",
    ):
        assert shown in page, shown

    system = text_of(visitor.get(f"/systems/{configured.system_id}/"))
    assert "ASR: quartz-asr-2" in system and "LLM: quartz-lm-7b" in system
    assert "TTS: quartz-tts-1" in system
    assert "Run configurations" in system and "Model quartz-voice-7b" in system

    if compares(plugin):
        pair = f"a={configured.pk}&b={other.pk}"
        compared = text_of(visitor.get(f"/benchmarks/{benchmark.slug}/compare/?{pair}"))
        assert "Model differs quartz-voice-7b slate-voice-3b" in compared
        # The same hardware on both sides is not marked.
        assert "Hardware 2x L4 2x L4" in compared
        assert (
            "Benchmark data in training differs Saw the benchmark's data in training "
            "Did not see the benchmark's data in training"
        ) in compared

    # Two runs of one system under different configurations: the board's badge opens the
    # system page where they are set out.
    Submission.objects.filter(pk=other.pk).update(system_id=configured.system_id)
    board_page = Client().get(f"/benchmarks/{benchmark.slug}/").content.decode()
    assert f'href="/systems/{configured.system_id}/#run-configs"' in board_page
    assert "configurations differ" in board_page
    both = visitor.get(f"/systems/{configured.system_id}/").content.decode()
    assert f'id="run-config-{configured.pk}"' in both and f'id="run-config-{other.pk}"' in both
    Submission.objects.filter(pk=other.pk).update(system_id=other.system_id)

    # Shown anonymously: a visitor reads none of it; its team still does.
    Submission.objects.filter(pk=configured.pk).update(is_anonymous=True)
    hidden_pages = [f"/submissions/{configured.pk}/"]
    if compares(plugin):
        hidden_pages.append(f"/benchmarks/{benchmark.slug}/compare/?a={configured.pk}&b={other.pk}")
    for address in hidden_pages:
        shown = visitor.get(address).content.decode()
        assert not [value for value in ("quartz", NOTE) if value in shown], address
    assert "Hidden while the submission is shown anonymously" in text_of(
        visitor.get(f"/submissions/{configured.pk}/")
    )
    assert visitor.get(f"/systems/{configured.system_id}/").status_code == 404
    team = Client()
    team.force_login(owner)
    assert "Model quartz-voice-7b" in text_of(team.get(f"/submissions/{configured.pk}/"))
    assert "TTS: quartz-tts-1" in text_of(team.get(f"/systems/{configured.system_id}/"))


@pytest.mark.parametrize("slug", SLUGS)
def test_every_about_page_documents_the_run_manifest_fields(slug, client, settings, demo_files):
    benchmark, _ = every_plugin_board(slug, settings, demo_files(slug), name="manifest")
    page = client.get(f"/benchmarks/{benchmark.slug}/about/").content.decode()
    documented = html.unescape(page[page.index('id="manifest-run-config"') :].split("</ul>")[0])
    for field in (*FIELDS, "run_config", "contamination", "saw_benchmark_data"):
        assert f"<code>{field}</code>" in documented or f'"{field}"' in documented, field

"""MSI-Bench's official judge calls OpenRouter (the paper's endpoint) as an OpenAI-compatible
provider: its calls carry OPENROUTER_API_KEY, never the OpenAI key."""

import io

import pytest
from django.core.management import call_command

from evaluation.models import Judge
from evaluation.services.judging import judge_client

pytestmark = pytest.mark.django_db


def test_the_official_judge_carries_the_openrouter_key(settings, release_dir, stand_in_checkout):
    settings.JUDGE_API_KEYS = {"OPENAI_API_KEY": "sk-openai", "OPENROUTER_API_KEY": "sk-or"}
    settings.OPENAI_API_KEY = "sk-openai"  # where the site read it before keys went by host
    call_command(
        "import_benchmark",
        "msi-bench",
        str(release_dir),
        "--templates",
        str(stand_in_checkout),
        stdout=io.StringIO(),
    )
    judge = Judge.objects.get(benchmark__slug="msi-bench", slug="official")
    assert (judge.provider, judge.base_url) == ("openai", "https://openrouter.ai/api/v1")
    client = judge_client(judge)
    try:
        assert client.http.headers["Authorization"] == "Bearer sk-or"
    finally:
        client.close()

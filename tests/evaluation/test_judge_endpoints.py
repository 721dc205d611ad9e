"""Where judges may call and which API key each call carries, on the toy benchmark
(tests/toyplugin) against the local judge server: a key goes only to the host named for it, a
judge cannot be added at a host the site does not allow (staff page, admin, service), and a
worker does not call a judge whose host was taken off the list after it was added."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from evaluation.models import Judge, Judgment, Submission
from evaluation.services import submission_create
from evaluation.services.judging import judge_client
from leaderboard.judges import JudgeInvalid, judge_create
from tests.conftest import completion
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)

# Every key the site holds, each a different value, so a header names the key it carries.
KEYS = {
    "OPENAI_API_KEY": "sk-openai",
    "OPENROUTER_API_KEY": "sk-openrouter",
    "GEMINI_API_KEY": "g-gemini",
    "ANTHROPIC_API_KEY": "sk-ant",
}
INTERNAL = "http://10.0.0.7:8080/v1"  # a host inside the site's network, on no allow-list


@pytest.fixture
def keys(settings):
    settings.JUDGE_API_KEYS = dict(KEYS)
    # Where the site read them before keys were chosen by host.
    settings.OPENAI_API_KEY = KEYS["OPENAI_API_KEY"]
    settings.GEMINI_API_KEY = KEYS["GEMINI_API_KEY"]
    settings.ANTHROPIC_API_KEY = KEYS["ANTHROPIC_API_KEY"]
    return settings


@pytest.fixture
def toy_bench(eager, settings, tmp_path, judge_server):
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    settings.JUDGE_MAX_ATTEMPTS = 1
    toy.write_release(tmp_path / "release")
    call_command("import_benchmark", "toy-bench", str(tmp_path / "release"), stdout=io.StringIO())
    judge = Judge.objects.get(benchmark__slug="toy-bench", is_official=True)
    Judge.objects.filter(pk=judge.pk).update(
        base_url=judge_server.url, price_input_per_mtok=0, price_output_per_mtok=0
    )
    judge_server.responder = lambda body, call: (200, {}, completion(json.dumps({"score": 1.0})))
    judge.refresh_from_db()
    return judge


def submit(judge, tmp_path, name="Toy") -> Submission:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps({"id": "q1", "answer": "It is 2"}) + "\n")
    submission = submission_create(
        benchmark=judge.benchmark,
        bundle_path=path,
        system_name=name,
        judge=judge,
        allow_partial=True,
    )
    submission.refresh_from_db()
    return submission


def headers_of(provider: str, base_url: str) -> dict[str, str]:
    client = judge_client(Judge(provider=provider, base_url=base_url, models_by_kind={}))
    try:
        return {k.lower(): v for k, v in client.http.headers.items()}
    finally:
        client.close()


# --- Keys -----------------------------------------------------------------------------------


def test_each_provider_host_gets_its_own_key_and_no_other(keys):
    openai = headers_of("openai", "https://api.openai.com/v1")
    assert openai["authorization"] == "Bearer sk-openai"
    # MSI-Bench's official judge: provider openai, OpenRouter's endpoint.
    openrouter = headers_of("openai", "https://openrouter.ai/api/v1")
    assert openrouter["authorization"] == "Bearer sk-openrouter"
    gemini = headers_of("gemini", "https://generativelanguage.googleapis.com/v1beta")
    assert gemini["x-goog-api-key"] == "g-gemini"
    anthropic = headers_of("anthropic", "https://api.anthropic.com/v1")
    assert anthropic["x-api-key"] == "sk-ant"
    # A provider's client at another provider's host carries that host's key, not its own.
    assert headers_of("anthropic", "https://api.openai.com/v1")["x-api-key"] == "sk-openai"


def test_a_host_named_for_no_key_gets_none(keys, judge_server, toy_bench, tmp_path):
    run = submit(toy_bench, tmp_path)
    assert run.status == "scored", run.error
    assert len(judge_server.requests) == 2
    # The local server is an allowed host, but no key is named for it.
    assert [r["_auth"] for r in judge_server.requests] == [None, None]


def test_the_operator_names_a_key_for_another_host(keys, judge_server, toy_bench, tmp_path):
    keys.JUDGE_API_KEY_BY_HOST = {**keys.JUDGE_API_KEY_BY_HOST, "127.0.0.1": "OPENROUTER_API_KEY"}
    run = submit(toy_bench, tmp_path)
    assert run.status == "scored", run.error
    assert [r["_auth"] for r in judge_server.requests] == ["Bearer sk-openrouter"] * 2


# --- Adding a judge -------------------------------------------------------------------------


def test_the_service_refuses_a_judge_at_a_host_not_allowed(toy_bench):
    with pytest.raises(JudgeInvalid) as refused:
        judge_create(
            benchmark=toy_bench.benchmark,
            slug="inside",
            name="Inside",
            provider="openai",
            models_by_kind={"grade": "m"},
            base_url=INTERNAL,
        )
    message = str(refused.value)
    assert "judges may not call 10.0.0.7" in message
    assert "FLOORBOARD_JUDGE_HOSTS" in message and "api.openai.com" in message
    with pytest.raises(JudgeInvalid, match="not an http:// or https:// address"):
        judge_create(
            benchmark=toy_bench.benchmark,
            slug="file",
            name="File",
            provider="openai",
            models_by_kind={"grade": "m"},
            base_url="file:///etc/passwd",
        )
    assert not Judge.objects.filter(slug__in=["inside", "file"]).exists()


def test_the_service_refuses_the_providers_default_once_its_host_is_off_the_list(
    toy_bench, settings
):
    settings.JUDGE_HOSTS = ["127.0.0.1"]
    with pytest.raises(JudgeInvalid, match="judges may not call api.anthropic.com"):
        judge_create(
            benchmark=toy_bench.benchmark,
            slug="claude",
            name="Claude",
            provider="anthropic",
            models_by_kind={"grade": "m"},
        )
    # The offline judge calls nothing: no host to allow.
    offline = judge_create(
        benchmark=toy_bench.benchmark,
        slug="offline-2",
        name="Offline",
        provider="offline",
        models_by_kind={},
    )
    assert offline.pk is not None


def test_the_staff_page_refuses_a_judge_at_a_host_not_allowed(client, toy_bench):
    client.force_login(User.objects.create_user("sam", password="pw", is_staff=True))
    manage = "/benchmarks/toy-bench/judges/manage/"
    form = {
        "slug": "inside",
        "name": "Inside",
        "provider": "openai",
        "model_grade": "m",
        "base_url": "http://169.254.169.254/latest",
    }
    refused = client.post(manage, form)
    assert refused.status_code == 400
    assert "judges may not call 169.254.169.254" in refused.content.decode()
    assert not Judge.objects.filter(slug="inside").exists()
    # A subdomain trick is no way round it.
    form["base_url"] = "https://api.openai.com.example.net/v1"
    refused = client.post(manage, form)
    assert refused.status_code == 400
    assert "judges may not call api.openai.com.example.net" in refused.content.decode()
    form["base_url"] = "https://openrouter.ai/api/v1"
    assert client.post(manage, form).status_code == 302
    assert Judge.objects.get(slug="inside").base_url == "https://openrouter.ai/api/v1"


def test_the_admin_refuses_a_judge_at_a_host_not_allowed(client, toy_bench):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    form = {
        "benchmark": toy_bench.benchmark_id,
        "slug": "inside",
        "name": "Inside",
        "provider": "openai",
        "models_by_kind": '{"grade": "m"}',
        "base_url": INTERNAL,
        "temperature": "0",
        "top_p": "1",
        "max_completion_tokens": "4096",
    }
    refused = client.post("/admin/evaluation/judge/add/", form)
    assert refused.status_code == 200  # the form again, with its errors
    assert "judges may not call 10.0.0.7" in refused.content.decode()
    assert not Judge.objects.filter(slug="inside").exists()
    form["base_url"] = ""  # the provider's default: api.openai.com
    assert client.post("/admin/evaluation/judge/add/", form).status_code == 302
    assert Judge.objects.filter(slug="inside").exists()


# --- Calling --------------------------------------------------------------------------------


def test_a_worker_does_not_call_a_host_taken_off_the_list(
    keys, judge_server, toy_bench, tmp_path, settings
):
    # Added while loopback was allowed; the operator has since taken it off.
    settings.JUDGE_HOSTS = ["api.openai.com"]
    settings.FAILED_RETRY_ATTEMPTS = 0
    run = submit(toy_bench, tmp_path)
    assert judge_server.requests == []
    judgments = Judgment.objects.filter(judge_identity__startswith="openai@http://127.0.0.1")
    assert judgments.count() == 2
    for judgment in judgments:
        assert judgment.status == "failed"
        assert judgment.attempts == 0
        assert judgment.error.startswith("Not called: judges may not call 127.0.0.1")
        assert "FLOORBOARD_JUDGE_HOSTS" in judgment.error
    assert run.status == "scored"
    assert run.scores.get(judge=toy_bench).judgments_failed == 2


def test_a_key_never_goes_over_plain_http_to_another_machine(settings):
    from evaluation.judge_endpoints import endpoint_api_key

    settings.JUDGE_API_KEYS = {**settings.JUDGE_API_KEYS, "OPENAI_API_KEY": "sk-real"}
    settings.JUDGE_API_KEY_BY_HOST = {**settings.JUDGE_API_KEY_BY_HOST,
                                      "api.openai.com": "OPENAI_API_KEY",
                                      "127.0.0.1": "OPENAI_API_KEY"}  # fmt: skip
    assert endpoint_api_key("https://api.openai.com/v1") == "sk-real"
    assert endpoint_api_key("http://api.openai.com/v1") == ""
    assert endpoint_api_key("http://127.0.0.1:8000/v1") == "sk-real"

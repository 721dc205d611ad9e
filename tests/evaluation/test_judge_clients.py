"""Judge clients against a local HTTP server: request shapes, auth, retry policy."""

import json

import pytest

from evaluation.judges import (
    AnthropicClient,
    GeminiClient,
    JudgeError,
    JudgeReply,
    OpenAICompatibleClient,
    TransientJudgeError,
    call_with_retries,
    parse_retry_after,
)
from tests.conftest import completion

SCHEMA = {"type": "object", "properties": {"correct": {"type": "boolean"}}, "required": ["correct"]}


def test_openai_request_and_reply(judge_server):
    judge_server.responder = lambda body, call: (200, {}, completion('{"correct": true}', 321, 7))
    client = OpenAICompatibleClient(base_url=judge_server.url, api_key="sk-test", timeout=5)
    reply = client.complete(
        model="gpt-5.4",
        prompt="Judge this",
        schema=SCHEMA,
        schema_name="mpbench_eval",
        params={"temperature": 0.0},
    )
    assert reply == JudgeReply('{"correct": true}', 321, 7)
    body = judge_server.requests[0]
    assert body["_auth"] == "Bearer sk-test"
    assert {k: v for k, v in body.items() if not k.startswith("_")} == {
        "model": "gpt-5.4",
        "messages": [{"role": "user", "content": "Judge this"}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "mpbench_eval", "strict": True, "schema": SCHEMA},
        },
        "temperature": 0.0,
    }


def test_openai_without_sampling_params_sends_none(judge_server):
    client = OpenAICompatibleClient(base_url=judge_server.url, api_key="", timeout=5)
    client.complete(model="m", prompt="p", schema=SCHEMA, params={})
    body = judge_server.requests[0]
    assert not {"temperature", "top_p", "max_completion_tokens"} & body.keys()
    assert body["_auth"] is None


def test_gemini_request_and_reply(judge_server):
    def responder(body, call):
        return (
            200,
            {},
            {
                "candidates": [
                    {"content": {"parts": [{"text": '{"correct":'}, {"text": " false}"}]}}
                ],
                "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 4},
            },
        )

    judge_server.responder = responder
    client = GeminiClient(base_url=judge_server.url, api_key="g-key", timeout=5)
    params = {"temperature": 0.0, "top_p": 1.0, "max_completion_tokens": 4096}
    reply = client.complete(model="gemini-3.1-pro", prompt="Judge", schema=SCHEMA, params=params)
    assert reply == JudgeReply('{"correct": false}', 50, 4)
    body = judge_server.requests[0]
    assert body["_path"] == "/v1/models/gemini-3.1-pro:generateContent"
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Judge"}]}]
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": SCHEMA,
        "temperature": 0.0,
        "topP": 1.0,
        "maxOutputTokens": 4096,
    }


@pytest.mark.parametrize(
    ("status", "transient"),
    [(408, True), (429, True), (500, True), (503, True), (400, False), (401, False)],
)
def test_status_classification(judge_server, status, transient):
    judge_server.responder = lambda body, call: (status, {"Retry-After": "7"}, {"error": "x"})
    client = OpenAICompatibleClient(base_url=judge_server.url, api_key="", timeout=5)
    with pytest.raises(JudgeError) as caught:
        client.complete(model="m", prompt="p", schema=SCHEMA, params={})
    assert isinstance(caught.value, TransientJudgeError) is transient
    if transient:
        assert caught.value.retry_after == 7.0


def test_timeout_is_transient():
    client = OpenAICompatibleClient(base_url="http://127.0.0.1:9", api_key="", timeout=0.5)
    with pytest.raises(TransientJudgeError):
        client.complete(model="m", prompt="p", schema=SCHEMA, params={})


def test_retry_after_formats():
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_backoff_is_exponential_and_honours_retry_after():
    slept = []
    answers = iter(
        [
            TransientJudgeError("a"),
            TransientJudgeError("b", retry_after=30),
            TransientJudgeError("c"),
            "ok",
        ]
    )

    def call():
        item = next(answers)
        if isinstance(item, Exception):
            raise item
        return JudgeReply(item, None, None)

    reply, attempts = call_with_retries(
        call, max_attempts=5, backoff_base=1.0, backoff_max=60.0, sleep=slept.append
    )
    assert (reply.raw_output, attempts) == ("ok", 4)
    # 1 s, then max(2 s, Retry-After 30 s), then 4 s.
    assert slept == [1.0, 30.0, 4.0]


def test_gives_up_after_max_attempts():
    def call():
        raise TransientJudgeError("HTTP 503")

    slept = []
    with pytest.raises(JudgeError, match="gave up after 3 attempts: HTTP 503"):
        call_with_retries(
            call, max_attempts=3, backoff_base=0.5, backoff_max=1.0, sleep=slept.append
        )
    assert slept == [0.5, 1.0]


def test_permanent_errors_are_not_retried():
    calls = []

    def call():
        calls.append(1)
        raise JudgeError("HTTP 400: bad request")

    with pytest.raises(JudgeError, match="HTTP 400"):
        call_with_retries(
            call, max_attempts=5, backoff_base=0.0, backoff_max=0.0, sleep=lambda s: None
        )
    assert len(calls) == 1


def test_reply_json_is_returned_verbatim(judge_server):
    raw = '{"reasoning": "Step 1...", "consistent": true}'
    judge_server.responder = lambda body, call: (200, {}, completion(raw))
    client = OpenAICompatibleClient(base_url=judge_server.url, api_key="", timeout=5)
    assert (
        json.loads(client.complete(model="m", prompt="p", schema=SCHEMA, params={}).raw_output)[
            "consistent"
        ]
        is True
    )


def messages_reply(text: str, input_tokens: int = 50, output_tokens: int = 4) -> dict:
    """A Messages API answer as the Anthropic API returns it."""
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def test_anthropic_request_and_reply(judge_server):
    judge_server.responder = lambda body, call: (200, {}, messages_reply('{"correct": true}', 88))
    client = AnthropicClient(base_url=judge_server.url, api_key="sk-ant-test", timeout=5)
    reply = client.complete(
        model="claude-test",
        prompt="Judge this",
        system="You grade answers.",
        response_format="text",
        params={"temperature": 0.0, "top_p": 1.0, "max_completion_tokens": 512},
    )
    assert reply == JudgeReply('{"correct": true}', 88, 4)
    body = judge_server.requests[0]
    assert body["_path"] == "/v1/messages"
    assert body["_headers"]["x-api-key"] == "sk-ant-test"
    assert body["_headers"]["anthropic-version"] == "2023-06-01"
    assert body["_auth"] is None  # the key goes in x-api-key, never as a bearer token
    # top_p at its default is left out: recent models refuse temperature and top_p together.
    assert {k: v for k, v in body.items() if not k.startswith("_")} == {
        "model": "claude-test",
        "max_tokens": 512,
        "system": "You grade answers.",
        "messages": [{"role": "user", "content": "Judge this"}],
        "temperature": 0.0,
    }


def test_anthropic_defaults_and_a_non_default_top_p(judge_server):
    judge_server.responder = lambda body, call: (200, {}, messages_reply("x"))
    client = AnthropicClient(base_url=judge_server.url, api_key="", timeout=5)
    client.complete(model="m", prompt="p", params={})
    client.complete(model="m", prompt="q", params={"top_p": 0.9})
    first, second = judge_server.requests
    assert first["max_tokens"] == 4096  # required by the API
    assert not {"temperature", "top_p", "system"} & first.keys()
    assert "x-api-key" not in first["_headers"]
    assert second["top_p"] == 0.9


def test_anthropic_joins_text_blocks_and_skips_others(judge_server):
    payload = messages_reply("")
    payload["content"] = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": '{"label":'},
        {"type": "text", "text": ' "intrusion"}'},
    ]
    judge_server.responder = lambda body, call: (200, {}, payload)
    client = AnthropicClient(base_url=judge_server.url, api_key="", timeout=5)
    assert client.complete(model="m", prompt="p", params={}).raw_output == (
        '{"label": "intrusion"}'
    )


@pytest.mark.parametrize(("status", "transient"), [(429, True), (529, True), (400, False)])
def test_anthropic_status_classification(judge_server, status, transient):
    judge_server.responder = lambda body, call: (status, {"Retry-After": "3"}, {"error": {}})
    client = AnthropicClient(base_url=judge_server.url, api_key="", timeout=5)
    with pytest.raises(JudgeError) as caught:
        client.complete(model="m", prompt="p", params={})
    assert isinstance(caught.value, TransientJudgeError) is transient
    if transient:
        assert caught.value.retry_after == 3.0


def test_anthropic_unexpected_shape_is_an_error(judge_server):
    judge_server.responder = lambda body, call: (200, {}, {"content": "not a list of blocks"})
    client = AnthropicClient(base_url=judge_server.url, api_key="", timeout=5)
    with pytest.raises(JudgeError):
        client.complete(model="m", prompt="p", params={})

"""LLM judge clients: an OpenAI-compatible chat-completions client, a Gemini client and an
Anthropic Messages API client.

Each sends an optional system message and one user message (the filled template) and, where the
API has a way to, asks for the kind's answer format.
Transient failures (408, 429, 5xx, timeouts, dropped connections) are retried with exponential
backoff that honours Retry-After; anything else fails at once.
"""

from __future__ import annotations

import email.utils
import functools
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

RETRYABLE_STATUS = {408, 429}
RETRY_AFTER_CAP_SECONDS = 600.0


@dataclass(frozen=True)
class JudgeReply:
    raw_output: str
    input_tokens: int | None
    output_tokens: int | None


class JudgeError(Exception):
    """A call that failed for good (after retries, or at once for a non-retryable answer)."""


class EndpointRefused(JudgeError):
    """The site does not let judges call this endpoint: nothing was sent."""


class RefusedClient:
    """Stands in for the client of an endpoint the site refuses: every call fails at once with
    the reason, and nothing is sent."""

    def __init__(self, *, base_url: str, reason: str):
        self.base_url = base_url.rstrip("/")
        self.reason = reason

    def complete(self, **_) -> JudgeReply:
        raise EndpointRefused(self.reason)

    def close(self) -> None:
        pass


class TransientJudgeError(JudgeError):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    detail = response.text[:500]
    if response.status_code in RETRYABLE_STATUS or response.status_code >= 500:
        raise TransientJudgeError(
            f"HTTP {response.status_code}: {detail}",
            retry_after=parse_retry_after(response.headers.get("Retry-After")),
        )
    raise JudgeError(f"HTTP {response.status_code}: {detail}")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings of every judge client: httpx's own defaults (certifi's roots, or
    SSL_CERT_FILE / SSL_CERT_DIR), loaded once per process. Loading them takes about 20 ms, which
    each client would otherwise pay again; workers load them before their first task."""
    return httpx.create_ssl_context()


def warm() -> None:
    """Load what a process's first judge client would, on its clock: the TLS roots, and the
    transport modules httpx imports when its first client is made (about 20 ms more)."""
    httpx.Client(verify=tls_context()).close()


def _http(timeout: float, headers: dict) -> httpx.Client:
    return httpx.Client(timeout=timeout, headers=headers, verify=tls_context())


def _post(http: httpx.Client, url: str, **kwargs) -> dict:
    try:
        response = http.post(url, **kwargs)
    except (httpx.TimeoutException, httpx.TransportError) as exc:
        raise TransientJudgeError(f"{type(exc).__name__}: {exc}") from exc
    _raise_for_status(response)
    try:
        return response.json()
    except ValueError as exc:
        raise TransientJudgeError(f"response body is not JSON: {response.text[:200]}") from exc


def _response_format(response_format: str, schema: dict | None, schema_name: str) -> dict | None:
    if response_format == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "strict": True, "schema": schema},
        }
    if response_format == "json_object":
        return {"type": "json_object"}
    return None


class OpenAICompatibleClient:
    def __init__(self, *, base_url: str, api_key: str, timeout: float):
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = _http(timeout, headers)

    def request_body(
        self,
        *,
        model: str,
        prompt: str,
        params: dict,
        system: str = "",
        response_format: str = "json_schema",
        schema: dict | None = None,
        schema_name: str = "",
    ) -> dict:
        """The chat-completions body: an optional system message, the user message, the
        answer format, then the sampling parameters (in this order, as the harnesses send)."""
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body = {"model": model, "messages": messages}
        answer = _response_format(response_format, schema, schema_name)
        if answer is not None:
            body["response_format"] = answer
        return {**body, **params}

    def complete(self, *, model: str, prompt: str, params: dict, **request) -> JudgeReply:
        data = _post(
            self.http,
            f"{self.base_url}/chat/completions",
            json=self.request_body(model=model, prompt=prompt, params=params, **request),
        )
        try:
            content = data["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise JudgeError(f"unexpected response shape: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        return JudgeReply(content, usage.get("prompt_tokens"), usage.get("completion_tokens"))

    def close(self) -> None:
        self.http.close()


class GeminiClient:
    def __init__(self, *, base_url: str, api_key: str, timeout: float):
        self.base_url = base_url.rstrip("/")
        headers = {"x-goog-api-key": api_key} if api_key else {}
        self.http = _http(timeout, headers)

    def request_body(
        self,
        *,
        prompt: str,
        params: dict,
        system: str = "",
        response_format: str = "json_schema",
        schema: dict | None = None,
        schema_name: str = "",
    ) -> dict:
        config = {}
        if response_format != "text":
            config["responseMimeType"] = "application/json"
        if response_format == "json_schema":
            config["responseJsonSchema"] = schema
        if "temperature" in params:
            config["temperature"] = params["temperature"]
        if "top_p" in params:
            config["topP"] = params["top_p"]
        if "max_completion_tokens" in params:
            config["maxOutputTokens"] = params["max_completion_tokens"]
        body = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "generationConfig": config,
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return body

    def complete(self, *, model: str, prompt: str, params: dict, **request) -> JudgeReply:
        data = _post(
            self.http,
            f"{self.base_url}/models/{model}:generateContent",
            json=self.request_body(prompt=prompt, params=params, **request),
        )
        try:
            parts = data["candidates"][0]["content"]["parts"]
            content = "".join(part.get("text", "") for part in parts)
        except (KeyError, IndexError, TypeError):
            content = ""
        usage = data.get("usageMetadata") or {}
        return JudgeReply(content, usage.get("promptTokenCount"), usage.get("candidatesTokenCount"))

    def close(self) -> None:
        self.http.close()


ANTHROPIC_VERSION = "2023-06-01"  # the Messages API version header every call carries
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096  # max_tokens is required by the API


class AnthropicClient:
    """The Anthropic Messages API (``POST {base}/messages``). It has no response_format: the
    prompt asks for the answer's format and parsing reads it. Sampling: ``temperature`` and
    ``max_completion_tokens`` (sent as max_tokens) are sent; ``top_p`` only when it is not 1,
    since recent models refuse both temperature and top_p in one request."""

    def __init__(self, *, base_url: str, api_key: str, timeout: float):
        self.base_url = base_url.rstrip("/")
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self.http = _http(timeout, headers)

    def request_body(self, *, model: str, prompt: str, params: dict, system: str = "", **_) -> dict:
        body = {
            "model": model,
            "max_tokens": params.get("max_completion_tokens", ANTHROPIC_DEFAULT_MAX_TOKENS),
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            body["system"] = system
        if "temperature" in params:
            body["temperature"] = params["temperature"]
        if params.get("top_p", 1.0) != 1.0:
            body["top_p"] = params["top_p"]
        return body

    def complete(self, *, model: str, prompt: str, params: dict, **request) -> JudgeReply:
        data = _post(
            self.http,
            f"{self.base_url}/messages",
            json=self.request_body(model=model, prompt=prompt, params=params, **request),
        )
        try:
            blocks = data["content"]
            content = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        except (KeyError, TypeError, AttributeError):
            raise JudgeError(f"unexpected response shape: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        return JudgeReply(content, usage.get("input_tokens"), usage.get("output_tokens"))

    def close(self) -> None:
        self.http.close()


def call_with_retries(
    call: Callable[[], JudgeReply],
    *,
    max_attempts: int,
    backoff_base: float,
    backoff_max: float,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[JudgeReply, int]:
    """(reply, attempts made). Raises the last error once attempts run out."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(), attempt
        except TransientJudgeError as exc:
            if attempt >= max_attempts:
                raise JudgeError(f"gave up after {attempt} attempts: {exc}") from exc
            delay = min(backoff_max, backoff_base * 2 ** (attempt - 1))
            if exc.retry_after is not None:
                # The server knows best when it will take us back; ten minutes at the most.
                delay = max(delay, min(exc.retry_after, RETRY_AFTER_CAP_SECONDS))
            sleep(delay)

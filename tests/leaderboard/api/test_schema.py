"""The OpenAPI schema builds, is valid OpenAPI 3 (checked by openapi-spec-validator), and
documents every endpoint; the docs page renders it without any outside asset."""

from __future__ import annotations

import json

import pytest
import yaml
from openapi_spec_validator import validate
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

ENDPOINTS = {
    "/api/benchmarks/": {"get"},
    "/api/benchmarks/{slug}/": {"get"},
    "/api/benchmarks/{slug}/judges/": {"get"},
    "/api/benchmarks/{slug}/slices/": {"get"},
    "/api/benchmarks/{slug}/compare/": {"get"},
    "/api/systems/": {"get"},
    "/api/systems/{id}/": {"get"},
    "/api/submissions/": {"get"},
    "/api/submissions/{id}/": {"get"},
    "/api/submissions/{id}/tasks/": {"get"},
    "/api/submissions/{id}/tasks/{task_id}/judgments/": {"get"},
    "/api/submissions/{id}/retry-failed/": {"post"},
    "/api/submissions/{id}/publish/": {"post"},
}


@pytest.fixture
def schema(db) -> dict:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def test_schema_is_valid_openapi_and_lists_the_endpoints(schema):
    validate(schema)
    assert schema["openapi"].startswith("3.")
    for path, methods in ENDPOINTS.items():
        assert path in schema["paths"], path
        assert methods <= set(schema["paths"][path]), path


def test_schema_documents_auth_filters_and_pagination(schema):
    assert schema["components"]["securitySchemes"]["apiToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["apiToken"]["description"],
    }
    tasks = schema["paths"]["/api/submissions/{id}/tasks/"]["get"]
    names = {p["name"] for p in tasks["parameters"]}
    assert {
        "family",
        "spoke",
        "should_speak",
        "turn_taking",
        "verdict",
        "page",
        "page_size",
    } <= names
    listing = schema["paths"]["/api/submissions/"]["get"]
    status = next(p for p in listing["parameters"] if p["name"] == "status")
    assert set(status["schema"]["enum"]) == {
        "queued",
        "ingesting",
        "detecting",
        "judging",
        "aggregating",
        "scored",
        "failed",
    }
    ok = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    paginated = schema["components"]["schemas"][ok.rsplit("/", 1)[1]]
    assert {"count", "next", "previous", "results"} <= set(paginated["properties"])
    retry = schema["paths"]["/api/submissions/{id}/retry-failed/"]["post"]
    assert "202" in retry["responses"]


def test_schema_documents_the_comparison(schema):
    compare = schema["paths"]["/api/benchmarks/{slug}/compare/"]["get"]
    names = {p["name"]: p for p in compare["parameters"]}
    assert {"a", "b", "judge", "split", "slice"} <= set(names)
    assert names["a"]["required"] and names["b"]["required"]
    ok = compare["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    body = schema["components"]["schemas"][ok.rsplit("/", 1)[1]]
    assert {"overall", "by_slice", "disagreements", "draws", "seed"} <= set(body["properties"])
    metric = schema["components"]["schemas"]["MetricComparison"]["properties"]
    assert {"difference", "interval", "p_value", "b_only_a", "c_only_b"} <= set(metric)


def test_schema_is_served_as_yaml_too(db):
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    document = yaml.safe_load(response.content)
    assert "/api/submissions/{id}/publish/" in document["paths"]


def test_docs_page_lists_every_endpoint_without_outside_assets(client, db):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    for path in ENDPOINTS:
        assert path in page, path
    assert "<script" not in page  # nothing to fetch from a CDN: it reads the same offline
    assert 'href="/api/schema/"' in page
    # The browsable API answers in HTML for a browser.
    browsable = client.get("/api/submissions/", HTTP_ACCEPT="text/html")
    assert browsable.status_code == 200 and "text/html" in browsable["Content-Type"]

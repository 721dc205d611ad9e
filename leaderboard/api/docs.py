"""API documentation as a server-rendered page built from the OpenAPI schema: no script and no
asset from elsewhere, so it reads the same offline."""

from functools import cache
from pathlib import Path

from django.http import HttpResponse
from django.template import engines
from drf_spectacular.generators import SchemaGenerator

METHODS = ("get", "post", "put", "patch", "delete")
# leaderboard.api is a package of the leaderboard app, not an app, so its template is read by path.
TEMPLATE = Path(__file__).parent / "templates" / "api" / "docs.html"


@cache
def _template():
    return engines["django"].from_string(TEMPLATE.read_text())


def _body(operation: dict, schema: dict) -> dict | None:
    """The request body: its media type and each field (name, type, required, description)."""
    content = operation.get("requestBody", {}).get("content", {})
    if not content:
        return None
    media, spec = next(iter(content.items()))
    ref = spec.get("schema", {}).get("$ref", "")
    body = schema.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {})
    required = set(body.get("required", []))
    fields = []
    for name, field in body.get("properties", {}).items():
        kind = field.get("type", "")
        if field.get("format") == "binary":
            kind = "file"
        fields.append(
            {
                "name": name,
                "type": kind,
                "required": name in required,
                "default": field.get("default"),
                "description": field.get("description", ""),
            }
        )
    return {"media": media, "fields": fields}


def _operations(schema: dict) -> list[dict]:
    operations = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            operations.append(
                {
                    "anchor": operation.get("operationId", f"{method}-{path}"),
                    "method": method.upper(),
                    "path": path,
                    "description": operation.get("description", ""),
                    "parameters": [
                        {
                            "name": p["name"],
                            "where": p["in"],
                            "required": p.get("required", False),
                            "type": p.get("schema", {}).get("type", ""),
                            "enum": p.get("schema", {}).get("enum", []),
                            "description": p.get("description", ""),
                        }
                        for p in operation.get("parameters", [])
                    ],
                    "body": _body(operation, schema),
                    "responses": sorted(operation.get("responses", {})),
                    "secured": bool(operation.get("security")),
                    "browsable": method == "get" and "{" not in path,
                }
            )
    return operations


def api_docs(request):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    context = {"info": schema.get("info", {}), "operations": _operations(schema)}
    return HttpResponse(_template().render(context, request))

"""OpenAPI pieces drf-spectacular cannot infer: the bearer-token scheme."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "leaderboard.accounts.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token from the account's API tokens page: "
            "`Authorization: Bearer <token>`.",
        }

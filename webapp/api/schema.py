"""OpenAPI descriptions of the API's authentication (imported by the accounts app at start-up)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.api.authentication.BearerTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema):  # noqa: D102
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal API token from POST /api/auth/token/ (Authorization: Bearer nl_...).",
        }


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.api.authentication.SessionAuthentication"
    name = "sessionCookie"

    def get_security_definition(self, auto_schema):  # noqa: D102
        return {"type": "apiKey", "in": "cookie", "name": "sessionid"}

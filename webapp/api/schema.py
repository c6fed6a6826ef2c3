"""OpenAPI descriptions of the API's authentication (imported by the accounts app at start-up), and
helpers that add pydantic models as components (the wire types the browser's types come from)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from pydantic import BaseModel, ConfigDict


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


def pydantic_components(*models: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """OpenAPI components of pydantic models (and the models they use), named by class."""
    components: dict[str, dict[str, Any]] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}", mode="serialization")
        components.update(schema.pop("$defs", {}))
        components[model.__name__] = schema
    return components


def components_add(result: dict[str, Any], components: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Add components to a generated schema (keeping the ones it has), sorted by name.

    For postprocessing hooks (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]): models that serializer
    fields refer to with `extend_schema_field({"$ref": "#/components/schemas/<Name>"})`.
    """
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in components.items():
        schemas.setdefault(name, schema)
    result["components"]["schemas"] = dict(sorted(schemas.items()))
    return result


def drop_titles(schema: dict[str, Any]) -> None:
    """pydantic `json_schema_extra`: no generated titles ("Step" for `step`); names and descriptions say it."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


# The config of a pydantic model of the wire: no undeclared fields, no generated titles.
WIRE_CONFIG = ConfigDict(extra="forbid", json_schema_extra=drop_titles)
# The same for a body that may grow fields the browser does not read (engine summaries).
OPEN_WIRE_CONFIG = ConfigDict(extra="allow", json_schema_extra=drop_titles)

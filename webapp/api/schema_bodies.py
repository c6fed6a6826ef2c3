"""Request bodies are closed in the OpenAPI schema (a drf-spectacular hook).

The API refuses a key a body's serializer does not have (webapp/api/serializers.py
`KnownFieldsOnly`, `require_known_fields`), so every request body the schema describes says
`additionalProperties: false`: generated clients and the docs show the same rule, and schemathesis
sends unknown keys expecting the 400. A PATCH body that must change something says
`minProperties: 1`, or requires its one field (NON_EMPTY_BODIES).
"""

from __future__ import annotations

from typing import Any

REF = "#/components/schemas/"
# PATCH bodies whose fields are each optional but that must change something: `{}` is a 400.
NON_EMPTY_BODIES = frozenset({"PatchedGraphRenameRequest", "PatchedDatasetUpdateRequest", "PatchedLayoutRequest"})


def closed_request_bodies_hook(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Close each operation's request body schema: the component it refers to, or the inline one."""
    components = result.get("components", {}).get("schemas", {})
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                schema = media.get("schema", {})
                ref = schema.get("$ref", "")
                target = components.get(ref.removeprefix(REF)) if ref.startswith(REF) else schema
                if isinstance(target, dict) and target.get("type") == "object" and "properties" in target:
                    target["additionalProperties"] = False
                    if ref.removeprefix(REF) in NON_EMPTY_BODIES:
                        if len(target["properties"]) == 1:  # then that one field is required
                            target["required"] = list(target["properties"])
                        else:
                            target["minProperties"] = 1
    return result


def lib_doc_excludes() -> list[Any]:
    """drf-spectacular's classes whose docstrings never describe a component, and the strict
    bases: a request serializer without a docstring of its own is described as nothing, not as
    "a request body's serializer"."""
    from drf_spectacular.plumbing import get_lib_doc_excludes

    from webapp.api.serializers import KnownFieldsOnly, StrictSerializer, TrainingSettingHints

    return [*get_lib_doc_excludes(), StrictSerializer, KnownFieldsOnly, TrainingSettingHints]

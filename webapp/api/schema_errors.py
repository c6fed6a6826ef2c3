"""The error answers of every operation, in the OpenAPI schema (a drf-spectacular hook).

Every 4xx the API gives has one body, `{"error": {"code", "message", "fields", ...}}`
(webapp/api/errors.py). The views document their success bodies; this hook adds, per
operation, the error statuses it can answer, derived from what the operation is:

- 400 for an operation that takes a body or query parameters (validation, `invalid_*`);
- 401 for every operation that needs a sign-in; 403 for one that writes (role too low);
- 404 for an operation on one object (`{id}` in the path: unknown, or another team's) and
  for a page past the end of a list, and for objects named in the query (`?ids=` of runs to compare);
- 409 for writes that depend on an object's state (cancel a finished run), and for reads of
  what an object makes (an export before the run succeeded, a preview before the data is ready);
- 413 and 415 for an operation that takes a body (too large; not JSON or multipart);
- 429 for the sign-in operations (django-axes lockout per account and address, the per-address throttle).
"""

from __future__ import annotations

import re
from typing import Any

ERROR_COMPONENT = "ErrorBody"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error answer of the API.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "machine-readable reason, e.g. invalid"},
                "message": {"type": "string", "description": "what the user should read"},
                "fields": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    "description": "per request field (dotted for nested ones), its messages",
                },
            },
            "required": ["code", "message", "fields"],
            "additionalProperties": True,
        }
    },
    "required": ["error"],
}

DESCRIPTIONS = {
    "400": "The request is not valid (the body says which field and why).",
    "401": "Not signed in, or the token is unknown, revoked or expired.",
    "403": "Signed in, but the role in the object's team is too low for this.",
    "404": "No such object among the teams of the user.",
    "409": "The object is not in a state that allows this now.",
    "413": "The request body is larger than the limit.",
    "415": "The body's content type is not one this operation reads.",
    "429": ("Too many sign-ins: this account is locked out from this address (locked_out), or this "
            "address is slowed (throttled); try again after Retry-After seconds."),
}

SIGN_IN_PATHS = {"/api/auth/token/", "/api/auth/login/"}
WRITE_METHODS = {"post", "put", "patch", "delete"}


def _statuses(path: str, method: str, operation: dict[str, Any]) -> set[str]:
    statuses: set[str] = set()
    public = {} in operation.get("security", [{}]) or not operation.get("security")
    has_body = "requestBody" in operation
    if has_body or operation.get("parameters"):
        statuses.add("400")
    if not public:
        statuses.add("401")
        if method in WRITE_METHODS or "x-role" in operation:  # x-role: a read that needs a role (the audit log)
            statuses.add("403")
    names = {p.get("name") for p in operation.get("parameters", [])}
    if "{" in path or "page" in names or "ids" in names:  # one object; a page past the end; ?ids= naming one
        statuses.add("404")
    # A write depends on the object's state; so does a read of what an object has made
    # (/runs/{id}/export/, /datasets/{id}/preview/: 409 until it exists).
    made_by_object = re.search(r"\}/[a-z_-]+/$", path) is not None
    if not public and (method in WRITE_METHODS or made_by_object):
        statuses.add("409")
    if has_body:
        statuses |= {"413", "415"}
    if path in SIGN_IN_PATHS:  # 409: the user already has the most live tokens allowed
        statuses |= {"400", "409", "429"}
    return statuses


def error_responses_hook(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Add ErrorBody and each operation's error statuses (kept where a view documented one)."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    ref = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for status in sorted(_statuses(path, method, operation)):
                responses.setdefault(
                    status,
                    {"description": DESCRIPTIONS[status], "content": {"application/json": {"schema": ref}}},
                )
    return result

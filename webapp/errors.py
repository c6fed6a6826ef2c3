"""The one domain error of the webapp's services and selectors: a code, a message, fields, extras.

Services and selectors raise `DomainError` (or a subclass that says what kind of refusal it is);
they never know HTTP. Only the API layer (`webapp.api.errors`) turns one into a response, with a
status chosen per subclass at the edge (Baserow's api_exceptions_map, HackSoft's
ApplicationError). This module imports nothing from DRF or Django, so the engine-facing and
worker-facing code can raise and catch it too.

    raise DomainError("invalid", "A graph needs a name.", field="name")            # 400
    raise Conflict("in_use", "Runs use this dataset; delete those runs first.")     # 409
    raise DomainError("invalid_graph", message, fields={...}, extra={"errors": [...]})

The API body is `{"error": {"code", "message", "fields", **extra}}`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Conflict", "DomainError", "Forbidden", "Gone", "InsufficientStorage", "NotFound"]


class DomainError(Exception):
    """A rule a service or selector enforces; the request cannot be carried out as asked.

    Args:
        code: machine-readable reason, e.g. "last_admin", "invalid_config".
        message: what the user should read.
        field: the request field the problem belongs to; gives `fields={field: [message]}`.
        fields: per-field messages, `{"config.epochs": ["..."]}` (instead of `field`).
        extra: more keys of the error body, next to code/message/fields (e.g. `errors`).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        if fields is None and field is not None:
            fields = {field: [message]}
        self.fields: dict[str, list[str]] = fields or {}
        self.extra: dict[str, Any] = extra or {}

    @property
    def field(self) -> str | None:
        """The first field the error names, if any."""
        return next(iter(self.fields), None)


class Conflict(DomainError):
    """The request is valid but the object's state forbids it now (finished, in use, not ready)."""


class NotFound(DomainError):
    """The object is gone (e.g. deleted while the request ran)."""


class Gone(DomainError):
    """The object existed but can no longer be used (an invitation accepted, revoked or expired)."""


class Forbidden(DomainError):
    """The user's role does not allow this."""


class InsufficientStorage(DomainError):
    """A volume the service writes to is full: nothing was stored (webapp/disk.py)."""

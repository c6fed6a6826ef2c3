"""One error shape for the whole API: {"error": {"code", "message", "fields", ...extra}}.

Services raise the domain error (`webapp.errors.DomainError`, which knows no HTTP); this is the
one place that maps it to a status (`DOMAIN_ERROR_STATUS`, per subclass). Views may raise
`ApiError` for what only HTTP knows (a bad query parameter, a file that is not there yet).
DRF exceptions go through `exception_handler`; Django-level errors under /api/ (unknown URL,
an uncaught exception) go through `ApiErrorMiddleware`, `handler404` and `handler500`, so a
client never has to parse an HTML page.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from webapp.errors import Conflict, DomainError, Forbidden, Gone, InsufficientStorage, NotFound

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


class ApiError(exceptions.APIException):
    """An API error with a code, a message, optional per-field messages and extra detail.

    Raise it from views, for what only HTTP knows (`ApiError(400, "invalid", "...",
    fields={...})`); services raise `webapp.errors.DomainError` instead.
    """

    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        *,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.fields = fields or {}
        self.extra = extra or {}


class PayloadTooLarge(ApiError):
    """The request body (an upload) is larger than the configured limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            "payload_too_large",
            f"The upload is larger than the limit of {limit} bytes.",
            fields={"file": [f"Larger than {limit} bytes."]},
        )


# The HTTP status of each kind of domain error (the most specific class in the MRO wins).
DOMAIN_ERROR_STATUS: dict[type[DomainError], int] = {
    DomainError: status.HTTP_400_BAD_REQUEST,
    Forbidden: status.HTTP_403_FORBIDDEN,
    NotFound: status.HTTP_404_NOT_FOUND,
    Conflict: status.HTTP_409_CONFLICT,
    Gone: status.HTTP_410_GONE,
    InsufficientStorage: status.HTTP_507_INSUFFICIENT_STORAGE,
}


def domain_error_status(exc: DomainError) -> int:
    """The status the API answers a domain error with."""
    for kind in type(exc).__mro__:
        if kind in DOMAIN_ERROR_STATUS:
            return DOMAIN_ERROR_STATUS[kind]  # type: ignore[index]
    return status.HTTP_400_BAD_REQUEST


def api_error_from_domain(exc: DomainError) -> ApiError:
    """The ApiError (status, code, message, fields, extra) a domain error is answered with."""
    return ApiError(domain_error_status(exc), exc.code, exc.message, fields=exc.fields, extra=exc.extra)


def error_body(
    code: str, message: str, fields: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """Build the error body every API error uses."""
    return {"error": {"code": code, "message": message, "fields": fields or {}, **extra}}


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Turn DRF's nested validation detail into {"field.sub": ["message", ...]}."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            out.update(_flatten(value, name))
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return {prefix or "non_field_errors": [str(item) for item in detail]}
        out = {}
        for index, item in enumerate(detail):
            out.update(_flatten(item, f"{prefix}.{index}" if prefix else str(index)))
        return out
    return {prefix or "non_field_errors": [str(detail)]}


_CODES: dict[type[exceptions.APIException], str] = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.ParseError: "parse_error",
    exceptions.Throttled: "throttled",
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler that renders every error as the API's error body."""
    _discard_uploads(context.get("request"))
    full = _out_of_space(exc)
    if full is not None:
        exc = full
    if isinstance(exc, DomainError):
        exc = api_error_from_domain(exc)
    if isinstance(exc, RequestDataTooBig):
        exc = ApiError(413, "payload_too_large", "The request body is too large.")
    elif isinstance(exc, TooManyFieldsSent):
        exc = ApiError(400, "bad_request", "The request has too many fields.")
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None  # a real bug: Django's handler500 answers (JSON under /api/)

    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
    if getattr(exc, "wait", None):
        # Whole seconds, rounded up: "0" would invite an immediate retry that is refused again.
        headers["Retry-After"] = str(max(1, math.ceil(exc.wait)))  # type: ignore[attr-defined]

    if isinstance(exc, ApiError):
        body = error_body(exc.code, exc.message, exc.fields, **exc.extra)
    elif isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first = next(iter(fields.items()), None)
        message = "Invalid input."
        if first is not None:
            name, messages = first
            message = messages[0] if name == "non_field_errors" else f"{name}: {messages[0]}"
        body = error_body("invalid", message, fields)
    else:
        code = _CODES.get(type(exc))
        if code is None:
            codes = exc.get_codes()
            code = codes if isinstance(codes, str) else "error"
        detail = exc.detail
        message = str(detail) if not isinstance(detail, dict | list) else "Request failed."
        body = error_body(code, message)

    from rest_framework.views import (
        set_rollback,  # here: rest_framework.views imports our auth classes
    )

    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)


def _discard_uploads(request: Any) -> None:
    """A failed request keeps no file it was uploading (webapp/datasets/uploads.py)."""
    django_request = getattr(request, "_request", request)  # DRF's Request wraps Django's
    # Only handlers already made: asking for `upload_handlers` would make Django build its defaults.
    for handler in getattr(django_request, "_upload_handlers", None) or ():
        discard = getattr(handler, "discard_partial_upload", None)  # webapp/datasets/uploads.py's
        if callable(discard):
            discard()


def _out_of_space(exc: BaseException) -> InsufficientStorage | None:
    """The 507 refusal for an exception caused by a full volume (ENOSPC/EDQUOT anywhere in its chain)."""
    from webapp.disk import from_os_error, out_of_space

    full = out_of_space(exc)
    if full is None:
        return None
    logger.warning("a request met a full volume: %s", full)
    return from_os_error(full)


def is_api_request(request: HttpRequest) -> bool:
    """True for requests under /api/."""
    return request.path.startswith(API_PREFIX)


class ApiErrorMiddleware:
    """Turns non-JSON error responses under /api/ into the API's error body.

    Covers what DRF never sees: URLs that resolve to nothing (404 with DEBUG on as well as off)
    and 405s from plain Django views.
    """

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A full volume met outside DRF (a plain Django view, a form parsed there): 507, not a 500."""
        _discard_uploads(request)
        full = _out_of_space(exception)
        if full is None:
            return None
        return JsonResponse(error_body(full.code, full.message, full.fields, **full.extra),
                            status=status.HTTP_507_INSUFFICIENT_STORAGE)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            is_api_request(request)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            code, message = {
                404: ("not_found", "Not found."),
                405: ("method_not_allowed", f'Method "{request.method}" not allowed.'),
                403: ("permission_denied", "You do not have permission to perform this action."),
                413: ("payload_too_large", "The request body is too large."),
            }.get(response.status_code, ("error", "The request failed."))
            if response.status_code >= 500:
                code, message = "server_error", "Something went wrong on the server."
            new = JsonResponse(error_body(code, message), status=response.status_code)
            for header in ("Allow", "WWW-Authenticate"):
                if response.has_header(header):
                    new[header] = response[header]
            return new
        return response


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404 handler: JSON under /api/, Django's page elsewhere."""
    if is_api_request(request):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception or Http404())


def handler500(request: HttpRequest) -> HttpResponse:
    """500 handler: JSON under /api/ (no traceback), Django's page elsewhere."""
    if is_api_request(request):
        return JsonResponse(
            error_body("server_error", "Something went wrong on the server."), status=500
        )
    from django.views.defaults import server_error

    return server_error(request)


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """400 handler (e.g. a disallowed Host or too many fields): JSON under /api/."""
    if is_api_request(request):
        message = str(exception) if exception else "Bad request."
        return JsonResponse(error_body("bad_request", message), status=400)
    from django.views.defaults import bad_request

    return bad_request(request, exception or Exception())


def json_error(status_code: int, code: str, message: str, **fields: Any) -> JsonResponse:
    """A JSON error response for plain Django views."""
    return JsonResponse(
        error_body(code, message, {k: [str(v)] for k, v in fields.items()}), status=status_code
    )


__all__ = [
    "DOMAIN_ERROR_STATUS",
    "ApiError",
    "ApiErrorMiddleware",
    "PayloadTooLarge",
    "api_error_from_domain",
    "domain_error_status",
    "error_body",
    "exception_handler",
    "handler400",
    "handler404",
    "handler500",
    "json_error",
]

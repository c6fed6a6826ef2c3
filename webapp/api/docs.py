"""API docs page: a plain HTML list of every endpoint, made from the OpenAPI schema.

Swagger UI and ReDoc load their JavaScript from a CDN (and drf-spectacular-sidecar is not
installed), which a team server without internet cannot reach; this page needs nothing but
the schema. The machine-readable schema is at /api/schema/.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

METHODS = ("get", "post", "put", "patch", "delete")


def _endpoints(schema: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for path, item in sorted(schema.get("paths", {}).items()):
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            public = operation.get("security") is not None and {} in operation.get("security", [])
            rows.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": (
                        operation.get("description") or operation.get("summary") or ""
                    ).strip(),
                    "tag": (operation.get("tags") or [""])[0],
                    "public": public,
                }
            )
    return rows


class ApiDocsView(APIView):
    """GET /api/docs/: the endpoint list as HTML (public, like the schema)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Any:
        schema = SchemaGenerator().get_schema(request=None, public=True)
        return render(
            request._request,
            "api/docs.html",
            {
                "endpoints": _endpoints(schema),
                "title": schema["info"]["title"],
                "version": schema["info"]["version"],
            },
        )

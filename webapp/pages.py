"""Server-rendered pages: the index page and the browser app's shell under /app/."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils._os import safe_join
from django.views.decorators.http import require_safe
from django.views.static import serve


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    """What Netloom is, with links to the app, the API docs and the admin."""
    return render(
        request,
        "index.html",
        {"app_built": (Path(settings.FRONTEND_DIST) / "index.html").is_file()},
    )


@require_safe
def app_shell(request: HttpRequest, path: str | None = None) -> HttpResponse:
    """Serve frontend/dist: real files as they are, every other path (a deep link) as index.html."""
    dist = Path(settings.FRONTEND_DIST)
    if path:
        try:
            candidate = Path(safe_join(dist, path))
        except Exception:  # SuspiciousFileOperation: a path that leaves dist
            raise Http404("not found") from None
        if candidate.is_file():
            response = serve(request, path, document_root=str(dist))
            if path.startswith("assets/"):
                # Vite puts a content hash in every asset name: cache them for good.
                response["Cache-Control"] = "public, max-age=31536000, immutable"
            return response
        if path.startswith("assets/"):
            raise Http404("no such asset")
    shell = dist / "index.html"
    if not shell.is_file():
        return render(request, "app_missing.html", status=503)
    response = FileResponse(open(shell, "rb"), content_type="text/html; charset=utf-8")  # noqa: SIM115
    response["Cache-Control"] = "no-cache"
    return response

"""ASGI entry point (`python -m webapp.serve` serves it): HTTP to Django, WebSockets to Channels.

Every HTTP request goes to Django's **WSGI** handler (`limit_request_body` in front has refused
an oversized body, and one without a Content-Length, before any byte is read),
run on a pool of NETLOOM_WEB_THREADS threads by a2wsgi's bridge: one hop from the event loop to a
thread per request. Django's ASGI handler makes several (request_started, the handler, each sync
middleware, request_finished), and on this machine a plain view served 0.4x the
requests/s through it (docs/decisions/0003-web-tier.md). The bridge hands the body to Django as Django reads it,
pulling from the server with its flow control, so nothing is buffered whole.
NETLOOM_HTTP_HANDLER=asgi sends HTTP to Django's ASGI handler instead (bench/api_load.py
measures one against the other); the same URLs, middleware and views answer both ways.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# Django must be set up before anything imports models (consumers, auth middleware).
django_asgi_app = get_asgi_application()

from a2wsgi import WSGIMiddleware  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from webapp.api.body_limit import Receive, Scope, Send, limit_request_body  # noqa: E402
from webapp.api.channels_auth import (  # noqa: E402
    TokenAuthMiddlewareStack,
    allowed_hosts_origin_validator,
)
from webapp.graphs.collab.routing import websocket_urlpatterns as collab_urlpatterns  # noqa: E402
from webapp.runs.stream.routing import websocket_urlpatterns  # noqa: E402
from webapp.serving import settle_for_serving  # noqa: E402

django_wsgi_app = WSGIMiddleware(get_wsgi_application(), workers=settings.NETLOOM_WEB_THREADS)


_ALL_ASGI = settings.NETLOOM_HTTP_HANDLER == "asgi"  # the comparison of bench/api_load.py


async def django_http_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Django for one HTTP request: its WSGI handler on a thread (or its ASGI handler)."""
    await (django_asgi_app if _ALL_ASGI else django_wsgi_app)(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": limit_request_body(django_http_app),
        "websocket": allowed_hosts_origin_validator(
            TokenAuthMiddlewareStack(URLRouter(websocket_urlpatterns + collab_urlpatterns))
        ),
    }
)

# Set up: the request code imported and the garbage collector tuned for serving (webapp/serving.py).
settle_for_serving()

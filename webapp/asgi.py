"""ASGI entry point (`python -m webapp.serve` serves it): HTTP to Django, WebSockets to Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# Django must be set up before anything imports models (consumers, auth middleware).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from webapp.api.body_limit import limit_request_body  # noqa: E402
from webapp.api.channels_auth import (  # noqa: E402
    TokenAuthMiddlewareStack,
    allowed_hosts_origin_validator,
)
from webapp.runs.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": limit_request_body(django_asgi_app),
        "websocket": allowed_hosts_origin_validator(
            TokenAuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

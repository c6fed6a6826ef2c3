"""WebSocket route of graph rooms (webapp/asgi.py mounts it behind session + token authentication).

y-websocket's client connects to `<url>/<room>` with no trailing slash: both forms are accepted.
"""

from django.urls import re_path

from .consumer import GraphCollabConsumer

websocket_urlpatterns = [
    re_path(r"^ws/graphs/(?P<graph_id>[0-9]+)/collab/?$", GraphCollabConsumer.as_asgi()),
]

"""WebSocket routes of runs (webapp/asgi.py mounts them behind session + token authentication)."""

from django.urls import path

from .consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
]

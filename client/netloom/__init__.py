"""Netloom's Python client: `Client(url, token)` and the `netloom` command (`netloom.cli`).

Needs only httpx, websockets and tqdm: neither torch nor Django is imported.
"""

from netloom.client import Client
from netloom.errors import ApiError, ConnectionFailed, DatasetFailed, NetloomError, NotLoggedIn
from netloom.resources.stream import FINAL_STATUSES

__all__ = [
    "ApiError",
    "Client",
    "ConnectionFailed",
    "DatasetFailed",
    "NetloomError",
    "NotLoggedIn",
    "FINAL_STATUSES",
]
__version__ = "0.1.0"

"""The HTTP session every resource's methods share: requests, JSON, pages, error answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from netloom.errors import ApiError, ConnectionFailed


class Transport:
    """One user's HTTP session with the service (the token in every request's header)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        headers = {"Accept": "application/json", "User-Agent": "netloom-client/0.1"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.http = httpx.Client(
            base_url=self.url,
            headers=headers,
            transport=transport,
            timeout=httpx.Timeout(timeout, write=None),
            follow_redirects=False,
        )

    def close(self) -> None:
        self.http.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"cannot reach {self.url}: {exc}") from exc
        if response.status_code >= 400:
            raise _api_error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        return response.json() if response.content else None

    def _all_pages(self, path: str, params: dict[str, Any]) -> list[Any]:
        query = {key: value for key, value in params.items() if value is not None}
        page, results = 1, []
        while True:
            answer = self._json("GET", path, params={**query, "page": page, "page_size": 500})
            results.extend(answer["results"])
            if not answer.get("next"):
                return results
            page += 1


def _api_error(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    return ApiError.from_response(response.status_code, body, response.text)


def _attachment_name(response: httpx.Response, fallback: str) -> str:
    header = response.headers.get("content-disposition", "")
    match = re.search(r"filename\*=UTF-8''([^;]+)", header) or re.search(
        r'filename="?([^";]+)"?', header
    )
    name = match.group(1) if match else fallback
    from urllib.parse import unquote

    name = Path(unquote(name)).name  # never a path the server chose
    return name or quote(fallback)

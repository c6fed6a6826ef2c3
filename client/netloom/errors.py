"""What the client raises: the service's error body, or why the service could not be reached."""

from __future__ import annotations

from typing import Any


class NetloomError(Exception):
    """Base of every error the client raises; `str()` is what a user should read."""


class ApiError(NetloomError):
    """The service answered with `{"error": {"code", "message", "fields", ...}}`.

    `extra` keeps the other keys of the error (the node-keyed `errors` of a spec, the `detail`
    row/column of a bad upload, `exports` of a pending ONNX file).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or {}
        self.extra = extra or {}

    @classmethod
    def from_response(cls, status: int, body: Any, text: str = "") -> ApiError:
        """From an error answer (the service's body, or a plain one from a proxy)."""
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return cls(status, f"http_{status}", text.strip()[:300] or f"HTTP {status}")
        extra = {k: v for k, v in error.items() if k not in ("code", "message", "fields")}
        return cls(
            status,
            str(error.get("code", f"http_{status}")),
            str(error.get("message", "")),
            error.get("fields") or {},
            extra,
        )

    def as_json(self) -> dict[str, Any]:
        """The error body as the service sent it (for `--json`)."""
        return {
            "error": {
                "code": self.code,
                "message": self.message,
                "fields": self.fields,
                **self.extra,
            },
            "status": self.status,
        }

    def lines(self) -> list[str]:
        """The message, then one line per field and per node-keyed or located problem."""
        out = [f"error: {self.message} ({self.code}, HTTP {self.status})"]
        for field, messages in self.fields.items():
            for message in messages if isinstance(messages, list) else [messages]:
                out.append(f"  {field}: {message}")
        for problem in self.extra.get("errors") or []:
            if isinstance(problem, dict):
                where = problem.get("node") or "spec"
                if problem.get("field"):
                    where += f".{problem['field']}"
                out.append(
                    f"  node {where}: {problem.get('message', '')} [{problem.get('code', '')}]"
                )
        detail = self.extra.get("detail")
        if isinstance(detail, dict):
            out.append("  " + describe_location(detail))
        return out


class ConnectionFailed(NetloomError):
    """The service could not be reached (or the stream could not be resumed)."""


class NotLoggedIn(NetloomError):
    """No URL or token: neither `netloom login` nor NETLOOM_URL/NETLOOM_TOKEN."""


class DatasetFailed(NetloomError):
    """Processing an uploaded dataset failed; `error` is the engine's located error JSON."""

    def __init__(self, dataset: dict[str, Any]) -> None:
        self.dataset = dataset
        self.error = dataset.get("error") or {}
        super().__init__(describe_location(self.error))


class JobFailed(NetloomError):
    """A job on the server (GET /api/jobs/<id>/) failed or was cancelled; `error` is its error JSON."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.error = job.get("error") or {}
        message = self.error.get("message") or f"the job was {job.get('state')}"
        super().__init__(f"{job.get('kind')} job {job.get('id')} {job.get('state')}: {message}")


def describe_location(error: dict[str, Any]) -> str:
    """'row 7, column "age": not a number' from the engine's DataError JSON."""
    where = []
    if error.get("row") is not None:
        where.append(f"row {error['row']}")
    if error.get("column"):
        where.append(f'column "{error["column"]}"')
    if error.get("entry"):
        where.append(f'entry "{error["entry"]}"')
    if error.get("field"):
        where.append(f"field {error['field']}")
    message = str(error.get("message", "")) or "the dataset could not be read"
    # The engine's messages usually name the place already: say it once.
    where = [part for part in where if part.split(" ", 1)[1].strip('"') not in message]
    return f"{', '.join(where)}: {message}" if where else message

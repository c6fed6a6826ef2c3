"""No secret in a log: one `logging.Filter` that every handler the service configures carries.

What it hides, wherever it appears in a record (message, arguments, dict arguments, exception and
stack text): API tokens (`nl_...`), invitation secrets (`nli_...`), the value of an Authorization header, and the value of any
parameter, cookie or key whose name ends in token, password, passwd, secret, apikey/api_key or
sessionid (`?token=...`, `password=...`, `"password": "..."`, `sessionid=...`), and the password
in a URL (`redis://:pw@host`). The names and values that remain keep the line useful:
`GET /ws/runs/4/?token=[REDACTED]&since=0`.

Where it is attached (docs/subsystems/accounts.md, "No secret in a log"):
- Django's LOGGING (webapp/settings.py) names it on its handler, and `configure_logging` (Django's
  LOGGING_CONFIG) puts it on every other handler the process has by then (Django's own, and the
  HTTP or stream server's that configured logging before Django was set up);
- the stream server's and the HTTP server's logging configurations (`uvicorn_log_config`,
  `granian_log_config`, used by webapp/serve.py), and Celery's (webapp/celery.py, on its setup
  signals);
- `redact_lines` for output that is not Python logging: nginx's, which webapp/serve.py reads
  through pipes (its error log writes the request line as sent; its access log hides query values
  by itself, with the log format in webapp/serve.py).

This module imports nothing from Django: the servers configure their logging with it before
Django is set up.
"""

from __future__ import annotations

import copy
import logging
import logging.config
import re
from collections.abc import Iterable
from typing import IO, Any

MASK = "[REDACTED]"

# The names whose values are secret: a parameter, cookie or key named so, or ending so
# ("access_token", "csrfmiddlewaretoken", "new_password1", "HTTP_AUTHORIZATION").
_NAME = r"[A-Za-z0-9_-]*(?:token|password\d?|passwd|secret|api_?key|sessionid)"
# A dict key whose whole value is secret.
SECRET_KEY = re.compile(rf"^(?:{_NAME}|[A-Za-z0-9_-]*(?:authorization|cookie))$", re.IGNORECASE)

# Each rule runs only on text that holds one of its words (in lower case): most lines hold none,
# and a few substring checks cost far less than the patterns.
_SECRET_WORDS = ("token", "passw", "secret", "apikey", "api_key", "sessionid")
_RULES: list[tuple[tuple[str, ...], re.Pattern[str], Any]] = [
    # A Netloom API token, wherever it stands (TOKEN_PREFIX + 43 url-safe characters).
    (("nl_",), re.compile(r"\bnl_[A-Za-z0-9_-]{16,}"), f"nl_{MASK}"),
    # A team invitation's secret (INVITATION_PREFIX): in the accept page's path and its API's.
    (("nli_",), re.compile(r"\bnli_[A-Za-z0-9_-]{16,}"), f"nli_{MASK}"),
    # An Authorization header's value, as a header line, a WSGI/ASGI key or a dict entry:
    # "Authorization: Bearer x", "'HTTP_AUTHORIZATION': 'Token x'", "(b'authorization', b'Basic x')".
    (("authorization",), re.compile(r"(?i)(authorization['\"]?\s*[:=,]\s*(?:b?['\"])?+)"
                r"(?!(?:(?:bearer|basic|token|digest)\s+)?\[REDACTED\])"
                r"((?:bearer|basic|token|digest)\s+)?[^\s'\",;&)]+"),
     lambda match: f"{match[1]}{match[2] or ''}{MASK}"),
    # "Bearer x" on its own (a header value logged without its name).
    (("bearer",), re.compile(r"(?i)\b(bearer)\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {MASK}"),
    # "key": "value" / 'key': 'value' (JSON, a dict's repr).
    (_SECRET_WORDS, re.compile(rf"(?i)(['\"]{_NAME}['\"]\s*:\s*)(b?)(['\"])(?:\\.|(?!\3).)*\3"), rf"\1\2\3{MASK}\3"),
    # The password in a URL's user part: redis://:pw@host, postgres://user:pw@host/db.
    (("@",), re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@]*:)(?!\[REDACTED\]@)[^@\s/]+@"), rf"\1{MASK}@"),
    # key=value in a query string, a form body, a cookie header, keyword arguments.
    (_SECRET_WORDS, re.compile(rf"(?i)(?<![A-Za-z0-9_-])({_NAME}=)(?:'[^']*'|\"[^\"]*\"|[^&\s;,'\")<>]*)"), rf"\1{MASK}"),
]


def redact(text: str) -> str:
    """`text` with every secret it holds replaced by [REDACTED] (idempotent)."""
    lowered = text.lower()
    for words, pattern, replacement in _RULES:
        for word in words:
            if word in lowered:
                text = pattern.sub(replacement, text)
                break
    return text


def _redact_value(value: Any, *, key: Any = None) -> Any:
    """A log argument with its secrets hidden; numbers and other plain values stay as they are
    (a %d in the message still formats them)."""
    if isinstance(key, str) and SECRET_KEY.match(key) and value is not None:
        return MASK
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        redacted = redact(value.decode("utf-8", "replace"))
        return value if redacted == value.decode("utf-8", "replace") else redacted.encode()
    if isinstance(value, dict):
        return {k: _redact_value(v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact_value(item) for item in value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    # Any other object (a request, an exception): its text, when that text holds a secret.
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - a broken __str__ must not lose the record
        return value
    redacted = redact(text)
    return value if redacted == text else redacted


class RedactingFilter(logging.Filter):
    """Hides secrets in a record before any handler writes it; never drops a record."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003 - logging's name
        if not record.args:
            record.msg = _redact_value(record.msg)
        elif isinstance(record.args, dict):
            # "%(name)s" formats (logging unwraps a lone dict): hidden by key and text, always,
            # since a formatter of its own may show keys the message does not.
            record.args = _redact_value(record.args)
            self._hide_what_is_left(record)
        elif _holds_secret(record) is not False:
            # The arguments one by one, so that a formatter that reads them (uvicorn's access
            # line) still finds them; the format itself only as part of the whole message
            # (hiding "?token=%s" in it would leave an argument over). A format that does not fit
            # too: logging then prints the arguments as they are.
            record.args = tuple(_redact_value(arg) for arg in record.args)
            self._hide_what_is_left(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True

    @staticmethod
    def _hide_what_is_left(record: logging.LogRecord) -> None:
        """A secret in the format, or split over it and an argument: the whole message, formatted
        and hidden, replaces them."""
        if _holds_secret(record):
            record.msg, record.args = redact(record.getMessage()), None


def _holds_secret(record: logging.LogRecord) -> bool | None:
    """Whether the record's message, formatted, shows a secret; None when the format does not fit
    its arguments."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - logging reports it when a handler formats the record
        return None
    return redact(message) != message


def redact_handlers(handlers: Iterable[logging.Handler]) -> None:
    """Attach the filter to each handler that lacks it."""
    for handler in handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def redact_every_handler() -> None:
    """Attach the filter to every handler of the root logger and of every logger created so far."""
    loggers = [logging.getLogger()] + [
        item for item in logging.Logger.manager.loggerDict.values() if isinstance(item, logging.Logger)
    ]
    for logger in loggers:
        redact_handlers(logger.handlers)


def configure_logging(config: dict[str, Any]) -> None:
    """Django's LOGGING_CONFIG: dictConfig, then the filter on every handler the process has."""
    logging.config.dictConfig(config)
    redact_every_handler()


FILTERS = {"redact": {"()": "webapp.logredact.RedactingFilter"}}


def with_redaction(config: dict[str, Any]) -> dict[str, Any]:
    """A dictConfig with the filter on every handler it defines (a copy)."""
    config = copy.deepcopy(config)
    config.setdefault("filters", {}).update(FILTERS)
    for handler in config.get("handlers", {}).values():
        handler["filters"] = [*handler.get("filters", []), "redact"]
    return config


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's own logging configuration, every handler filtered (its WebSocket lines carry the
    path with its query: `"WebSocket /ws/runs/4/?token=..." [accepted]`)."""
    from uvicorn.config import LOGGING_CONFIG

    return with_redaction(LOGGING_CONFIG)


def granian_log_config() -> dict[str, Any]:
    """granian's own logging configuration, every handler filtered (`--log-config`)."""
    from granian.log import LOGGING_CONFIG

    return with_redaction(LOGGING_CONFIG)


def redact_lines(source: IO[bytes], sink: IO[bytes]) -> None:
    """Copy `source` to `sink` line by line, secrets hidden, until `source` ends (a server's
    output that does not go through Python's logging: nginx's error log)."""
    for line in iter(source.readline, b""):
        try:
            sink.write(redact(line.decode("utf-8", "replace")).encode())
            sink.flush()
        except (OSError, ValueError):  # the sink closed: keep reading so the server never blocks
            continue

"""The one log filter (webapp/logredact.py): no token, password or session id survives a record."""

from __future__ import annotations

import io
import logging

import pytest

from webapp.logredact import (
    MASK,
    RedactingFilter,
    redact,
    redact_every_handler,
    redact_lines,
    with_redaction,
)

TOKEN = "nl_" + "Zq8xW2vK9pL4mN7bR1tY6uH3jG5fD0sA" + "-_c9e"
PASSWORD = "correct horse battery staple"
SESSION = "k2m9z8x7c6v5b4n3m2a1s0d9f8g7h6j5"


def _written(*args, exc: BaseException | None = None, msg: str = "%s", stack: bool = False) -> str:
    """What a handler with the filter writes for one record."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter())
    logger = logging.Logger("test.logredact")
    logger.addHandler(handler)
    if exc is not None:
        try:
            raise exc
        except BaseException:
            logger.exception(msg, *args)
    else:
        logger.warning(msg, *args, stack_info=stack)
    return out.getvalue()


@pytest.mark.parametrize(("line", "kept"), [
    (f'127.0.0.1:0 - "WebSocket /ws/runs/4/?token={TOKEN}&since=0" [accepted]',
     '"WebSocket /ws/runs/4/?token=[REDACTED]&since=0" [accepted]'),
    ("GET /api/runs/?page=2&access_token=opaque-value HTTP/1.1", "?page=2&access_token=[REDACTED] HTTP/1.1"),
    (f"Authorization: Bearer {TOKEN}", "Authorization: Bearer [REDACTED]"),
    ("authorization: Basic dXNlcjpjb3JyZWN0", "authorization: Basic [REDACTED]"),
    (f"{{'HTTP_AUTHORIZATION': 'Token abc123def456', 'HTTP_COOKIE': 'csrftoken=c5rf; sessionid={SESSION}'}}",
     "{'HTTP_AUTHORIZATION': 'Token [REDACTED]', 'HTTP_COOKIE': 'csrftoken=[REDACTED]; sessionid=[REDACTED]'}"),
    (f"[(b'host', b'x'), (b'authorization', b'Bearer {TOKEN}')]", "(b'authorization', b'Bearer [REDACTED]')"),
    (f'{{"username": "alice", "password": "{PASSWORD}", "name": "x"}}',
     '{"username": "alice", "password": "[REDACTED]", "name": "x"}'),
    (f"username=alice&password={PASSWORD.replace(' ', '+')}&next=/", "username=alice&password=[REDACTED]&next=/"),
    (f"authenticate(username='alice', password='{PASSWORD}')", "authenticate(username='alice', password=[REDACTED])"),
    (f"Set-Cookie: sessionid={SESSION}; HttpOnly", "Set-Cookie: sessionid=[REDACTED]; HttpOnly"),
    ("redis://:r3dis-pw@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
    (f"a token was seen: {TOKEN}.", "a token was seen: nl_[REDACTED]."),
    ('"GET /api/invitations/nli_qxKHbS52SMey9ZpxPBJ11IwBw98X-U39M2VkThJIAiM/ HTTP/1.1" 200',
     '"GET /api/invitations/nli_[REDACTED]/ HTTP/1.1" 200'),
])
def test_every_kind_of_secret_is_hidden_and_the_rest_of_the_line_kept(line: str, kept: str) -> None:
    hidden = redact(line)
    assert kept in hidden
    for secret in (TOKEN, PASSWORD, PASSWORD.replace(" ", "+"), SESSION, "opaque-value", "dXNlcjpjb3JyZWN0",
                   "abc123def456", "r3dis-pw", "c5rf"):
        assert secret not in hidden
    assert redact(hidden) == hidden  # hiding twice changes nothing


def test_words_that_only_look_like_secrets_stay() -> None:
    line = "too_many_tokens: 100 tokens; token_count=3; the authorization failed for alice; key=train/loss"
    assert redact(line) == line


def test_a_secret_in_the_arguments_is_hidden_and_numbers_still_format() -> None:
    written = _written(f"/ws/runs/7/?token={TOKEN}", 403, msg='"WebSocket %s" %d')
    assert written == '"WebSocket /ws/runs/7/?token=[REDACTED]" 403\n'


def test_a_secret_in_dict_arguments_is_hidden_by_its_key_and_its_text() -> None:
    written = _written({"user": "alice", "password": PASSWORD, "path": f"/x/?token={TOKEN}", "tries": 3},
                       msg="%(user)s %(password)s %(path)s %(tries)d")
    assert written == f"alice {MASK} /x/?token={MASK} 3\n"


def test_a_secret_in_nested_arguments_and_objects_is_hidden() -> None:
    class Request:
        def __str__(self) -> str:
            return f"<Request GET /api/runs/?token={TOKEN}>"

    written = _written([{"Authorization": f"Bearer {TOKEN}"}], Request(), msg="%s %s")
    assert TOKEN not in written and "'Authorization': '[REDACTED]'" in written
    assert "<Request GET /api/runs/?token=[REDACTED]>" in written


def test_a_format_that_does_not_fit_its_arguments_does_not_print_them_as_they_are(capsys) -> None:
    logging.raiseExceptions, raised = True, logging.raiseExceptions
    try:
        _written(f"?token={TOKEN}", msg="%s %s")  # one argument short: logging reports the record
    finally:
        logging.raiseExceptions = raised
    report = capsys.readouterr().err
    assert "Arguments:" in report and TOKEN not in report


def test_a_secret_split_between_the_format_and_its_argument_is_hidden() -> None:
    assert _written(TOKEN[3:], msg="token=nl_%s") == f"token={MASK}\n"


def test_a_secret_in_an_exceptions_text_and_in_a_stack_is_hidden() -> None:
    written = _written(msg="sign-in failed", exc=ValueError(f"bad credentials {{'password': '{PASSWORD}'}} {TOKEN}"))
    assert "Traceback" in written and "ValueError: bad credentials {'password': '[REDACTED]'} nl_[REDACTED]" in written
    assert PASSWORD not in written and TOKEN not in written
    assert TOKEN not in _written(f"?token={TOKEN}", stack=True)


def test_a_configuration_gets_the_filter_on_every_handler() -> None:
    config = with_redaction({"version": 1, "handlers": {"a": {"class": "logging.StreamHandler"},
                                                        "b": {"class": "logging.NullHandler", "filters": []}}})
    assert all(handler["filters"] == ["redact"] for handler in config["handlers"].values())
    assert config["filters"]["redact"] == {"()": "webapp.logredact.RedactingFilter"}


def test_every_handler_of_every_logger_gets_the_filter_once() -> None:
    handler = logging.StreamHandler(io.StringIO())
    logger = logging.getLogger("test.logredact.every")
    logger.addHandler(handler)
    try:
        redact_every_handler()
        redact_every_handler()
        assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
        logger.propagate = False
        logger.warning("GET /?token=%s", TOKEN)
        assert handler.stream.getvalue() == f"GET /?token={MASK}\n"  # type: ignore[attr-defined]
    finally:
        logger.removeHandler(handler)


def test_output_that_is_not_logging_is_copied_line_by_line_with_secrets_hidden() -> None:
    nginx = (f'2026/01/01 [error] 7#7: *1 upstream prematurely closed, request: "GET /ws/runs/1/?token={TOKEN} '
             'HTTP/1.1", upstream: "http://unix:/tmp/s.sock:/ws/runs/1/?token=' + TOKEN + '"\nsecond line\n')
    sink = io.BytesIO()
    redact_lines(io.BytesIO(nginx.encode()), sink)
    assert sink.getvalue().decode() == nginx.replace(TOKEN, MASK)


def test_djangos_configured_handlers_carry_the_filter() -> None:
    # webapp/settings.py's LOGGING_CONFIG ran when Django was set up (pytest-django).
    handlers = {h for name in ("", "django", "django.request", "django.server")
                for h in logging.getLogger(name).handlers}
    assert handlers and all(any(isinstance(f, RedactingFilter) for f in h.filters) for h in handlers)

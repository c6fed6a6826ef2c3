"""A refused request logs one line; a server error keeps its traceback (serving.server.ClientErrorsOnOneLine)."""

from __future__ import annotations

import io
import logging

from kserve.errors import InvalidInput

from serving.server import ClientErrorsOnOneLine


def logged(exc: Exception) -> str:
    """What a handler writes for kserve's exception handlers' call, `logger.error("Exception:", exc_info=exc)`."""
    out = io.StringIO()
    logger = logging.Logger("kserve")  # kserve's logger's name, outside the logging tree
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.addFilter(ClientErrorsOnOneLine())
    try:
        raise exc
    except Exception as raised:
        logger.error("Exception:", exc_info=raised)
    return out.getvalue()


def test_bad_input_is_one_warning_line_naming_the_column() -> None:
    text = logged(InvalidInput("sepal width (cm): 'wide' is not a number\nsecond line"))
    assert text == "WARNING refused a request (400 InvalidInput): sepal width (cm): 'wide' is not a number second line\n"


def test_a_server_error_keeps_its_traceback() -> None:
    text = logged(RuntimeError("the network failed"))
    assert text.startswith("ERROR Exception:\nTraceback (most recent call last):")
    assert "RuntimeError: the network failed" in text

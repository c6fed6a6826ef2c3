"""The error a run fails with; its message is shown to the user as is."""

from __future__ import annotations

__all__ = ["TrainingError"]


class TrainingError(RuntimeError):
    """Training could not go on (NaN loss, out of memory, bad config for this data or device)."""

    def __init__(self, message: str, *, step: int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.field = field

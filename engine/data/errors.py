"""The one error type every bad dataset input raises."""

from __future__ import annotations

from typing import Any


class DataError(ValueError):
    """A problem with a dataset or recipe, located by row, column, archive entry or recipe field.

    Rows count the CSV header as row 1, as a spreadsheet shows them; for tensor files
    the row is the 0-based sample index.
    """

    def __init__(
        self,
        message: str,
        *,
        row: int | None = None,
        column: str | None = None,
        entry: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.row = row
        self.column = column
        self.entry = entry
        self.field = field
        super().__init__(str(self))

    def location(self) -> str:
        """Where the problem is, in words ("row 7, column 'age'"), or "" when nowhere in particular."""
        parts = []
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        if self.entry is not None:
            parts.append(f"entry '{self.entry}'")
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.column is not None:
            parts.append(f"column '{self.column}'")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.location()
        return f"{where}: {self.message}" if where else self.message

    def to_json(self) -> dict[str, Any]:
        """The error as the API returns it; "message" is the full sentence, location included."""
        return {
            "message": str(self),
            "row": self.row,
            "column": self.column,
            "entry": self.entry,
            "field": self.field,
        }

"""A team's saved views of the runs list (RunView): create, change, delete, each checked first.

A view's filter must parse and its ordering must be one the list takes (the same checks as
`GET /api/runs/?filter=&ordering=`, so a saved view always opens); its columns are keys of the
runs table. Names are unique in a team.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from webapp.accounts.models import Team
from webapp.errors import DomainError

from .models import Run, RunView
from .query import parse_filter
from .selectors import runs_filter

COLUMNS_MAX = 100
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\/\-:@]{0,199}$")


def _checked(*, filter: str | None, ordering: str | None, columns: Any) -> None:  # noqa: A002
    if filter:
        parse_filter(filter)
    if ordering:
        runs_filter(Run.objects.none(), ordering=ordering)  # raises naming `ordering`
    if columns is not None:
        if not isinstance(columns, list) or len(columns) > COLUMNS_MAX:
            raise DomainError("invalid", f"columns is a list of at most {COLUMNS_MAX} column keys.", field="columns")
        for index, column in enumerate(columns):
            if not isinstance(column, str) or not _COLUMN.match(column):
                raise DomainError("invalid", f"columns[{index}] is not a column key (e.g. metrics.val/accuracy, "
                                  "config.optimizer.lr, nodes.fc1.out_features).", field=f"columns.{index}")


def run_view_create(
    *, team: Team, name: str, filter: str = "", ordering: str = "",  # noqa: A002
    columns: list[str] | None = None, created_by: AbstractBaseUser | None,
) -> RunView:
    """A new saved view (DomainError name_taken when the team has one of that name)."""
    _checked(filter=filter, ordering=ordering, columns=columns)
    try:
        with transaction.atomic():
            return RunView.objects.create(team=team, name=name, filter=filter, ordering=ordering,
                                          columns=columns or [], created_by=created_by)
    except IntegrityError:
        raise DomainError("name_taken", f"Team {team.name} already has a view named {name!r}.", field="name") from None


def run_view_update(*, view: RunView, **changes: Any) -> RunView:
    """Change a view's name, filter, ordering or columns (checked as at creation)."""
    _checked(filter=changes.get("filter"), ordering=changes.get("ordering"), columns=changes.get("columns"))
    for field, value in changes.items():
        setattr(view, field, value)
    try:
        with transaction.atomic():
            view.save()
    except IntegrityError:
        raise DomainError("name_taken", f"This team already has a view named {view.name!r}.", field="name") from None
    return view

"""Page-number pagination with a client-chosen `?page_size=`."""

from typing import Any

from rest_framework import exceptions, pagination
from rest_framework.request import Request


class PageNumberPagination(pagination.PageNumberPagination):
    """`?page=2&page_size=20`; answers {"count", "next", "previous", "results"}.

    A `page_size` that is not a whole number from 1 to 500 is a 400 naming it (DRF would
    silently use the default, so a typo'd request would look like a short list).
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            raise exceptions.ValidationError(
                {"page_size": [f"A whole number from 1 to {self.max_page_size}."]}
            )
        return size

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(
                    {"minimum": 1, "maximum": self.max_page_size, "default": self.page_size}
                )
            elif parameter["name"] == self.page_query_param:
                parameter["schema"].update({"minimum": 1})
        return parameters

"""Page-number pagination with a client-chosen `?page_size=`."""

from rest_framework import pagination


class PageNumberPagination(pagination.PageNumberPagination):
    """`?page=2&page_size=20`; answers {"count", "next", "previous", "results"}."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

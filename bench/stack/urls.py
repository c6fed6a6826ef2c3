"""The bench stack's URLs: the service's, plus two baselines for bench/api_load.py.

- `/bench/bare/`: a plain Django view answering a constant JSON body: the ceiling of the server,
  the middleware and the ASGI handler on this machine, with no authentication and no query.
- `/bench/token/`: a DRF view with the service's authentication and permission classes answering
  the same body: the ceiling of one token lookup (one query) and DRF's request handling.

`GET /api/runs/<id>/` is then read against both: what the run itself costs on top of them.
"""

from django.http import JsonResponse
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

BODY = {"id": 1, "status": "succeeded", "detail": "a constant body of the bench's baselines"}


def bare(request):  # noqa: ANN001, ANN201 - a bench fixture, not an endpoint of the service
    return JsonResponse(BODY)


class TokenView(APIView):
    """The service's default authentication and permission classes, then a constant body."""

    def get(self, request):  # noqa: ANN001, ANN201
        return Response(BODY)


urlpatterns = [
    path("bench/bare/", bare),
    path("bench/token/", TokenView.as_view()),
    path("", include("webapp.urls")),
]

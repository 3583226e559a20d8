"""The REST API's pages (DRF settings import this early: it imports nothing of the project)."""

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    """limit/offset pages, with values the database can hold: a limit over max_limit is max_limit, an
    offset past any table is the end (a 30-digit limit was a 500: bigint out of range)."""

    max_limit = 10_000
    MAX_OFFSET = 2**62

    def get_offset(self, request):
        return min(super().get_offset(request), self.MAX_OFFSET)

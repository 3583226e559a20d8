"""Pages of a long list without counting it: LIMIT per_page + 1 at an OFFSET, the extra row saying whether
a next page exists. For lists that can hold a rater's million judgments, where Django's Paginator would
count every row first. Same attributes as a Django Page (the templates' rating/_pages.html reads them);
`paginator.num_pages` is known only when the caller passes a stored `total`."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class _Pages:
    num_pages: int | None
    count: int | None


class UncountedPage:
    def __init__(self, queryset, number, per_page: int = 50, total: int | None = None):
        try:
            self.number = max(int(number or 1), 1)
        except (TypeError, ValueError):
            self.number = 1
        num_pages = max(math.ceil(total / per_page), 1) if total is not None else None
        if num_pages is not None:
            self.number = min(self.number, num_pages)
        start = (self.number - 1) * per_page
        rows = list(queryset[start : start + per_page + 1])
        self.object_list = rows[:per_page]
        self._more = len(rows) > per_page
        self.paginator = _Pages(num_pages, total)

    def has_next(self) -> bool:
        return self._more

    def has_previous(self) -> bool:
        return self.number > 1

    def has_other_pages(self) -> bool:
        return self.has_next() or self.has_previous()

    def next_page_number(self) -> int:
        return self.number + 1

    def previous_page_number(self) -> int:
        return self.number - 1

    def __iter__(self):
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)

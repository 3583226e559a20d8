"""Refuse URLs carrying control characters before any view sees them.

PostgreSQL text cannot hold NUL, so a filter or a lookup on one raised a 500; other control characters
are never part of a pool name, an id or a search, and we do not want them in logs or in the database.
One middleware, early in the chain, answers a plain one-line 400 (query string: a parameter's name or
value) or 404 (the path: no page has such a name) instead. Tab, newline and carriage return are left
alone (pasted text); C0 controls, DEL and the C1 range are refused. Request bodies are the forms' and
serializers' business (Django's and DRF's CharField already refuse NUL).
"""

import re
from collections.abc import Callable

from django.http import HttpResponseBadRequest, HttpResponseNotFound

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def has_control_characters(text: str) -> bool:
    return CONTROL.search(text) is not None


class ControlCharacterGuardMiddleware:
    def __init__(self, get_response: Callable):
        self.get_response = get_response

    def __call__(self, request):
        if has_control_characters(request.path_info):
            return HttpResponseNotFound(
                "Not found: the path holds a control character.\n", content_type="text/plain"
            )
        for name, values in request.GET.lists():
            if has_control_characters(name) or any(has_control_characters(v) for v in values):
                return HttpResponseBadRequest(
                    f"Bad request: the query parameter {name!a} holds a control character.\n",
                    content_type="text/plain",
                )
        return self.get_response(request)

"""The pool's guidelines, Markdown to safe HTML: one function for the raters' page and the admin's preview."""

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe


def render_markdown(text: str) -> SafeString:
    """Markdown (the pool's guidelines) to HTML, cleaned by nh3: no script, style, handlers or javascript: links."""
    return mark_safe(nh3.clean(markdown.markdown(text or "", extensions=["sane_lists"])))

"""``syntax``: the Python of every page and every Python file parses (and is UTF-8 text).

A page's Python blocks are read as one unit, in page order (:func:`xnnguide.doccheck.pages.page_unit`); the
problems come from reading the units, which the ``transform-passes`` and ``api`` rules read too.
"""

from __future__ import annotations

from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding

NAME = "syntax"


def check(context: Context) -> list[Finding]:
    return [problem for _, problems in context.units for problem in problems]

"""Drift checks: README, pages and recipes must say the same thing, and all of it must run.

``python -m xnnguide.doccheck README.md docs snippets`` (:mod:`.__main__`) reads Markdown (MyST),
reStructuredText and Python files (:mod:`.pages`) and applies the six rules of issue 15, listed in
:data:`.checker.RULES` and explained on the Contributing page (:mod:`.transforms` is rule 1, :mod:`.api`
rule 4, :mod:`.execute` runs blocks for rules 5 and 6). Each finding prints as
``path:line: rule: what is wrong — how to fix``. Links, toctrees, includes and quoted messages are left
to ``sphinx-build -n -W``.
"""

from xnnguide.doccheck.checker import Options, Report, check
from xnnguide.doccheck.pages import Finding, InputError

__all__ = ["Finding", "InputError", "Options", "Report", "check"]

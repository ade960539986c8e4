"""Drift checks: README, pages and recipes must say the same thing, and all of it must run.

``python -m xnnguide.doccheck README.md docs snippets`` (:mod:`.__main__`) reads Markdown (MyST),
reStructuredText and Python files (:mod:`.pages`), hands what it found to the rules (:mod:`.context`) and
applies them (:mod:`.checker`). The rules are the modules of :mod:`.rules`, one each, known by name
(``--rules fate,api``) and explained on the Contributing page. Each finding prints as
``path:line: rule: what is wrong — how to fix``, ``rule`` being the rule's name. Links, toctrees, includes
and quoted messages are left to ``sphinx-build -n -W``.
"""

from xnnguide.doccheck.checker import Report, check
from xnnguide.doccheck.context import Options
from xnnguide.doccheck.pages import Finding, InputError

__all__ = ["Finding", "InputError", "Options", "Report", "check"]

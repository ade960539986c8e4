"""Drift checks: README, pages and recipes must say the same thing, and all of it must run.

``python -m xnnguide.doccheck README.md docs snippets`` reads any tree of
Markdown (MyST), reStructuredText and Python files and applies seven rules:

1. *fate* — every Python code block has a fate: a ``literalinclude`` of a
   snippet region, a copy verified identical to named regions (a
   ``snippet: PATH REGION...`` comment above it), a doctest (``>>>``), a block
   executed in page order, or a block marked ``doccheck: not-run reason=...``;
2. *transform-passes* — every XNNPACK lowering runs ``get_transform_passes()``;
3. *api* — every import, attribute path and keyword argument used from torch,
   executorch, torchao and torchvision exists in the installed packages;
4. *duplicate* — no prose paragraph appears twice (near-copies included);
5. *includes* — include markers exist; every snippet region is shown or
   declared ``# [gallery-only name]``;
6. *ledger* / *run* / *recipe* — with ``--run`` the blocks are executed (*run*); with ``--build`` the
   execution ledger and run records of the last Sphinx build are checked, and
   recipe failures are reported at their real line;
7. *links* / *toctree* — pages are in a toctree, links and anchors resolve.

Each finding prints as ``path:line: rule: what is wrong — how to fix``; the
exit status is 0 when clean, 1 with findings, 2 on a usage error or
unreadable input. :func:`check` is the library entry point (used by the
tests and by :mod:`xnnguide.doccheck.sphinxext`, which publishes the ledger).
"""

from xnnguide.doccheck.checker import Options, Report, check
from xnnguide.doccheck.model import Finding, InputError

__all__ = ["Finding", "InputError", "Options", "Report", "check"]

"""Drift checks: README, pages and recipes must say the same thing, and all of it must run.

``python -m xnnguide.doccheck README.md docs snippets`` (:mod:`.__main__`) reads any tree of Markdown
(MyST), reStructuredText and Python files (:mod:`.pages`) and applies the rules of issue 15
(:mod:`.checker`), each finding printed as ``path:line: rule: what is wrong — how to fix``:

1. *transform-passes*: every XNNPACK lowering runs ``get_transform_passes()`` (:mod:`.transforms`);
2. *fate*, *regions*: a copy of recipe regions under a ``snippet:`` comment is identical to them,
   and every region is shown by a page or declared ``# [gallery-only name]``;
3. *duplicate*: no prose paragraph appears twice;
4. *api*: what the code uses from torch, executorch, torchao and torchvision exists in the
   installed packages, read statically with griffe (:mod:`.api`);
5. *fate*, *syntax*, *run*: every Python block is included from a recipe, a verified copy, a
   doctest, run in page order (``--run``, :mod:`.execute`), or marked ``doccheck: not-run reason=...``;
6. *ledger*, *recipe*: with ``--build``, the last build's execution ledger (written by the
   directive of :mod:`xnnguide.site.ledger`) and every recipe's run record.

Links, toctrees and includes are left to ``sphinx-build -n -W``.
"""

from xnnguide.doccheck.checker import Options, Report, check
from xnnguide.doccheck.pages import Finding, InputError

__all__ = ["Finding", "InputError", "Options", "Report", "check"]

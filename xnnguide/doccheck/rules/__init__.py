"""The checker's rules, one module each, known by name: ``transform_passes.py`` is the rule ``transform-passes``.

Every rule module has the same shape: ``NAME`` (its file name, ``-`` for ``_``), a docstring saying what it
checks, and ``check(context: Context) -> list[Finding]``, which reads what the checker found
(:class:`~xnnguide.doccheck.context.Context`) and returns the rule's findings. The list of rules is this
package's modules: adding a rule is adding a module. Modules are imported when their rule runs, so that a
check without ``api`` never imports griffe.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType

#: Every rule's name, from the modules of this package.
NAMES = tuple(sorted(info.name.replace("_", "-") for info in pkgutil.iter_modules(__path__)))
#: The rules about what became of each code block: the execution ledger publishes their findings.
BLOCK_RULES = ("fate", "syntax", "run", "ledger")


class UnknownRule(ValueError):
    """A rule name no module of this package has."""


def known(names: Iterable[str]) -> frozenset[str]:
    """*names*, each a rule's; :class:`UnknownRule` for the first (in sorted order) that is not."""
    names = frozenset(names)
    if unknown := sorted(names - set(NAMES)):
        raise UnknownRule(f"unknown rule {unknown[0]!r}; the rules are {', '.join(NAMES)}")
    return names


def load(name: str) -> ModuleType:
    """The module of the rule *name*."""
    known([name])
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")

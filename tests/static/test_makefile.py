"""The Makefile: every variable it expands is set in it or by make itself, so that a contributor reads
each knob (``make bench BENCH_ARGS=...``) where it is declared, with its default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.static

#: Variables GNU make sets itself.
MAKE_SETS = frozenset({"MAKE", "CURDIR", "MAKEFLAGS", "MAKECMDGOALS", "SHELL", "MAKEFILE_LIST"})
# $(NAME) or ${NAME}, but not $$(...), the shell's command substitution in a recipe.
_EXPANDED = re.compile(r"(?<!\$)\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]")
_SET = re.compile(r"^\s*(?:export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\?|:|::|\+|!)?=", re.MULTILINE)


def undeclared(makefile: Path) -> list[str]:
    """The variables *makefile* expands but neither sets nor gets from make, with the line of their first use."""
    text = makefile.read_text(encoding="utf-8")
    declared = set(_SET.findall(text)) | MAKE_SETS
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        for name in _EXPANDED.findall(line):
            if name not in declared:
                found.setdefault(name, f"{makefile.name}:{number}: $({name}) is expanded but never set")
    return list(found.values())


def test_every_variable_the_makefile_expands_is_declared():
    assert undeclared(ROOT / "Makefile") == []


def test_an_undeclared_variable_is_reported_with_its_line(tmp_path):
    makefile = tmp_path / "Makefile"
    makefile.write_text("ARGS ?=\nrun:\n\techo $(ARGS) $$(date) $(MAKE)\n\techo ${OTHER}\n")
    assert undeclared(makefile) == ["Makefile:4: $(OTHER) is expanded but never set"]


def test_make_test_names_its_set_up_steps_as_prerequisites():
    """The environment, Chromium and the ARM recipe's tools are set-up steps `make test` declares, not installs
    hidden in its recipe."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    # The rule line, not a target-specific variable such as `test: SHELL := /bin/bash`.
    [rule] = re.findall(r"^test:(?![^#\n]*=)([^#\n]*)", text, re.MULTILINE)
    assert rule.split() == ["venv", "browser", "aarch64"], rule
    recipe = text.split(f"\ntest:{rule}", 1)[1].split("\n\n", 1)[0]
    assert "$(MAKE) --no-print-directory browser" not in recipe and "apt-get" not in recipe
    assert "pip download" not in recipe and "aarch64" not in recipe.split("\n", 1)[1]

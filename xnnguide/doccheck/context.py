"""What the checker hands to every rule: the options, the project's files, the pages read, and what the checker
made of them (every block's fate, the outcome of running blocks, the execution ledger)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from xnnguide.core.paths import display
from xnnguide.doccheck import pages
from xnnguide.doccheck.pages import Document, Finding, Unit
from xnnguide.doccheck.rules import NAMES


@dataclass
class Options:
    paths: list[Path]
    root: Path = field(default_factory=Path.cwd)
    conf: Path | None = None
    rules: frozenset[str] = frozenset(NAMES)  # a rule that needs --run or --build finds nothing without it
    run: bool = False  # execute doctest and page-order blocks
    build: bool = False  # read the last build's ledger and run records
    gallery: Path | None = None


@dataclass
class Project:
    """The files to check, and what ``conf.py`` says about them."""

    root: Path
    doc_files: list[Path]
    python_files: list[Path]
    source_dirs: list[Path]
    recipes: list[Path]
    gallery: Path | None
    myst_extensions: tuple[str, ...]


@dataclass
class Context:
    """The input of every rule. Rules only read it, except ``transform-passes``, which adds to *exemptions*."""

    options: Options
    project: Project
    documents: list[Document]
    fate_findings: list[Finding]  # the blocks that assigning fates left without one, and why
    shown_regions: dict[Path, set[str]]  # by resolved recipe path: the regions pages and READMEs show
    outcomes: dict[int, tuple] | None  # of the blocks that ran, by id(block): (status, seconds, finding); None: not run
    ledger: list[dict]  # what became of every code block
    exemptions: list[tuple[str, int, str]] = field(default_factory=list)  # lowerings without passes, on purpose

    @cached_property
    def python_files(self) -> list[Path]:
        """The Python files given, and the recipes pages show from elsewhere."""
        shown = (Path(display(key)) for key in self.shown_regions if key.suffix == ".py" and key.is_file())
        return list({path.resolve(): path for path in [*self.project.python_files, *shown]}.values())

    @cached_property
    def units(self) -> list[tuple[Unit, list[Finding]]]:
        """Every page's Python and every Python file as a unit, with the syntax problems found reading it; built
        on first use, since only the rules that read code need it."""
        return [*(pages.page_unit(display(d.path), d.blocks, d.lines) for d in self.documents),
                *(pages.file_unit(path, display(path)) for path in self.python_files)]

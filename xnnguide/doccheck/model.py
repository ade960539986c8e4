"""What the checker reads from a page, and what it reports.

Parsers (:mod:`.markdown`, :mod:`.rst`) turn each file into a :class:`Document`:
its code blocks, prose paragraphs, directives that point at other files,
links, toctrees and doccheck markers, each with the 1-based line it starts on.
The rules only ever look at these objects, never at raw text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: Languages whose blocks are Python source (``pycon`` holds ``>>>`` sessions).
PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "py3", "pycon", "ipython", "ipython3", "ipython2", "sage"})


class InputError(Exception):
    """Input the checker cannot read at all (exit status 2)."""


@dataclass(frozen=True, order=True)
class Finding:
    """One problem: ``path:line: rule: what is wrong — how to fix``."""

    path: str
    line: int
    rule: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.path}:{self.line}: {self.rule}: {self.message}"
        return f"{text} — {self.fix}" if self.fix else text


@dataclass
class Marker:
    """A ``doccheck:`` or ``snippet:`` comment that speaks about the next code block."""

    line: int
    kind: str  # "not-run", "snippet", or "invalid"
    reason: str = ""  # not-run: why the block must not run
    source: str = ""  # snippet: path of the recipe the block copies
    regions: tuple[str, ...] = ()  # snippet: region names, in order
    raw: str = ""
    used: bool = False


@dataclass
class Directive:
    """A directive the rules care about: literalinclude, include, toctree."""

    name: str
    line: int
    argument: str
    options: dict[str, str]
    body: list[str] = field(default_factory=list)
    body_line: int = 0  # line of the first body line


@dataclass
class CodeBlock:
    """A code block a reader sees, wherever it comes from."""

    line: int  # line of the fence or directive that opens it
    text_line: int  # line of the first line of code (same as ``line`` for literalincludes)
    language: str  # lower-case; "" when none was given
    text: str
    kind: str  # "fence", "indented", "code-block", "literal", "doctest-block", "literalinclude"
    include: Directive | None = None  # the literalinclude that shows it
    marker: Marker | None = None  # the marker comment right before it
    # Filled in by the checker:
    fate: str = ""  # "included", "copy", "doctest", "executed", "not-run", "" (none)
    detail: str = ""

    @property
    def is_python(self) -> bool:
        if self.language in PYTHON_LANGUAGES:
            return True
        if self.kind == "literalinclude" and self.include is not None:
            return self.language == "" and self.include.argument.endswith(".py")
        return self.kind == "doctest-block" or (self.language == "" and self.text.lstrip().startswith(">>>"))

    @property
    def is_doctest(self) -> bool:
        return self.text.lstrip().startswith(">>>")


@dataclass
class Paragraph:
    line: int
    text: str  # plain text, markup removed


@dataclass
class Link:
    """A reference to another file, page, anchor or label."""

    line: int
    kind: str  # "url" (Markdown link target), "doc" (doc role), "ref" (ref role)
    target: str


@dataclass
class Document:
    path: Path  # as given / found (relative to the working directory when possible)
    syntax: str  # "markdown" or "rst"
    blocks: list[CodeBlock] = field(default_factory=list)
    paragraphs: list[Paragraph] = field(default_factory=list)
    directives: list[Directive] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    anchors: set[str] = field(default_factory=set)  # heading slugs and explicit ids
    labels: set[str] = field(default_factory=set)  # cross-reference targets (ref role)
    orphan: bool = False
    problems: list[Finding] = field(default_factory=list)  # found while parsing
    lines: list[str] = field(default_factory=list)  # the text, for comments inside code

    def toctrees(self) -> list[Directive]:
        return [d for d in self.directives if d.name == "toctree"]

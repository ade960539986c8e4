"""What the checker reads from a page: code blocks, prose paragraphs, marker comments and Python units, with lines.

Markdown (MyST) is tokenised by markdown-it-py as myst-parser configures it; bodies of directives that
hold Markdown (admonitions, tabs) are tokenised again. reStructuredText is parsed by docutils with this
module's own copy of its states, whose ``Body`` knows Sphinx's code directives and parses the body of
any other unknown directive; no registry of docutils changes. A comment right above a block speaks
about it: ``snippet: PATH REGION...`` (a copy of recipe regions) or ``doccheck: not-run reason=...``,
written ``<!-- ... -->`` or ``% ...`` in MyST and ``.. ...`` in reST.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide.core.paths import display

#: Languages whose blocks are Python source (``pycon`` holds ``>>>`` sessions).
PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "py3", "pycon", "ipython", "ipython3", "sage"})
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell", "testcode", "doctest", "ipython"})
#: Directives whose body is neither prose nor code a reader runs.
OPAQUE = frozenset({"math", "raw", "csv-table", "mermaid", "graphviz", "toctree", "include", "glossary",
                    "autosummary", "fact-table", "fact-block", "verified-stamp", "execution-ledger", "image", "figure",
                    "highlight", "testoutput", "list-table"})
MAGIC = re.compile(r"^(\s*)(%|!)")  # IPython magics and shell escapes
_COMMENT = re.compile(r"\A\s*<!--(.*?)-->\s*\Z", re.S)


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
        return f"{self.path}:{self.line}: {self.rule}: {self.message}" + (f" — {self.fix}" if self.fix else "")


@dataclass
class Marker:
    line: int
    kind: str  # "not-run", "snippet" or "invalid"
    raw: str
    reason: str = ""
    source: str = ""  # snippet: the recipe the block copies
    regions: tuple[str, ...] = ()


@dataclass
class CodeBlock:
    line: int  # of the fence or directive
    text_line: int  # of the first line of code
    language: str  # lower case, "" when none is given
    text: str
    kind: str  # "fence", "indented", "code-block", "literal", "doctest-block", "literalinclude"
    include: str = ""  # literalinclude: the path, as written
    options: dict[str, str] = field(default_factory=dict)
    marker: Marker | None = None
    fate: str = ""  # set by the checker: included, copy, doctest, executed, not-run, other; "" for none
    detail: str = ""

    @property
    def is_python(self) -> bool:
        if self.kind == "literalinclude":
            return self.language in PYTHON_LANGUAGES or (self.language == "" and self.include.endswith(".py"))
        return (self.language in PYTHON_LANGUAGES or self.kind == "doctest-block"
                or (not self.language and self.is_doctest))

    @property
    def is_doctest(self) -> bool:
        return self.text.lstrip().startswith(">>>")


@dataclass
class Document:
    path: Path
    lines: list[str] = field(default_factory=list)
    blocks: list[CodeBlock] = field(default_factory=list)
    paragraphs: list[tuple[int, str]] = field(default_factory=list)  # (line, plain text)
    problems: list[Finding] = field(default_factory=list)
    pending: Marker | None = None  # the marker waiting for its block

    def marker(self, marker: Marker | None) -> None:
        if marker is not None:
            self.interrupt("is followed by another marker, not by a code block")
            self.pending = marker

    def interrupt(self, why: str = "is not followed by a code block") -> None:
        if self.pending is not None:
            self.problems.append(Finding(display(self.path), self.pending.line, "fate",
                                         f"the marker '{self.pending.raw}' {why}",
                                         "put it right above the code block it is about, or delete it"))
            self.pending = None

    def block(self, block: CodeBlock) -> None:
        block.marker, self.pending = self.pending, None
        self.blocks.append(block)

    def prose_lines(self) -> list[tuple[int, str]]:
        """``(line number, line)`` for each line outside the page's code blocks (fences and bodies)."""
        code = {number for block in self.blocks
                for number in range(block.line, block.text_line + len(block.text.splitlines()) + 1)}
        return [(number, line) for number, line in enumerate(self.lines, start=1) if number not in code]


def parse_marker(comment: str, line: int) -> Marker | None:
    """The marker a comment holds; ``None`` for an ordinary comment."""
    text = " ".join(comment.split())
    if text.startswith("snippet:"):
        words = text[len("snippet:"):].split()
        if len(words) < 2 or not all(re.fullmatch(r"[A-Za-z0-9_-]+", word) for word in words[1:]):
            return Marker(line, "invalid", text)
        return Marker(line, "snippet", text, source=words[0], regions=tuple(words[1:]))
    if not text.startswith("doccheck:"):
        return None
    kind, _, arguments = text[len("doccheck:"):].strip().partition(" ")
    if kind != "not-run":
        return Marker(line, "invalid", text)
    reason = arguments.removeprefix("reason=").strip().strip("\"'") if arguments.startswith("reason=") else ""
    return Marker(line, "not-run", text, reason=reason.strip())


def read(path: Path, text: str, myst_extensions: tuple[str, ...] = ("colon_fence", "deflist")) -> Document:
    document = Document(path, text.splitlines())
    if path.suffix == ".rst":
        _read_rst(document, text, 0)
    else:
        _read_markdown(document, text, 0, myst_extensions)
    document.interrupt()
    return document


# ---------------------------------------------------------------- Markdown

@functools.lru_cache(maxsize=8)
def _markdown_parser(extensions: tuple[str, ...]):
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    known = {"amsmath", "attrs_inline", "attrs_block", "colon_fence", "deflist", "dollarmath", "fieldlist", "tasklist",
             "html_admonition", "html_image", "replacements", "smartquotes", "strikethrough", "substitution"}
    return create_md_parser(MdParserConfig(enable_extensions=set(extensions) & known), RendererHTML)


def _plain(tokens) -> str:
    return "".join(token.content if token.type in ("text", "code_inline", "myst_role", "math_inline") else
                   " " if token.type in ("softbreak", "hardbreak") else _plain(token.children)
                   for token in tokens or [])


def _read_markdown(doc: Document, text: str, offset: int, extensions: tuple[str, ...]) -> None:
    context: list[str] = []
    for token in _markdown_parser(extensions).parse(text):
        if token.type.endswith("_close"):
            context = context[:-1]
            continue
        if token.type.endswith("_open"):
            context.append(token.type)
        if token.map is None:
            continue
        line = token.map[0] + 1 + offset
        if token.type == "html_block":
            match = _COMMENT.match(token.content)
            doc.marker(marker) if match and (marker := parse_marker(match.group(1), line)) else doc.interrupt()
        elif token.type == "myst_line_comment":
            doc.marker(parse_marker(token.content, line))
        elif token.type == "code_block":
            doc.block(CodeBlock(line, line, "", token.content.rstrip("\n"), "indented"))
        elif token.type in ("fence", "colon_fence"):
            _fence(doc, token, line, extensions)
        elif token.type == "inline" and context[-1:] == ["paragraph_open"] and "table_open" not in context:
            doc.paragraphs.append((line, _plain(token.children)))
        elif token.type.endswith("_open") or token.type in ("hr", "myst_block_break"):
            doc.interrupt()


def _fence(doc: Document, token, line: int, extensions: tuple[str, ...]) -> None:
    info = token.info.strip()
    if not (info.startswith("{") and "}" in info):
        if token.type == "colon_fence":  # a plain ::: fence is a container
            doc.interrupt()
            return _read_markdown(doc, token.content, line, extensions)
        language = (info.split() or [""])[0].strip("{}.").lower()
        return doc.block(CodeBlock(line, line + 1, language, token.content.rstrip("\n"), "fence"))
    name, argument = info[1:info.index("}")].strip(), info[info.index("}") + 1:].strip()
    # The body's leading ``:key: value`` options, then one optional blank line.
    body, options, consumed = token.content.splitlines(), {}, 0
    while consumed < len(body) and (match := re.match(r"\s*:([\w-]+):(.*)", body[consumed])):
        options[match.group(1)] = match.group(2).strip().strip("\"'")
        consumed += 1
    consumed += consumed < len(body) and not body[consumed].strip()
    body = "\n".join(body[consumed:])
    if name in CODE_DIRECTIVES:
        doc.block(_code_directive(name, argument, body, line, line + 1 + consumed))
    elif name == "literalinclude":
        doc.block(CodeBlock(line, line, options.get("language", "").lower(), "", "literalinclude", argument, options))
    elif name == "eval-rst":
        doc.interrupt()
        _read_rst(doc, body, line + consumed)
    else:
        doc.interrupt()
        if name not in OPAQUE and body:
            _read_markdown(doc, body, line + consumed, extensions)


def _code_directive(name: str, argument: str, body: str, line: int, text_line: int) -> CodeBlock:
    language = {"testcode": "python", "doctest": "pycon"}.get(name, (argument.split() or [""])[0].lower())
    return CodeBlock(line, text_line, language or ("python" if name == "code-cell" else ""), body.rstrip("\n"),
                     "code-block")


# ---------------------------------------------------------------- reStructuredText

@functools.lru_cache(maxsize=1)
def _rst_parser():
    """A docutils parser whose states have a ``Body`` that knows Sphinx's directives; nested parses use them too."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, Parser, directives, states

    class Captured(Directive):
        """A directive the checker needs: kept as a node with its name, argument, options and body."""

        optional_arguments, final_argument_whitespace, has_content = 100, True, True
        option_spec = type("AnyOptions", (dict,), {"__missing__": lambda self, key: directives.unchanged})(
            {"class": directives.unchanged})

        def run(self):
            return [nodes.container(classes=["doccheck-captured"], name=self.name, argument=" ".join(self.arguments),
                                    options=dict(self.options), body="\n".join(self.content), line=self.lineno,
                                    body_line=self.content_offset + 1)]

    class Container(Captured):
        """Any other directive docutils does not know: its body is parsed, so what is inside it counts."""

        def run(self):
            node = nodes.container()
            if self.content and self.name not in OPAQUE and not self.name.startswith("auto"):
                self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    def directive(self, match, **option_presets):
        name = match.group(1)
        found = Captured if name in CODE_DIRECTIVES or name in ("literalinclude", "highlight") else (
            directives.directive(name, self.memo.language, self.document)[0] or Container)
        return self.run_directive(found, match, name, option_presets)

    # Explicit markup, directives included, is parsed through this table, which docutils fills with its own method.
    explicit = states.Struct(patterns=states.Body.explicit.patterns, constructs=[
        (directive if method is states.Body.directive else method, pattern)
        for method, pattern in states.Body.explicit.constructs])

    def local(cls):
        def __init__(self, state_machine, debug=False):
            cls.__init__(self, state_machine, debug)
            self.nested_sm_kwargs = {"state_classes": parser.state_classes, "initial_state": "Body"}

        body = {"explicit": explicit} if issubclass(cls, states.Body) else {}
        return type(cls.__name__, (cls,), {"__init__": __init__, "nested_sm_cache": [], **body})

    parser = Parser()
    parser.state_classes = tuple(local(cls) for cls in states.state_classes)
    return parser


@functools.lru_cache(maxsize=1)
def _rst_settings():
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    settings = get_default_settings(Parser)
    settings.report_level = settings.halt_level = 5
    settings.file_insertion_enabled = settings.raw_enabled = False
    settings.syntax_highlight = "none"
    settings.warning_stream = open(os.devnull, "w")  # noqa: SIM115 (one for the process)
    return settings


def _read_rst(doc: Document, text: str, offset: int) -> None:
    from docutils import nodes
    from docutils.utils import new_document

    tree = new_document(str(doc.path), _rst_settings())
    try:
        _rst_parser().parse(text, tree)
    except Exception as error:  # docutils gave up on this text: report, do not crash
        doc.problems.append(Finding(display(doc.path), offset + 1, "parse", f"docutils could not parse the "
                                    f"reStructuredText ({type(error).__name__}: {error})", "fix the markup"))
        return
    lines, highlight = text.splitlines(), ""

    def inside(node, *types) -> bool:
        while (node := node.parent) is not None:
            if isinstance(node, types):
                return True
        return False

    for node in tree.findall(nodes.Element, include_self=False):
        if inside(node, nodes.system_message):
            continue  # docutils quoting the source of its own error message
        line = node.get("line") or node.line or 1
        if isinstance(node, nodes.comment):
            # docutils gives a comment the line after it; find the ".." that opens it.
            first = (node.astext().splitlines() or [""])[0].strip()
            line = next((n for n in range(min(line, len(lines)), max(line - 40, 0), -1)
                         if lines[n - 1].strip().startswith("..") and first in lines[n - 1]), line)
            doc.marker(parse_marker(node.astext(), line + offset))
        elif "doccheck-captured" in node["classes"]:
            name, argument, options = node["name"], node["argument"], node["options"]
            if name == "highlight":
                highlight = (argument.split() or [""])[0].lower()
            elif name == "literalinclude":
                doc.block(CodeBlock(line + offset, line + offset, str(options.get("language", "")).lower(), "",
                                    "literalinclude", argument, {k: str(v) for k, v in options.items()}))
            else:
                doc.block(_code_directive(name, argument, node["body"], line + offset, node["body_line"] + offset))
        elif isinstance(node, nodes.literal_block):
            classes = node.get("classes", [])
            language = classes[1] if "code" in classes and len(classes) > 1 else (
                highlight if highlight not in ("default", "python", "python3", "py", "py3") else "")
            doc.block(CodeBlock(line + offset, line + offset, language.lower(), node.astext(), "literal"))
        elif isinstance(node, nodes.doctest_block):
            doc.block(CodeBlock(line + offset, line + offset, "pycon", node.astext(), "doctest-block"))
        elif isinstance(node, nodes.paragraph):
            doc.interrupt()
            if not inside(node, nodes.literal_block, nodes.comment):
                doc.paragraphs.append((line + offset, node.astext()))


# ---------------------------------------------------------------- Python units

@dataclass
class Unit:
    """A page's Python blocks run in order in one namespace, so they are one unit: the statements of every block,
    each node carrying its page line (``>>>`` blocks give their examples). A ``.py`` file is a unit too."""

    path: str  # as displayed
    statements: list[ast.stmt] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the page's or file's text, for comments
    text: str = ""  # the source the statements come from: what cached answers are keyed by


def parse_piece(source: str, line: int, path: str) -> tuple[list[ast.stmt], Finding | None]:
    """Parse one piece (IPython magics become ``pass``); statements carry page lines; a syntax error is a finding."""
    try:
        tree = ast.parse("\n".join(MAGIC.sub(r"\1pass  # ", text) for text in source.splitlines()))
    except (SyntaxError, ValueError, RecursionError) as error:
        where = line + (getattr(error, "lineno", None) or 1) - 1
        return [], Finding(path, where, "syntax", f"the Python does not parse: {getattr(error, 'msg', error)}",
                           "fix the code, or give the block its real language if it is not Python")
    ast.increment_lineno(tree, line - 1)
    return tree.body, None


def page_unit(path: str, blocks: list[CodeBlock], lines: list[str]) -> tuple[Unit, list[Finding]]:
    """The Python of a page's blocks (not literal includes: their files are units of their own)."""
    unit, problems = Unit(path, lines=lines), []
    for block in (b for b in blocks if b.is_python and b.kind != "literalinclude"):
        pieces = [(block.text, block.text_line)]
        if block.is_doctest:  # its examples, unless it is not a valid doctest
            with contextlib.suppress(ValueError):
                examples = doctest.DocTestParser().get_examples(block.text)
                pieces = [(example.source, block.text_line + example.lineno) for example in examples]
        for source, line in pieces:
            statements, problem = parse_piece(source, line, path)
            unit.statements.extend(statements)
            unit.text += f"\n#{line}\n{source}"
            problems += [problem] if problem else []
    return unit, problems


def file_unit(path, shown: str) -> tuple[Unit, list[Finding]]:
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return Unit(shown), [Finding(shown, 1, "syntax", f"not UTF-8 text ({error.reason})", "save the file as UTF-8")]
    statements, problem = parse_piece(source, 1, shown)
    return Unit(shown, statements, source.splitlines(), source), [problem] if problem else []

"""Check the Quantization page against the schemes and the recipes: ``python -m xnnguide.tools.quantization_page``.

The scheme table of ``docs/guides/quantization.md`` has one row per scheme of :data:`xnnguide.core.schemes.SCHEMES`;
its last cell links the recipes that prove the row, each of which names the scheme and, in the last build,
passed and recorded (fact ``schemes``) applying it (:func:`coverage_problems`). The code the page shows is recipe
regions importing public packages only (:func:`source_problems`). The page opens with one complete program for
a scheme (:data:`OPENING_SCHEME`: quantize, calibrate, lower, run, compare), and under "The code of the other
schemes" every other scheme's code makes the calls that define it (:func:`scheme_code_problems`). Int8 recipes check by the one SQNR floor
(:func:`tolerance_problems`). Prints ``path:line: message`` per problem; exit status 1 when there is one.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from xnnguide.core import facts
from xnnguide.core.recipes import find_recipe
from xnnguide.core.records import records_dir, stale_reason
from xnnguide.core.regions import read_regions
from xnnguide.core.schemes import SCHEMES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guides" / "quantization.md"
RECIPE_LINK = re.compile(r"\{doc\}`\.\./gallery/(?:\w+/)?(\w+)`")
SCHEME_CELL = re.compile(r"^`([^`]+)`$")


@dataclass(frozen=True)
class Row:
    line: int
    scheme: str
    recipes: tuple[str, ...]


def tables(markdown: str) -> list[tuple[list[str], list[tuple[int, list[str]]]]]:
    """Every pipe table of *markdown*: its header cells and its (line, cells) rows."""
    found = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].startswith("|") and index + 1 < len(lines) and set(lines[index + 1]) <= set("|-: "):
            header = [cell.strip() for cell in lines[index].strip("|").split("|")]
            rows = []
            index += 2
            while index < len(lines) and lines[index].startswith("|"):
                rows.append((index + 1, [cell.strip() for cell in lines[index].strip().strip("|").split("|")]))
                index += 1
            found.append((header, rows))
        else:
            index += 1
    return found


def scheme_rows(markdown: str) -> list[Row]:
    """The rows of the scheme table: the table whose last column is 'Proven by'."""
    for header, rows in tables(markdown):
        if header[0] == "Scheme" and header[-1] == "Proven by":
            result = []
            for line, cells in rows:
                match = SCHEME_CELL.match(cells[0])
                result.append(Row(line, match.group(1) if match else cells[0],
                                  tuple(RECIPE_LINK.findall(cells[-1]))))
            return result
    raise AssertionError("no scheme table (a table from 'Scheme' to 'Proven by') on the page")


def static_problems(rows: list[Row], snippets: Path) -> list[str]:
    """Rows naming unknown schemes, missing schemes, or recipes that do not apply theirs."""
    problems = []
    named = [row.scheme for row in rows]
    for row in rows:
        where = f"{PAGE.name}:{row.line}"
        if row.scheme not in SCHEMES:
            problems.append(f"{where}: {row.scheme!r} is not a scheme of xnnguide.core.schemes "
                            f"({', '.join(SCHEMES)})")
        if not row.recipes:
            problems.append(f"{where}: row {row.scheme!r} links no recipe")
        for recipe in row.recipes:
            source = find_recipe(snippets, recipe)
            if not source.is_file():
                problems.append(f"{where}: row {row.scheme!r} links {recipe}, but {source} does not exist")
                continue
            strings = {node.value for node in ast.walk(ast.parse(source.read_text()))
                       if isinstance(node, ast.Constant) and isinstance(node.value, str)}
            if row.scheme not in strings:
                problems.append(f"{where}: {source.name} never names scheme {row.scheme!r}")
    for scheme in SCHEMES:
        if named.count(scheme) != 1:
            problems.append(f"{PAGE.name}: scheme {scheme!r} has {named.count(scheme)} rows, expected 1")
    return problems


def coverage_problems(rows: list[Row], snippets: Path, gallery: Path) -> list[str]:
    """Rows whose recipes did not pass a current run that recorded their scheme."""
    problems = []
    for row in rows:
        where = f"{PAGE.name}:{row.line}"
        for recipe in row.recipes:
            source = find_recipe(snippets, recipe)
            reason = stale_reason(gallery, source)
            if reason is not None:
                problems.append(f"{where}: {recipe} has no current passing run: {reason}; run `make html`")
                continue
            covered = facts.load(records_dir(gallery) / "facts" / f"{recipe}.json").get("schemes", {})
            if row.scheme not in covered.get("value", []):
                problems.append(f"{where}: {recipe} ran, but did not record applying {row.scheme!r}")
    return problems


# What the code shown for each scheme must call (and must not).
PT2E_STEPS = ("XNNPACKQuantizer()", "get_symmetric_quantization_config(", "prepare_pt2e(", "convert_pt2e(")
SCHEME_CODE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "int8-static": (PT2E_STEPS + ("is_per_channel=True",), ("is_dynamic=True",)),
    "int8-static-per-tensor": (PT2E_STEPS + ("is_per_channel=False",), ("is_dynamic=True",)),
    "int8-dynamic": (PT2E_STEPS + ("is_per_channel=True", "is_dynamic=True"), ()),
    "8da4w": (("quantize_(", "IntxWeightOnlyConfig(", "Int8DynamicActivationIntxWeightConfig(",
               "weight_dtype=torch.int4", "PerGroup(32)", "torch.nn.Embedding"), ()),
}
LOWERING_CALLS = ("to_edge_transform_and_lower(", "get_transform_passes()", "XnnpackPartitioner()")
# The page's first block is a whole program for this scheme: it also runs the .pte and compares it.
OPENING_SCHEME = "int8-static"
RUN_CALLS = ("Runtime.get()", ".execute(", "compute_error(")
OTHER_SCHEMES_SECTION = "The code of the other schemes"
PUBLIC_PACKAGES = {"torch", "torchvision", "torchao", "executorch", "numpy", "matplotlib", "sklearn", "torchcrepe"}
LITERALINCLUDE = re.compile(r"^```\{literalinclude\}\s+(\S+)\s*$")
START_AFTER = re.compile(r'^:start-after:\s*"?# \[start ([A-Za-z0-9_-]+)\]"?\s*$')
TAB_ITEM = re.compile(r"^:::\{tab-item\}\s*(.*?)\s*$")


@dataclass(frozen=True)
class Include:
    line: int
    path: Path  # resolved
    region: str | None  # None: the whole file
    section: str  # the "## " heading it is under
    label: str  # the enclosing tab-item title, else the "### " or "## " heading


def includes(markdown: str, page_dir: Path) -> list[Include]:
    """Every ``literalinclude`` of *markdown*, with where on the page it sits."""
    found = []
    lines = markdown.splitlines()
    section = heading = ""
    tab = None
    for index, line in enumerate(lines):
        if line.startswith("## "):
            section = heading = line[3:].strip()
            tab = None
        elif line.startswith("### "):
            heading = line[4:].strip()
        elif TAB_ITEM.match(line):
            tab = TAB_ITEM.match(line).group(1)
        elif line.strip() == ":::" or line.startswith("::::"):
            tab = None
        match = LITERALINCLUDE.match(line)
        if not match:
            continue
        region = None
        for option in lines[index + 1:]:
            if not option.startswith(":"):
                break
            start = START_AFTER.match(option)
            if start:
                region = start.group(1)
        found.append(Include(index + 1, (page_dir / match.group(1)).resolve(), region, section,
                             tab if tab is not None else heading))
    return found


def shown_code(include: Include) -> str:
    """The code an include shows: its region, or the whole file."""
    if include.region is None:
        return include.path.read_text(encoding="utf-8")
    return read_regions(include.path)[include.region].text


def schemes_named(label: str) -> list[str]:
    return [scheme for scheme in SCHEMES
            if re.search(rf"(?<![\w-]){re.escape(scheme)}(?![\w-])", label)]


def source_problems(shown: list[Include], snippets: Path) -> list[str]:
    """Includes of anything but a recipe region, and shown code importing non-public packages."""
    problems = []
    allowed = PUBLIC_PACKAGES | set(sys.stdlib_module_names)
    for include in shown:
        where = f"{PAGE.name}:{include.line}"
        if snippets.resolve() not in include.path.parents or include.path.suffix != ".py":
            problems.append(f"{where}: includes {include.path.name}, which is not a recipe in snippets/")
            continue
        if include.region is None or include.region not in read_regions(include.path):
            problems.append(f"{where}: {include.path.name} has no region {include.region!r}")
            continue
        tree = ast.parse(textwrap.dedent(shown_code(include)))
        for node in ast.walk(tree):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            for name in names:
                if name.split(".")[0] not in allowed:
                    problems.append(f"{where}: {include.path.name} [{include.region}] imports {name}, "
                                    f"which a reader with only public packages does not have")
    return problems


def scheme_code_problems(shown: list[Include]) -> list[str]:
    """A page that does not open with a whole program for :data:`OPENING_SCHEME`, and schemes whose code,
    under "The code of the other schemes", is missing or lacks a defining call."""
    problems = []
    if set(SCHEME_CODE) != set(SCHEMES):
        problems.append(f"SCHEME_CODE lists {sorted(SCHEME_CODE)}, xnnguide.core.schemes has "
                        f"{sorted(SCHEMES)}: say what each new scheme's code must call")
    code: dict[str, list[str]] = {scheme: [] for scheme in SCHEMES}
    opening = shown[0] if shown else None
    if opening is None or OPENING_SCHEME not in schemes_named(opening.section):
        problems.append(f"{PAGE.name}: the first code on the page is not under a heading naming {OPENING_SCHEME!r}")
    else:
        code[OPENING_SCHEME].append(shown_code(opening))
        problems += [f"{PAGE.name}:{opening.line}: the opening program lacks {call!r}"
                     for call in LOWERING_CALLS + RUN_CALLS if call not in shown_code(opening)]
    for include in shown:
        if include.section == OTHER_SCHEMES_SECTION:
            for scheme in schemes_named(include.label):
                code[scheme].append(shown_code(include))
    for scheme, (required, forbidden) in SCHEME_CODE.items():
        if not code.get(scheme):
            problems.append(f"{PAGE.name}: no code for {scheme!r} (the opening program, or a tab of "
                            f"'{OTHER_SCHEMES_SECTION}')")
            continue
        text = "\n".join(code[scheme])
        problems += [f"{PAGE.name}: the code shown for {scheme!r} never calls {call!r}"
                     for call in required if call not in text]
        problems += [f"{PAGE.name}: the code shown for {scheme!r} has {call!r}, which is another scheme"
                     for call in forbidden if call in text]
    return problems


# A tolerance typed as a share of the largest output: the check this site dropped.
SHARE_OF_LARGEST = re.compile(r"\b0?\.\d+\s*\*\s*(?:max\()?[\w.\[\]\"'() ]*\.abs\(\)\.max\(\)")


def tolerance_problems(snippets: Path) -> list[str]:
    """Recipes that check an int8 program without the site's one SQNR floor, or with a share of the largest output."""
    problems = []
    for recipe in sorted(snippets.rglob("*.py")):
        text = recipe.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if SHARE_OF_LARGEST.search(line):
                problems.append(f"{recipe.name}:{number}: a tolerance typed as a share of the largest output; "
                                "check int8 programs by SQNR against MIN_SQNR_DB")
        if "MIN_SQNR_DB = " in text and "quantization.record_min_sqnr(MIN_SQNR_DB)" not in text:
            problems.append(f"{recipe.name}: shows MIN_SQNR_DB but never checks it with "
                            "quantization.record_min_sqnr(MIN_SQNR_DB)")
    return problems


def leading_accuracy_table(markdown: str) -> str | None:
    """The first ``fact-table`` of the page's "Accuracy on real data" section, or None."""
    section = markdown.split("\n## Accuracy on real data\n", 1)
    if len(section) < 2:
        return None
    body = section[1].split("\n## ", 1)[0]
    match = re.search(r"^```\{fact-table\}\s+(\S+)", body, re.MULTILINE)
    return match.group(1) if match else None


def problems(page: Path, snippets: Path, gallery: Path | None) -> list[str]:
    """Everything wrong with *page*; with *gallery*, the last build's coverage of each row too."""
    markdown = page.read_text(encoding="utf-8")
    rows, shown = scheme_rows(markdown), includes(markdown, page.parent)
    found = static_problems(rows, snippets) + source_problems(shown, snippets) + scheme_code_problems(shown)
    found += tolerance_problems(snippets)
    return found + (coverage_problems(rows, snippets, gallery) if gallery is not None else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.quantization_page",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--gallery", type=Path, help="the built gallery (docs/gallery): check each row's recipes ran")
    args = parser.parse_args(argv)
    if args.gallery is not None and not records_dir(args.gallery).is_dir():
        print(f"error: {args.gallery} holds no run records; run `make html` first", file=sys.stderr)
        return 2
    found = problems(PAGE, ROOT / "snippets", args.gallery)
    print(*found, sep="\n", end="\n" if found else "")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

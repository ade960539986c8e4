"""Start a recipe from the template: ``make new-recipe NAME=<what_it_does> [DIR=<task>]``.

Writes ``snippets/<task>/<name>.py`` from :file:`xnnguide/tools/recipe_template.py` (a recipe that passes as written),
lists it last in the task folder's ``GALLERY_HEADER.rst``, and prints what to paste into the page that shows it.
A bad name (not snake_case, or a recipe of that name exists) or an unknown task folder is a one-line error,
exit status 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from xnnguide.core.recipes import BUDGET_TABLE, DEFAULT_BUDGET_SECONDS, ORDER_LIST

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = Path(__file__).with_name("recipe_template.py")
PLACEHOLDER, TITLE = "what_it_does", "What it does\n============"
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")

PAGE_SNIPPET = """\
Paste into the page that shows it (a page docs/<section>/<page>.md; the path is relative to the page):

```{{verified-stamp}} {name}
```

```{{literalinclude}} ../../{recipe}
:language: python
:start-after: "# [start lower]"
:end-before: "# [end lower]"
```

It agrees with eager PyTorch to within {{fact}}`{name}/max_abs_error`.

The recipe's other region, run, is shown only on its gallery page; the recipe declares that with the
line '# [gallery-only run]', right above '# [start run]'. Delete that line if a page shows the region.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.new_recipe", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="what the recipe does, in snake_case: lower_resnet18_fp32")
    parser.add_argument("--dir", default="lowering", help="task folder of snippets/ (default: %(default)s)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: %(default)s)")
    args = parser.parse_args(argv)
    snippets = args.root / "snippets"
    tasks = sorted(path.parent.name for path in snippets.glob("*/GALLERY_HEADER.rst"))
    header = snippets / args.dir / "GALLERY_HEADER.rst"
    header_text = header.read_text(encoding="utf-8") if args.dir in tasks else ""
    order = ORDER_LIST.search(header_text)
    error = None
    if not SNAKE_CASE.fullmatch(args.name):
        error = f"NAME={args.name!r} is not snake_case: lower-case words joined by '_', like lower_resnet18_fp32"
    elif existing := sorted(snippets.rglob(f"{args.name}.py")):
        error = f"{existing[0].relative_to(args.root)} exists already; choose another NAME"
    elif args.dir not in tasks:
        error = f"DIR={args.dir!r} is not a task folder of snippets/; choose one of {', '.join(tasks)}"
    elif order is None:
        error = f"{header.relative_to(args.root)} has no '.. Recipe order' list to add the recipe to"
    elif not (args.root / BUDGET_TABLE).is_file():
        error = f"{BUDGET_TABLE} is missing beside conf.py; the new recipe's time budget goes there"
    if error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    title = args.name.replace("_", " ").capitalize()
    text = TEMPLATE.read_text(encoding="utf-8").replace(TITLE, f"{title}\n{'=' * len(title)}")
    recipe = snippets / args.dir / f"{args.name}.py"
    recipe.write_text(text.replace(PLACEHOLDER, args.name), encoding="utf-8")
    listed = order.group(0).rstrip("\n") + f"\n   {args.name}\n"
    header.write_text(header_text[: order.start()] + listed + header_text[order.end():], encoding="utf-8")
    # Every recipe has its line in the budget table (tests/static/test_shards.py): the default, after the last line
    # of [seconds] (not after the comment that opens the next section, which belongs to that section).
    table = args.root / BUDGET_TABLE
    table_text = table.read_text(encoding="utf-8")
    gb = table_text.find("\n[gb]")
    last = list(re.finditer(r"^\w+ = .*$", table_text[: len(table_text) if gb < 0 else gb], re.M))
    end = last[-1].end() if last else len(table_text)
    table.write_text(f"{table_text[:end]}\n{args.name} = {DEFAULT_BUDGET_SECONDS:g}{table_text[end:]}",
                     encoding="utf-8")
    shown = recipe.relative_to(args.root)
    print(f"wrote {shown} and listed it last in {header.relative_to(args.root)} (move it to where it belongs);"
          f" its time budget is {DEFAULT_BUDGET_SECONDS:g} s in {BUDGET_TABLE}")
    print(f"run it alone: make recipe R={shown}\n")
    print(PAGE_SNIPPET.format(name=args.name, recipe=shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())

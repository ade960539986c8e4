"""Run one recipe or build step alone, as the build would, without building the site.

Usage, from the repository root::

    python -m xnnguide.tools.run_recipe snippets/lowering/lower_mobilenet_v2_fp32.py

(or ``make recipe R=...``). Like the build, it runs a recipe from its own folder (so ``.pte`` files land next
to it) and a build step (``docs/build_steps/<name>.py``) in a temporary folder, deleted after it, with matplotlib drawing off-screen, and collects the facts the recipe records. It prints PASS or FAIL
(as ``path:line: recipe: FAIL ...``, naming the recipe's line that made the failing call and, when it differs,
the innermost frame), the wall time against the recipe's time budget, and the recorded facts; the exit status
is 0 only for a pass within budget. The facts go to ``_build/run_recipe/facts/``, never into the gallery's
records, so a run here does not count as a verified run of the build.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys
import tempfile
import time
import traceback
from pathlib import Path

from xnnguide.core import facts
from xnnguide.core.paths import display
from xnnguide.core.recipes import BUDGET_TABLE, budget_seconds, is_build_step
from xnnguide.core.results import failure_line

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.run_recipe", description=__doc__.splitlines()[0])
    parser.add_argument("recipe", type=Path, help="a recipe file, e.g. snippets/lowering/lower_mobilenet_v2_fp32.py, or a build step, "
                        "docs/build_steps/<name>.py")
    parser.add_argument("--facts-dir", type=Path, default=ROOT / "_build" / "run_recipe" / "facts",
                        help="where the recorded facts go (default: %(default)s)")
    args = parser.parse_args(argv)
    source: Path = args.recipe.resolve()
    if source.suffix != ".py" or not source.is_file():
        print(f"error: {args.recipe}: no such recipe file (expected a .py file under snippets/ or docs/build_steps/)", file=sys.stderr)
        return 2
    try:
        budget = budget_seconds(source)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    shown, step = display(source), is_build_step(source)
    rule = "build-step" if step else "recipe"
    out = args.facts_dir.resolve()
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures are drawn, never shown
    sys.path[:0] = [str(ROOT)]
    sys.path.append(str(source.parent))
    sys.argv = [str(source)]
    facts.begin_recipe(source.stem, out)
    start = time.perf_counter()
    try:
        folder = tempfile.TemporaryDirectory(prefix=f"xnnguide-{source.stem}-") if step else \
            contextlib.nullcontext(str(source.parent))
        with folder as work, contextlib.chdir(work):
            runpy.run_path(str(source), run_name="__main__")
    except BaseException as error:  # noqa: BLE001 - report any failure of the recipe, then exit 1
        seconds = time.perf_counter() - start
        text = "".join(traceback.format_exception(error))
        print(text, end="", file=sys.stderr)
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        line, raised = failure_line(text, source, Path.cwd())
        # One line, last, in the path:line: rule: message form: the recipe's own line, and where it raised.
        print(f"{shown}:{line}: {rule}: FAIL after {seconds:.1f} s: {last}{raised}")
        return 1
    finally:
        facts.end_recipe()
    seconds = time.perf_counter() - start
    recorded = facts.load(out / f"{source.stem}.json")
    print(f"\nfacts recorded ({len(recorded)}), in {display(out / (source.stem + '.json'))}:")
    for key, fact in recorded.items():
        print(f"  {key} = {fact['display']}" if "display" in fact else f"  {key} = table of {len(fact['rows'])} rows")
    if seconds > budget:
        print(f"{shown}:1: {rule}: FAIL ran for {seconds:.1f} s, over its time budget of {budget:g} s "
              f"(its line in {BUDGET_TABLE})")
        return 1
    print(f"PASS {shown} in {seconds:.1f} s (time budget {budget:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How fast the site builds: ``make bench``.

One run measures, on this checkout and this machine: a **cold** ``make html``
after ``make clean`` (every recipe runs); a **no-op** ``make html`` (no recipe
may run); a **one-snippet edit**, a comment appended to one recipe (that recipe
alone may run; the file is restored and the site rebuilt, untimed); the **sum
of the recipes' own times** from their run records; the **fixed Sphinx cost**
(the cold build's wall time less the gallery phase); and the **peak memory of
the cold build**, all its processes together, sampled with psutil: the sum of
RSS (an upper bound, counting shared libraries once per process) and of PSS
(shared pages split between the processes that map them).

It compares them with the goals: cold ≤ 0.8 × recipe time + fixed cost; no-op
≤ 5 % of cold; peak memory ≤ 8 GB. ``--alone`` also runs every recipe by itself
(``python -m xnnguide.tools.run_recipe``, a fresh interpreter each) and reports that
sum, the cost the shared build is meant to beat: cold ≤ 0.75 × that sum. Other jobs on the machine slow
every figure: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil

from xnnguide.core import environment
from xnnguide.core.records import load_run_record, records_dir
from xnnguide.core.recipes import recipe_files

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"
GB = 1e9


def watch(process: psutil.Popen, interval: float = 0.25) -> tuple[int, int, int]:
    """Wait for *process*, sampling the memory of it and all its descendants every *interval* seconds.

    Returns the peak sum of RSS, the number of processes at that peak, and the highest sum of PSS seen at a
    new RSS peak. Processes that end between two looks count 0. PSS is read (from smaps, which costs a
    sizeable share of a core over a build full of large processes) only when the RSS sum reaches a new
    peak: the sampler should not slow the build it measures.
    """
    peak_rss = peak_pss = peak_processes = 0
    while process.poll() is None:
        processes = [process, *process.children(recursive=True)]
        rss = sum(_memory(each, "memory_info").rss for each in processes)
        if rss > peak_rss:
            peak_rss, peak_processes = rss, len(processes)
            peak_pss = max(peak_pss, sum(_memory(each, "memory_full_info").pss for each in processes))
        time.sleep(interval)
    return peak_rss, peak_processes, peak_pss


def _memory(process: psutil.Process, reading: str) -> Any:
    """``process.<reading>()``, or zeros once the process is gone (on Linux ``memory_full_info`` carries PSS)."""
    try:
        return getattr(process, reading)()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return SimpleNamespace(rss=0, pss=0)


def _make(make: list[str], target: str) -> tuple[float, tuple[int, int, int]]:
    """Run ``make <target>``; its wall time and :func:`watch`'s peaks."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as output:
        process = psutil.Popen([*make, target], cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, text=True)
        memory = watch(process)
        seconds = time.perf_counter() - start
        if process.returncode != 0:
            output.seek(0)
            sys.stdout.write(output.read()[-4000:])
            raise SystemExit(f"error: `{' '.join(make)} {target}` failed with status {process.returncode}")
    return seconds, memory


def _ran() -> tuple[list[str], dict]:
    """The recipes the last build ran, and its summary (``build.json``)."""
    summary = json.loads((records_dir(GALLERY) / "build.json").read_text(encoding="utf-8"))
    return summary["ran"], summary


def load_average() -> str:
    return " ".join(f"{load:.2f}" for load in psutil.getloadavg())


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--make", default="make", help="the make command, with its variables (default: make)")
    parser.add_argument("--edit", type=Path, help="the recipe to edit (default: the fastest one)")
    parser.add_argument("--alone", action="store_true", help="also run every recipe alone and sum their times")
    args = parser.parse_args(argv)
    make = args.make.split()
    described = environment.describe()
    print(f"machine: {described['cpu']}, {described['cores']} logical cores; load average {load_average()}")

    _make(make, "clean")
    cold, (peak_rss, peak_processes, peak_pss) = _make(make, "html")
    ran, summary = _ran()
    recipes = {name: load_run_record(GALLERY, name)["seconds"] for name in ran}
    recipe_sum = sum(recipes.values())
    fixed = cold - summary["gallery_seconds"]
    shard_seconds = summary["shard_seconds"]
    imbalance = max(shard_seconds) / (sum(shard_seconds) / len(shard_seconds)) if shard_seconds else 1.0
    print(f"cold `make html`: {cold:.1f} s ({len(ran)} recipes ran in {len(shard_seconds)} shards)")

    noop = _make(make, "html")[0]
    noop_ran = _ran()[0]

    sources = {path.stem: path for path in recipe_files(ROOT / "snippets")}
    edit = (args.edit or sources[min(recipes, key=recipes.get)]).resolve()
    original = edit.read_bytes()
    try:
        edit.write_bytes(original + b"\n# edited by make bench\n")
        edited = _make(make, "html")[0]
        edit_ran = _ran()[0]
    finally:
        edit.write_bytes(original)
    _make(make, "html")  # back in step with the restored file

    alone = {}
    for name in sorted(recipes) if args.alone else ():
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "xnnguide.tools.run_recipe", str(sources[name])], cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        alone[name] = time.perf_counter() - start

    print("\nrecipe times in the cold build (s):")
    for name, seconds in sorted(recipes.items(), key=lambda item: -item[1]):
        print(f"  {name:<45} {seconds:8.1f}" + (f"   alone: {alone[name]:.1f}" if name in alone else ""))
    print()
    limit = 0.8 * recipe_sum + fixed
    rows = [
        ("cold make html", f"{cold:.1f} s"),
        ("  of which running recipes (gallery phase)", f"{summary['gallery_seconds']:.1f} s"),
        ("  fixed Sphinx cost (cold - gallery phase)", f"{fixed:.1f} s"),
        ("sum of recipe execution times", f"{recipe_sum:.1f} s"),
        ("recipe and build-step seconds of each shard", ", ".join(f"{seconds:.1f}" for seconds in shard_seconds)),
        ("shard imbalance (longest shard / mean)", f"{imbalance:.2f}"),
        *([("sum of recipes run alone (fresh interpreters)", f"{sum(alone.values()):.1f} s")] if alone else []),
        ("no-op make html", f"{noop:.1f} s ({len(noop_ran)} recipes ran)"),
        (f"one-snippet edit ({edit.name})", f"{edited:.1f} s (ran: {', '.join(edit_ran) or 'none'})"),
        ("peak memory of the cold build, sum of RSS", f"{peak_rss / GB:.2f} GB ({peak_processes} processes)"),
        ("peak memory of the cold build, sum of PSS", f"{peak_pss / GB:.2f} GB"),
    ]
    for label, value in rows:
        print(f"{label:<48} {value}")
    print("\ngoals:")
    print(f"  cold <= 0.8 x recipe sum + fixed: {cold:.1f} s <= {limit:.1f} s: {_verdict(cold <= limit)}")
    if alone:
        alone_sum = sum(alone.values())
        print(f"  cold <= 0.75 x sum of recipes run alone: {cold:.1f} s <= {0.75 * alone_sum:.1f} s: "
              f"{_verdict(cold <= 0.75 * alone_sum)}")
    print(f"  shard imbalance <= 1.2: {imbalance:.2f}: {_verdict(imbalance <= 1.2)}")
    print(f"  no-op <= 5% of cold: {noop:.1f} s <= {0.05 * cold:.1f} s: {_verdict(noop <= 0.05 * cold)}")
    print(f"  peak memory <= 8 GB: {peak_rss / GB:.2f} GB (RSS sum): {_verdict(peak_rss <= 8 * GB)}")
    print(f"  no-op ran no recipe: {_verdict(not noop_ran)}; edit ran only {edit.stem}: "
          f"{_verdict(edit_ran == [edit.stem])}")
    print(f"load average after: {load_average()} (other jobs on this machine slow every figure above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

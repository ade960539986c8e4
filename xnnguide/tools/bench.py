"""How fast the site builds: ``make bench``.

One run measures, on this checkout and this machine:

* **cold**: ``make clean`` (the environment stays), then ``make html``: every
  recipe runs;
* **no-op**: ``make html`` again: nothing changed, no recipe may run;
* **one-snippet edit**: a comment appended to one recipe, ``make html``: that
  recipe alone may run. The file is then restored and the site rebuilt once
  more (not timed), so the checkout is left as it was found;
* the **sum of the recipes' own execution times** in the cold build, from
  their run records, and the **fixed Sphinx cost**: the cold build's wall
  time minus the time sphinx-gallery spent running recipes;
* the **peak resident memory of the cold build**, all its processes together
  (make, Sphinx, sphinx-gallery's worker processes), sampled with psutil
  every 0.25 s. Two sums are reported: of RSS, an upper bound that counts a
  shared library once per process, and of PSS, which splits shared pages
  between the processes that map them.

It then compares them with the goals: cold ≤ 0.8 × recipe time + fixed cost;
no-op ≤ 5 % of cold; peak memory ≤ 8 GB. ``--alone`` also runs every recipe
by itself (``python -m xnnguide.run_recipe``, a fresh interpreter each) and
reports that sum, the cost the shared build is meant to beat.

Timings depend on what else runs on the machine: the load average is printed
before and after.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from xnnguide import environment
from xnnguide.records import recipe_files

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"
RECORDS = GALLERY / "_records"
GB = 1e9


def _tree_memory(root: psutil.Process) -> tuple[int, int, int]:
    """(RSS, PSS, processes) of *root* and all its descendants; processes that end meanwhile count 0."""
    rss = pss = 0
    processes = [root, *root.children(recursive=True)]
    for process in processes:
        try:
            memory = process.memory_full_info()  # on Linux it carries PSS (smaps)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        rss, pss = rss + memory.rss, pss + memory.pss
    return rss, pss, len(processes)


class TreeMemory(threading.Thread):
    """Samples the summed memory of a process and all its descendants."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0
        self.peak_processes = 0
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self._halt.is_set():
            rss, pss, processes = _tree_memory(root)
            if rss > self.peak_rss:
                self.peak_rss, self.peak_processes = rss, processes
            self.peak_pss = max(self.peak_pss, pss)
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _make(make: list[str], target: str, watch: bool = False) -> tuple[float, TreeMemory | None, str]:
    """Run ``make <target>``; its wall time, memory sampler and output tail."""
    start = time.perf_counter()
    process = subprocess.Popen([*make, target], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    sampler = TreeMemory(process.pid) if watch else None
    if sampler:
        sampler.start()
    output, _ = process.communicate()
    seconds = time.perf_counter() - start
    if sampler:
        sampler.stop()
    if process.returncode != 0:
        sys.stdout.write(output[-4000:])
        raise SystemExit(f"error: `{' '.join(make)} {target}` failed with status {process.returncode}")
    return seconds, sampler, output


def _summary() -> dict:
    return json.loads((RECORDS / "build.json").read_text(encoding="utf-8"))


def _recipe_seconds(names: list[str]) -> dict[str, float]:
    seconds = {}
    for name in names:
        record = json.loads((RECORDS / "runs" / f"{name}.json").read_text(encoding="utf-8"))
        seconds[name] = float(record["seconds"])
    return seconds


def _load() -> str:
    return " ".join(f"{load:.2f}" for load in psutil.getloadavg())


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.bench", description="Measure how fast the site builds.")
    parser.add_argument("--make", default="make", help="the make command, with its variables (default: make)")
    parser.add_argument("--edit", type=Path, help="the recipe to edit (default: the fastest one)")
    parser.add_argument("--alone", action="store_true", help="also run every recipe alone and sum their times")
    args = parser.parse_args(argv)
    make = args.make.split()
    described = environment.describe()
    print(f"machine: {described['cpu']}, {described['cores']} logical cores; load average {_load()}")

    _make(make, "clean")
    cold, memory, _ = _make(make, "html", watch=True)
    assert memory is not None
    summary = _summary()
    ran = summary["ran"]
    recipes = _recipe_seconds(ran)
    recipe_sum = sum(recipes.values())
    fixed = cold - summary["gallery_seconds"]
    print(f"cold `make html`: {cold:.1f} s ({len(ran)} recipes ran, parallel={summary['parallel']})")

    noop, _, _ = _make(make, "html")
    noop_ran = _summary()["ran"]

    sources = {path.stem: path for path in recipe_files(ROOT / "snippets")}
    edit = args.edit or sources[min(recipes, key=recipes.get)]
    edit = edit.resolve()
    original = edit.read_bytes()
    try:
        edit.write_bytes(original + b"\n# edited by make bench\n")
        edited, _, _ = _make(make, "html")
        edit_ran = _summary()["ran"]
    finally:
        edit.write_bytes(original)
    _make(make, "html")  # back in step with the restored file

    alone = {}
    if args.alone:
        for name in sorted(recipes):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "xnnguide.run_recipe", str(sources[name])], cwd=ROOT,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            alone[name] = time.perf_counter() - start

    print()
    print("recipe times in the cold build (s):")
    for name, seconds in sorted(recipes.items(), key=lambda item: -item[1]):
        extra = f"   alone: {alone[name]:.1f}" if name in alone else ""
        print(f"  {name:<45} {seconds:8.1f}{extra}")
    print()
    limit = 0.8 * recipe_sum + fixed
    rows = [
        ("cold make html", f"{cold:.1f} s"),
        ("  of which running recipes (gallery phase)", f"{summary['gallery_seconds']:.1f} s"),
        ("  fixed Sphinx cost (cold - gallery phase)", f"{fixed:.1f} s"),
        ("sum of recipe execution times", f"{recipe_sum:.1f} s"),
    ]
    if alone:
        rows.append(("sum of recipes run alone (fresh interpreters)", f"{sum(alone.values()):.1f} s"))
    rows += [
        ("no-op make html", f"{noop:.1f} s ({len(noop_ran)} recipes ran)"),
        (f"one-snippet edit ({edit.name})", f"{edited:.1f} s (ran: {', '.join(edit_ran) or 'none'})"),
        ("peak memory of the cold build, sum of RSS", f"{memory.peak_rss / GB:.2f} GB "
                                                     f"({memory.peak_processes} processes)"),
        ("peak memory of the cold build, sum of PSS", f"{memory.peak_pss / GB:.2f} GB"),
    ]
    for label, value in rows:
        print(f"{label:<48} {value}")
    print()
    print("goals:")
    print(f"  cold <= 0.8 x recipe sum + fixed: {cold:.1f} s <= {limit:.1f} s: {_verdict(cold <= limit)}")
    print(f"  no-op <= 5% of cold: {noop:.1f} s <= {0.05 * cold:.1f} s: {_verdict(noop <= 0.05 * cold)}")
    print(f"  peak memory <= 8 GB: {memory.peak_rss / GB:.2f} GB (RSS sum): {_verdict(memory.peak_rss <= 8 * GB)}")
    print(f"  no-op ran no recipe: {_verdict(not noop_ran)}; edit ran only {edit.stem}: "
          f"{_verdict(edit_ran == [edit.stem])}")
    print(f"load average after: {_load()} (other jobs on this machine slow every figure above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

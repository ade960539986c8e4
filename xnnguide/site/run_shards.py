"""The build's recipe runs: the recipes that must run, in shards side by side, merged into the gallery.

``python -m xnnguide.site.run_shards [--jobs N | --shard k/N --folder DIR] [-- SPHINX-BUILD ARGUMENTS]``

1. **Plan** (:func:`plan`): the recipes and build steps whose last run does not hold
   (:func:`~xnnguide.core.records.stale_reason`), split into shards by their past run times
   (:func:`xnnguide.core.shards.assign`). A no-op rebuild has none and runs nothing.
2. **Shards** (:func:`run_shard`): one process per shard, one shard per core by default. A shard runs its
   recipes one at a time, each in a child process the watchdog stops at its time or memory budget or when it
   crashes (:mod:`.watchdog`); the children start from a forkserver that imported torch and Sphinx once. A
   recipe's child is a one-recipe Sphinx build into the shard's folder: sphinx-gallery runs the recipe and
   writes its page, figures and checksum, and :mod:`.build` ends that build there. A build step's child runs
   its script (:mod:`.build_steps`). A recipe that times something holds the machine: the other shards'
   recipes stop meanwhile (:mod:`xnnguide.core.quiet`).
3. **Merge** (:func:`xnnguide.core.shards.merge`, the code CI's site job runs on the folders of its matrix of
   ``make html SHARD=k/N``): the shard folders into the gallery; what this build ran in ``_records/build.json``.
4. **Render**: the SPHINX-BUILD ARGUMENTS, with ``plot_gallery`` off (as in ``conf.py``): it writes the pages
   and runs no recipe.

With ``--shard k/N`` (a CI matrix job) only shard *k* runs, into ``--folder``, and nothing is merged.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from xnnguide.core import quiet, shards
from xnnguide.core.records import (build_step_files, declared_files, is_build_step, load_run_record,
                                   missing_requirements, recipe_files, records_dir, shown, stale_reason)
from xnnguide.site import build_steps, runs, watchdog

#: This build's id, set by the build and inherited by its shards and their children.
BUILD_ID = runs.BUILD_ID
#: The threads each recipe gets: its share of the cores, beside the other shards.
THREADS = "XNNGUIDE_RECIPE_THREADS"


def plan(docs: Path, snippets: Path, gallery: Path, count: int) -> list[list[Path]]:
    """The recipes and build steps that must run, in at most *count* shards (no empty one).

    A recipe whose declared requirements this machine lacks is left to the render, which records it as not
    run (:func:`xnnguide.site.build.leave_out_unrunnable`)."""
    sources = [source for source in [*recipe_files(snippets), *build_step_files(docs)]
               if _must_run(gallery, snippets, source)]
    sources = [source for source in sources if is_build_step(source) or not missing_requirements(source)]
    for source in sources:
        print(f"recipe {source.name} runs: {_must_run(gallery, snippets, source)}", flush=True)
    return [in_order(shard) for shard in shards.assign(sources, gallery, min(count, len(sources))) if shard]


def _must_run(gallery: Path, snippets: Path, source: Path) -> str | None:
    """Why *source* must run in this build, or ``None``."""
    page = None if is_build_step(source) else gallery / f"{source.relative_to(snippets)}.md5"
    return stale_reason(gallery, source) or (None if page is None or page.is_file() else "its page is missing")


def in_order(sources: list[Path]) -> list[Path]:
    """*sources* with each after the ones whose files it reads (``# xnnguide_depends_on``), else as given."""
    ordered: list[Path] = []
    waiting = list(sources)
    while waiting:
        done = {path.resolve() for path in ordered}
        ready = next((source for source in waiting if all(
            path.resolve() in done for path in declared_files(source)
            if path.resolve() in {other.resolve() for other in waiting}
            and path.resolve() != source.resolve())), waiting[0])
        waiting.remove(ready)
        ordered.append(ready)
    return ordered


def build_one_recipe(argv: list[str]) -> int:
    """In a recipe's child: the one-recipe Sphinx build *argv* (sphinx-gallery runs the recipe)."""
    from sphinx.cmd.build import build_main

    return build_main(argv)


def run_shard(sources: list[Path], folder: Path, docs: Path, conf: Path, threads: int) -> int:
    """Run *sources* one at a time into the shard *folder*, each in a watched child; the number that failed."""
    shutil.rmtree(folder, ignore_errors=True)
    records_dir(folder).mkdir(parents=True)
    env = dict(os.environ, **{THREADS: str(threads), "OMP_NUM_THREADS": str(threads)})
    work = Path(tempfile.mkdtemp(prefix="xnnguide-shard-"))
    watchdog.start_forkserver()
    failed = 0
    for source in sources:
        started = datetime.datetime.now().astimezone().isoformat()
        if is_build_step(source):
            ran = watchdog.run(build_steps.execute, (str(source), str(records_dir(folder) / "facts")), source, env)
        else:
            argv = ["-q", "-c", str(conf), "-b", "html", "-d", str(work / "doctrees"), "-D", "plot_gallery=1",
                    "-D", f"xnnguide_gallery_dir={os.path.relpath(folder, docs)}", "-D", f"xnnguide_recipe={source.stem}",
                    str(docs), str(work / "html")]
            ran = watchdog.run(build_one_recipe, (argv,), source, env)
        seconds, gb = watchdog.budgets(source)
        fields = dict(started=started, worker=threads < (os.cpu_count() or 1), budget_seconds=seconds,
                      budget_gb=gb, peak_gb=round(ran.peak / 1e9, 3))
        if ran.stopped:
            runs.write_record(folder, source, ran.elapsed, ran.pid, status="failed",
                              error=watchdog.stop_message(source, ran), **fields)
            # What sphinx-gallery began to write of it; the pages' build writes its page without outputs.
            for path in shards.outputs(folder, conf / "snippets", source):
                if path.parts[0] != "_records":
                    (folder / path).unlink()
        elif is_build_step(source):
            status, error = ran.outcome
            runs.write_record(folder, source, ran.elapsed, ran.pid, status=status, error=error, **fields)
        else:  # the recipe's own build wrote its record, with sphinx-gallery's verdict
            runs.add_to_record(folder, source.stem, **fields)
        record = load_run_record(folder, source.stem) or {}
        if record.get("status") not in ("passed", "failed"):
            error = f"its build ended with status {ran.outcome} before judging the recipe; see the build's log"
            print(f"{shown(source)}:1: recipe: {error}", file=sys.stderr, flush=True)
            runs.write_record(folder, source, ran.elapsed, ran.pid, status="failed", error=error, **fields)
        failed += (load_run_record(folder, source.stem) or {}).get("status") != "passed"
    shutil.rmtree(work, ignore_errors=True)
    manifest = {"recipes": [source.stem for source in sources]}
    (folder / shards.MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.site.run_shards", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="shards side by side (default: cores)")
    parser.add_argument("--shard", help="k/N: run shard k of N only, into --folder (a CI matrix job)")
    parser.add_argument("--folder", type=Path, help="the shard's folder (with --shard)")
    parser.add_argument("--run", nargs="+", metavar="SOURCE", help=argparse.SUPPRESS)  # a shard's process
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--docs", type=Path, default=Path("docs"))
    parser.add_argument("--conf", type=Path, default=Path("."))
    parser.add_argument("sphinx", nargs=argparse.REMAINDER, help="-- then the render's sphinx-build arguments")
    args = parser.parse_args(argv)
    docs, snippets = args.docs.resolve(), (args.conf / "snippets").resolve()
    gallery = docs / "gallery"
    if args.run:
        return min(1, run_shard([Path(source) for source in args.run], args.folder, docs, args.conf.resolve(),
                                args.threads))
    os.environ.setdefault(BUILD_ID, uuid.uuid4().hex)
    # One hold folder per build, for the recipes that hold the machine while they time (xnnguide.core.quiet).
    os.environ.setdefault(quiet.ENV, tempfile.mkdtemp(prefix="xnnguide-quiet-"))
    started = time.perf_counter()
    records_dir(gallery).mkdir(parents=True, exist_ok=True)
    (records_dir(gallery) / "executions.log").write_text("", encoding="utf-8")  # this build's runs only
    try:
        index, count = shards.parse(args.shard) if args.shard else (0, args.jobs)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    planned = plan(docs, snippets, gallery, count)
    if args.shard:  # the same plan on every machine of the matrix; its shard k, or nothing
        mine = planned[index - 1] if index <= len(planned) else []
        folder = (args.folder or Path("_build") / f"shard-{index}-of-{count}").resolve()
        failed = run_shard(mine, folder, docs, args.conf.resolve(), threads=os.cpu_count() or 1)
        print(f">> shard {index}/{count}: ran {len(mine)} recipe(s), {failed} failed, in "
              f"{time.perf_counter() - started:.1f} s; their records and outputs are in {folder}", flush=True)
        return 1 if failed else 0
    folders = [Path("_build").resolve() / f"shard-{number}-of-{len(planned)}" for number in range(1, len(planned) + 1)]
    threads = max(1, (os.cpu_count() or 1) // max(1, len(planned)))
    processes = [subprocess.Popen([sys.executable, "-m", __spec__.name, "--run", *map(str, shard), "--folder",
                                   str(folder), "--threads", str(threads), "--docs", str(docs),
                                   "--conf", str(args.conf)])
                 for shard, folder in zip(planned, folders)]
    statuses = [process.wait() for process in processes]
    if any(status not in (0, 1) for status in statuses):
        print(f"error: a shard's process ended with status {statuses}", file=sys.stderr)
        return 2
    problems = shards.merge(folders, gallery, snippets, docs)
    for problem in problems:
        print(f"error: {problem}; refusing to merge, nothing was copied", file=sys.stderr)
    if problems:
        return 2
    summary = {"build_id": os.environ[BUILD_ID], "pid": os.getpid(), "jobs": args.jobs,
               "shards": [[source.stem for source in shard] for shard in planned],
               "ran": [source.stem for shard in planned for source in shard if not is_build_step(source)],
               "build_steps": [source.stem for shard in planned for source in shard if is_build_step(source)],
               "skipped": sorted({source.stem for source in recipe_files(snippets)}
                                 - {source.stem for shard in planned for source in shard}),
               "shard_seconds": [round(sum(float((load_run_record(gallery, source.stem) or {}).get("seconds", 0.0))
                                           for source in shard), 3) for shard in planned],
               "gallery_seconds": round(time.perf_counter() - started, 3)}
    (records_dir(gallery) / "build.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    if not args.sphinx:
        return 0
    render = [sys.executable, "-m", "sphinx", *[word for word in args.sphinx if word != "--"]]
    return subprocess.run(render, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())

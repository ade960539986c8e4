"""The build's recipe runs: the recipes that must run, in shards side by side, merged into the gallery.

``python -m xnnguide.site.run_shards [--jobs N | --shard k/N --folder DIR] [-- SPHINX-BUILD ARGUMENTS]``

1. :func:`plan`: the recipes and build steps whose last run does not hold, as units of work, the never-timed first,
   then longest first by past run times (:func:`xnnguide.core.shards.units`); a no-op rebuild has none.
2. :func:`run_shard`, one process per core: each claims the next unit no other shard took and runs its recipes
   one at a time, each in a child the watchdog watches (:mod:`.watchdog`), started from a forkserver that
   imported torch and Sphinx once. A recipe's child is a one-recipe Sphinx build into the shard's folder
   (:mod:`.build`); a build step's runs its script (:mod:`.build_steps`).
3. :func:`xnnguide.core.shards.merge`, the code CI's site job runs too: the shard folders into the gallery.
4. The SPHINX-BUILD ARGUMENTS render the pages with ``plot_gallery`` off: no recipe runs.

With ``--shard k/N`` (a CI matrix job) only shard *k* of a split that is the same on every machine runs
(:func:`xnnguide.core.shards.assign`), into ``--folder``, and nothing is merged.
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
from pathlib import Path

from sphinx.cmd.build import build_main

from xnnguide.core import machine_hold, shards
from xnnguide.core.records import load_run_record, records_dir, stale_reason
from xnnguide.core.recipes import (budget_gb, budget_seconds, build_step_files, find_source, imports_torch,
                                   is_build_step, missing_requirements, recipe_files, shown)
from xnnguide.site import build_steps, runs, watchdog


def plan(docs: Path, snippets: Path, gallery: Path) -> list[Path]:
    """The recipes and build steps that must run, each named with why.

    A recipe whose declared requirements this machine lacks is left to the pages' build, which records it as
    not run (:func:`xnnguide.site.build.leave_out_unrunnable`)."""
    sources = []
    for source in [*recipe_files(snippets), *build_step_files(docs)]:
        page = None if is_build_step(source) else gallery / f"{source.relative_to(snippets)}.md5"
        reason = stale_reason(gallery, source) or (None if page is None or page.is_file() else "its page is missing")
        if reason and (is_build_step(source) or not missing_requirements(source)):
            print(f"recipe {source.name} runs: {reason}", flush=True)
            sources.append(source)
    return sources


def _claim(claims: Path | None, number: int) -> bool:
    """Whether this shard takes unit *number*: the first shard to create its claim file does."""
    if claims is None:
        return True
    try:
        (claims / str(number)).touch(exist_ok=False)
    except FileExistsError:
        return False
    return True


def run_shard(work_units: list[list[Path]], claims: Path | None, folder: Path, docs: Path, conf: Path,
              threads: int) -> int:
    """Run the units of work this shard claims (all of them without *claims*), in their order, one recipe at a
    time into the shard *folder*, each in a watched child; the number that failed.

    Shards side by side on one machine share *claims*: each takes the next unit no other shard took, so that
    they end together, within about the last unit's time."""
    shutil.rmtree(folder, ignore_errors=True)
    records_dir(folder).mkdir(parents=True)
    env = dict(os.environ, **{runs.THREADS: str(threads), "OMP_NUM_THREADS": str(threads)})
    # The recipes' one-recipe builds see the checkout's layout, every entry a link to the checkout's, but the
    # gallery (docs/gallery), which is the shard's folder: the pages they write name the gallery's paths and
    # labels, as the pages' build finds them after the merge, and a recipe finds its neighbours by their paths.
    work = Path(tempfile.mkdtemp(prefix="xnnguide-shard-"))
    (work / "docs").mkdir()
    for entry in (*(path for path in conf.iterdir() if path.name not in ("docs", "_build")), *docs.iterdir()):
        if entry != docs / "gallery":
            (work / entry.relative_to(conf)).symlink_to(entry.resolve())
    (work / "docs" / "gallery").symlink_to(folder.resolve(), target_is_directory=True)
    watchdog.start_forkserver(torch=any(imports_torch(source) for unit in work_units for source in unit))
    failed, sources, parent = 0, [], os.getppid()
    for source in (source for number, unit in enumerate(work_units) if _claim(claims, number) for source in unit):
        if os.getppid() != parent:  # the build that started this shard is gone: so is the need for its work
            break
        sources.append(source)
        started = datetime.datetime.now().astimezone().isoformat()
        if is_build_step(source):
            ran = watchdog.run(build_steps.execute, (str(source), str(records_dir(folder) / "facts")), source, env)
        else:
            argv = ["-q", "-c", str(conf), "-b", "html", "-d", str(work / "doctrees"), "-D", "plot_gallery=1",
                    "-D", f"xnnguide_recipe={source.stem}", str(work / "docs"), str(work / "html")]
            ran = watchdog.run(build_main, (argv,), source, env)
        fields = dict(started=started, worker=threads < (os.cpu_count() or 1), budget_seconds=budget_seconds(source),
                      budget_gb=budget_gb(source), peak_gb=round(ran.peak / 1e9, 3))
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
        if str(work) in (record.get("error") or ""):  # a traceback names the checkout's files, not the links
            runs.add_to_record(folder, source.stem, error=record["error"].replace(str(work), str(conf)))
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
    parser.add_argument("--plan", type=Path, help=argparse.SUPPRESS)  # a shard's process: the units to claim
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--docs", type=Path, default=Path("docs"))
    parser.add_argument("--conf", type=Path, default=Path("."))
    parser.add_argument("sphinx", nargs=argparse.REMAINDER, help="-- then the pages' sphinx-build arguments")
    args = parser.parse_args(argv)
    docs, snippets, conf = args.docs.resolve(), (args.conf / "snippets").resolve(), args.conf.resolve()
    gallery = docs / "gallery"
    if args.plan:
        units = [[Path(path) for path in unit] for unit in json.loads(args.plan.read_text(encoding="utf-8"))]
        return min(1, run_shard(units, args.plan.parent / "claims", args.folder, docs, conf, args.threads))
    runs.use_build_id()
    # One hold folder per build, for the recipes that hold the machine while they time (xnnguide.core.machine_hold).
    os.environ.setdefault(machine_hold.ENV, tempfile.mkdtemp(prefix="xnnguide-hold-"))
    started = time.perf_counter()
    records_dir(gallery).mkdir(parents=True, exist_ok=True)
    (records_dir(gallery) / "executions.log").write_text("", encoding="utf-8")  # this build's runs only
    try:
        index, count = shards.parse(args.shard) if args.shard else (0, args.jobs)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    sources = plan(docs, snippets, gallery)
    if args.shard:  # the same split on every machine of the matrix; shard k's part
        mine = shards.assign(sources, gallery, count)[index - 1]
        folder = (args.folder or Path("_build") / f"shard-{index}-of-{count}").resolve()
        failed = run_shard([mine], None, folder, docs, conf, threads=os.cpu_count() or 1)
        print(f">> shard {index}/{count}: ran {len(mine)} recipe(s), {failed} failed, in "
              f"{time.perf_counter() - started:.1f} s; their records and outputs are in {folder}", flush=True)
        return 1 if failed else 0
    work_units = [unit for _, unit in shards.units(sources, gallery)]
    shared = Path("_build").resolve() / "shards"
    shutil.rmtree(shared, ignore_errors=True)
    (shared / "claims").mkdir(parents=True)
    (shared / "plan.json").write_text(json.dumps([[str(path) for path in unit] for unit in work_units]),
                                      encoding="utf-8")
    folders = [shared / f"shard-{number}" for number in range(1, min(count, len(work_units)) + 1)]
    threads = max(1, (os.cpu_count() or 1) // max(1, len(folders)))
    processes = [subprocess.Popen([sys.executable, "-m", __spec__.name, "--plan", str(shared / "plan.json"),
                                   "--folder", str(folder), "--threads", str(threads), "--docs", str(docs),
                                   "--conf", str(conf)]) for folder in folders]
    statuses = [process.wait() for process in processes]
    if any(status not in (0, 1) for status in statuses):
        print(f"error: a shard's process ended with status {statuses}", file=sys.stderr)
        return 2
    problems = shards.merge(folders, gallery, snippets, docs)
    for problem in problems:
        print(f"error: {problem}; refusing to merge, nothing was copied", file=sys.stderr)
    if problems:
        return 2
    write_summary(gallery, snippets, docs, folders, sources, time.perf_counter() - started, args.jobs)
    shutil.rmtree(shared, ignore_errors=True)
    if not args.sphinx:
        return 0
    render = [sys.executable, "-m", "sphinx", *[word for word in args.sphinx if word != "--"]]
    return subprocess.run(render, check=False).returncode


def write_summary(gallery: Path, snippets: Path, docs: Path, folders: list[Path], sources: list[Path],
                  seconds: float, jobs: int) -> None:
    """What this build ran, in ``_records/build.json``: each shard's recipes and build steps, in the order it ran
    them, and the seconds their run records hold; the recipes that were current."""
    ran = [json.loads((folder / shards.MANIFEST).read_text(encoding="utf-8"))["recipes"] for folder in folders]
    steps = {name for names in ran for name in names if is_build_step(find_source(snippets, docs, name))}
    summary = {"build_id": os.environ[runs.BUILD_ID], "pid": os.getpid(), "jobs": jobs, "shards": ran,
               "ran": [name for names in ran for name in names if name not in steps],
               "build_steps": [name for names in ran for name in names if name in steps],
               "skipped": sorted({path.stem for path in recipe_files(snippets)} - {path.stem for path in sources}),
               "shard_seconds": [round(sum(float((load_run_record(gallery, name) or {}).get("seconds", 0.0))
                                           for name in names), 3) for names in ran],
               "gallery_seconds": round(seconds, 3)}
    (records_dir(gallery) / "build.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())

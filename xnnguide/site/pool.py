"""One pool for the whole gallery: every recipe the build has to run starts as soon as a core is free.

sphinx-gallery goes through the gallery one folder at a time, each folder with a pool of its own: a core waits
at the end of every folder for its longest recipe, and a recipe that runs alone (``# sphinx_gallery_parallel =
False``) leaves the other cores idle. Here, when sphinx-gallery starts a gallery, every recipe it would run, in
every folder, goes to one pool of ``gallery_conf["parallel"]`` slots, each recipe in a watched child process
(:mod:`.isolation`). sphinx-gallery then goes through its folders as before, in the Sphinx process, and takes
each recipe's result from the pool when it comes to it; pages, index and downloads are written as before.

The order of starts (:func:`next_job`):

* a recipe that runs alone starts only when nothing else runs: the ones that can start at once run first,
  before any other; one that must wait for another recipe does not hold the others back, and starts the
  next time nothing runs, at the latest after the last of them;
* a recipe that reads the files of another (``# xnnguide_depends_on = ../folder/recipe.py``) starts after it
  ended;
* the others, beside each other: those declared long first (``# xnnguide_start_early = True``), so that the
  short ones fill the cores around them, then the rest, each group in gallery order.

The build steps (:mod:`.build_steps`) run in the same pool, after the recipes of their group; nobody reads
their results in gallery order: the end of the gallery's run (:func:`take_build_steps`) waits for them.

A recipe that runs beside others gets its share of the threads (:func:`xnnguide.site.scheduling.thread_share`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import threading
from pathlib import Path
from typing import Any

from sphinx.errors import ExtensionError
from sphinx_gallery import gen_gallery, gen_rst

from xnnguide.core.records import declared_files
from xnnguide.site import build_steps, isolation, runs, scheduling

_START_EARLY = re.compile(r"^\s*#\s*xnnguide_start_early\s*=\s*True\s*$", re.MULTILINE)


def starts_early(source: str | os.PathLike[str]) -> bool:
    """Whether a recipe declares itself long: ``# xnnguide_start_early = True``."""
    return bool(_START_EARLY.search(Path(source).read_text(encoding="utf-8")))


@dataclasses.dataclass(frozen=True)
class Job:
    """One recipe or build step the pool runs."""

    source: Path
    # sphinx-gallery's generate_file_rst arguments; None for a build step (.build_steps), which has no page
    args: tuple[str, str, str, dict[str, Any]] | None
    alone: bool  # sphinx_gallery_parallel = False
    early: bool  # xnnguide_start_early = True
    after: frozenset[Path]  # the recipes of this pool whose files it reads
    position: int  # in gallery order

    @property
    def name(self) -> str:
        return self.source.stem


def next_job(pending: list[Job], running: list[Job], ended: set[Path]) -> Job | None:
    """The job a free slot starts now, or ``None``: none may start until a running one ends."""
    ready = [job for job in pending if job.after <= ended]
    if not ready and not running:  # recipes that wait for each other: the first in gallery order goes
        ready = sorted(pending, key=lambda job: job.position)[:1]
    alone = [job for job in ready if job.alone]
    if alone and not running:
        return min(alone, key=lambda job: job.position)
    others = [job for job in ready if not job.alone]
    if others and not any(job.alone for job in running):
        return min(others, key=lambda job: (not job.early, job.position))
    return None


class Pool:
    """Runs *jobs* in *slots* threads, each job in a child process; :meth:`take` waits for a job's run."""

    def __init__(self, jobs: list[Job], slots: int, gallery_conf: dict[str, Any]) -> None:
        self._gallery_conf = gallery_conf
        self._pending, self._running, self._ended = list(jobs), [], set()
        self.build_steps = [job.source for job in jobs if job.args is None]
        self._sources = frozenset(job.source for job in jobs)
        self._runs: dict[Path, isolation.Run | BaseException] = {}
        self._changed = threading.Condition()
        self._threads = [threading.Thread(target=self._work, name=f"xnnguide-pool-{number}", daemon=True)
                         for number in range(slots)]
        for thread in self._threads:
            thread.start()

    def __contains__(self, source: Path) -> bool:
        return source in self._sources

    def _work(self) -> None:
        while True:
            with self._changed:
                while (job := next_job(self._pending, self._running, self._ended)) is None:
                    if not self._pending:
                        return
                    self._changed.wait()
                self._pending.remove(job)
                self._running.append(job)
                # Recorded here, under the lock: two slots that start at once would append in either order.
                runs.execution_order.append(job.name)
            try:
                ran: isolation.Run | BaseException = (
                    isolation.run(job.args, beside_others=not job.alone) if job.args is not None
                    else build_steps.run(job.source, self._gallery_conf, beside_others=not job.alone))
            except BaseException as error:  # noqa: BLE001 - handed to the Sphinx process by take()
                ran = error
            with self._changed:
                self._running.remove(job)
                self._ended.add(job.source)
                self._runs[job.source] = ran
                self._changed.notify_all()

    def take(self, source: Path) -> isolation.Run:
        """The run of *source*, once it ended; raises what its run raised."""
        with self._changed:
            self._changed.wait_for(lambda: source in self._runs)
            ran = self._runs.pop(source)
        if isinstance(ran, BaseException):
            raise ran
        return ran


#: The pool of the gallery sphinx-gallery is going through, once it started.
_pool: list[Pool] = []


def jobs(src_root: Path, target_root: Path, gallery_conf: dict[str, Any]) -> list[Job]:
    """Every recipe sphinx-gallery would run in the gallery at *src_root*, in gallery order."""
    folders = [Path()] + [Path(name) for name in gen_gallery.get_subsections(
        gallery_conf["src_dir"], src_root, gallery_conf, check_for_header=True)]
    found: list[tuple[Path, tuple[str, str, str, dict[str, Any]]]] = []
    for folder in folders:
        src_dir, target_dir = src_root / folder, target_root / folder
        names = _collect_gallery_files([src_dir], gallery_conf)
        order = _get_callables(gallery_conf, "within_subsection_order", src_dir)[0]
        for fname in sorted(names, key=order):
            args = (fname, str(target_dir), str(src_dir), gallery_conf)
            source = isolation.recipe_path(fname, src_dir)
            try:
                scheduling.budgets(source)
            except ValueError:  # sphinx-gallery's call reports it, as a failing recipe
                continue
            if isolation.must_run(*args):
                found.append((source, args))
    by_path = {source.resolve(): source for source, _ in found}
    return [Job(source, args, alone=bool(_split_parallel([args[0]], args[2], gallery_conf)[0]),
                early=starts_early(source), position=position,
                after=frozenset(by_path[path] for path in map(Path.resolve, declared_files(source))
                                if path in by_path and by_path[path] != source))
            for position, (source, args) in enumerate(found)]


def step_jobs(first_position: int) -> list[Job]:
    """The build steps this build runs (:func:`.build_steps.pending`), after the recipes in gallery order."""
    return [Job(source, None, alone=False, early=starts_early(source), after=frozenset(), position=position)
            for position, source in enumerate(build_steps.pending(), first_position)]


def _start(src_root: Path, target_root: Path, gallery_conf: dict[str, Any]) -> None:
    slots = int(gallery_conf.get("parallel") or 1)
    if slots < 2:  # sphinx-gallery runs every recipe in the Sphinx process, one after the other
        return
    found = jobs(src_root, target_root, gallery_conf)
    for job in found:  # sphinx-gallery makes a folder's output folders when it comes to it; these run first
        (Path(job.args[1]) / "images" / "thumb").mkdir(parents=True, exist_ok=True)
    found += step_jobs(len(found))
    isolation.prepare(gallery_conf)
    _pool[:] = [Pool(found, slots, gallery_conf)]


def take_build_steps() -> list[Path]:
    """The build steps this build's pool ran (each recorded its run as it ended), once they all ended."""
    if not _pool:
        return []
    for source in _pool[0].build_steps:
        _pool[0].take(source)  # raises what the pool's thread raised running it
    return list(_pool[0].build_steps)


def generate_file_rst(fname: str, target_dir: str, src_dir: str, gallery_conf: dict[str, Any]) -> Any:
    """sphinx-gallery's ``generate_file_rst``: a recipe the pool ran gives its run's result."""
    source, args = isolation.recipe_path(fname, src_dir), (fname, target_dir, src_dir, gallery_conf)
    if _pool and source in _pool[0]:
        return isolation.result(args, _pool[0].take(source))
    return isolation.generate_file_rst(*args)


def _start_with_the_gallery(generate_dir_rst: Any) -> Any:
    @functools.wraps(generate_dir_rst)
    def wrapper(src_dir: Any, target_dir: Any, gallery_conf: dict[str, Any], seen_backrefs: set[str],
                is_subsection: bool = True) -> Any:
        if not is_subsection:  # the gallery's root: sphinx-gallery's first call for this gallery
            _start(Path(src_dir), Path(target_dir), gallery_conf)
        return generate_dir_rst(src_dir, target_dir, gallery_conf, seen_backrefs, is_subsection)

    wrapper.xnnguide_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _in_the_sphinx_process(split: Any) -> Any:
    @functools.wraps(split)
    def wrapper(listdir: list[str], src_dir: Any, gallery_conf: dict[str, Any]) -> Any:
        serial, parallel = split(listdir, src_dir, gallery_conf)
        if _pool:  # the pool runs them: sphinx-gallery collects every result here, in the Sphinx process
            return [name for name in listdir if name in serial or name in parallel], []
        return serial, parallel

    wrapper.xnnguide_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _private(module: Any, name: str) -> Any:
    found = getattr(module, name, None)
    if found is None:
        raise ExtensionError(f"xnnguide.site.pool: {module.__name__}.{name} is gone from this sphinx-gallery; "
                             "the build's pool of recipes needs it")
    return found


_split_parallel = _private(gen_rst, "_split_parallel")
_get_callables = _private(gen_rst, "_get_callables")
_collect_gallery_files = _private(__import__("sphinx_gallery.utils", fromlist=["_"]), "_collect_gallery_files")


def install() -> None:
    """Run the gallery's recipes in one pool: sphinx-gallery calls these functions by their module's global
    names. Installing twice changes nothing."""
    if not getattr(gen_gallery.generate_dir_rst, "xnnguide_wrapped", False):
        gen_gallery.generate_dir_rst = _start_with_the_gallery(gen_gallery.generate_dir_rst)
    if not getattr(gen_rst._split_parallel, "xnnguide_wrapped", False):
        gen_rst._split_parallel = _in_the_sphinx_process(gen_rst._split_parallel)
    gen_rst.generate_file_rst = generate_file_rst

"""The hook around each recipe sphinx-gallery runs, and the run records it writes.

:func:`recipe_hook` (sphinx-gallery's ``reset_modules``) sizes the recipe's threads, collects its facts, logs
that it ran, and writes its run record (:mod:`xnnguide.core.records`) in ``<gallery>/_records/``; :mod:`.build`
puts sphinx-gallery's verdict in, and the shard the peak memory.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from xnnguide.core import environment, facts
from xnnguide.site import watchdog
from xnnguide.core.records import load_run_record, records_dir, write_run_record
from xnnguide.core.recipes import (DEFAULT_BUDGET_GB, DEFAULT_BUDGET_SECONDS, budget_gb, budget_seconds,
                                   dependency_key, find_recipe, listed_order, source_digest)

#: This build's id, set when it starts (:func:`use_build_id`); the shards and recipe processes inherit it, which
#: ties their log lines and run records to this build.
BUILD_ID = "XNNGUIDE_BUILD_ID"
#: The threads a recipe gets, set by its shard (:mod:`.run_shards`): its share of the cores.
THREADS = "XNNGUIDE_RECIPE_THREADS"

# When each recipe that is running in this process started, by name: from the hook's "before" to its "after".
_started: dict[str, float] = {}


def gallery_dir(app_or_env: Any) -> Path:
    """The folder sphinx-gallery writes the gallery to, where the run records live."""
    return Path(app_or_env.srcdir) / app_or_env.config.xnnguide_gallery_dir


class RecipeOrder:
    """sphinx-gallery ``within_subsection_order``: the order the subsection's header lists; recipes it does not
    list (``tests/static/test_gallery_order.py`` forbids them) come after, by file name."""

    def __init__(self, src_dir: str | os.PathLike[str]) -> None:
        self.order = listed_order(src_dir)

    def __call__(self, filename: str) -> tuple[int, str]:
        stem = Path(filename).stem
        return (self.order.index(stem) if stem in self.order else len(self.order), str(filename))

    def __repr__(self) -> str:  # sphinx-gallery puts it in the config it compares between builds
        return f"<{type(self).__name__}>"


def use_build_id() -> None:
    """This build's id for its log lines and records: the one its shard inherited, or a new one."""
    os.environ.setdefault(BUILD_ID, uuid.uuid4().hex)


def limit_threads(source: Path) -> None:
    """Give the recipe its share of the cores (:data:`THREADS`), for PyTorch and for ExecuTorch's thread pool,
    which ignores ``OMP_NUM_THREADS``: sized before the recipe loads a program, which may keep the old pool."""
    cores = os.cpu_count() or 1
    threads = int(os.environ.get(THREADS, cores))
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    if "executorch.extension.pybindings._C" in sys.modules or (
            threads < cores and "executorch" in source.read_text(encoding="utf-8")):
        from executorch.extension.pybindings import portable_lib

        if portable_lib._threadpool_get_thread_count() != threads:
            portable_lib._unsafe_reset_threadpool(threads)


def recipe_hook(gallery_conf: dict[str, Any], fname: str | None, when: str) -> None:
    """sphinx-gallery ``reset_modules`` callable: bracket each recipe run."""
    if fname is None:  # called once when entering a folder of examples
        return
    name, src = Path(fname).stem, Path(gallery_conf["src_dir"])
    # sphinx-gallery names the file only, not its subsection.
    source = find_recipe((src / gallery_conf["examples_dirs"]).resolve(), fname)
    gallery = src / gallery_conf["gallery_dirs"]
    if when == "before":
        limit_threads(source)
        facts.begin_recipe(name, records_dir(gallery) / "facts")
        with open(records_dir(gallery) / "executions.log", "a", encoding="utf-8") as log:  # what this build ran
            log.write(f"{name}\t{os.getpid()}\t{_dt.datetime.now().isoformat()}\t{os.environ.get(BUILD_ID, '-')}\n")
        _started[name] = time.perf_counter()
        watchdog.mark_started()
        return
    facts.end_recipe()
    # sphinx-gallery decides pass or fail only after this hook returns: .build fills in the verdict.
    write_record(gallery, source, time.perf_counter() - _started.pop(name, time.perf_counter()), os.getpid(),
                 status="finished", error=None, budget_seconds=budget_seconds(source), budget_gb=budget_gb(source))


def add_to_record(gallery: Path, name: str, **fields: Any) -> None:
    record = load_run_record(gallery, name)
    if record is not None:
        write_run_record(records_dir(gallery), {**record, **fields})  # type: ignore[typeddict-item]


def write_record(gallery: Path, source: Path, seconds: float, pid: int, **fields: Any) -> None:
    """Write the run record of the recipe or build step *source*, which just ran for *seconds* in process *pid*."""
    record = {
        "recipe": source.stem,
        "source": str(source),
        "source_sha256": source_digest(source),
        "dependency_key": dependency_key(source),
        "seconds": round(seconds, 3),
        "build_id": os.environ.get(BUILD_ID),
        "pid": pid,
        "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment.describe(),
        **fields,
    }
    write_run_record(records_dir(gallery), record)


def register(app: Sphinx) -> None:
    app.add_config_value("xnnguide_gallery_dir", "gallery", "env")
    app.add_config_value("xnnguide_default_budget_seconds", DEFAULT_BUDGET_SECONDS, "")
    app.add_config_value("xnnguide_default_budget_gb", DEFAULT_BUDGET_GB, "")

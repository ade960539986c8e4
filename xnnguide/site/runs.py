"""Run records: what each recipe sphinx-gallery runs leaves behind, written by the hook around its run.

:func:`recipe_hook`, sphinx-gallery's ``reset_modules``: before a recipe runs it sizes the recipe's threads
(:func:`.scheduling.limit_threads`), opens the recipe's facts file (:mod:`xnnguide.core.facts`) and appends
a line to the executions log, so tests can tell what ran; after it, it writes the recipe's *run record*
(status, time, budgets, versions, CPU, date; :mod:`xnnguide.core.records`). :mod:`.isolation` adds to the
record, or writes it for a recipe whose process it stopped; :mod:`.build` puts sphinx-gallery's verdict in.

The records live in the gallery's folder (:func:`gallery_dir`), under ``_records/``.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
import uuid
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from xnnguide.core import environment, facts
from xnnguide.core.records import (dependency_key, find_recipe, load_run_record, records_dir, source_digest,
                                   write_run_record)
from xnnguide.site.scheduling import budgets, in_worker, limit_threads

#: This build's id, set when it starts (:func:`start_build`); worker and recipe processes inherit it, which
#: ties their log lines and run records to this build.
BUILD_ID = "XNNGUIDE_BUILD_ID"

#: The recipes this build ran, in the order they started (added by the pool, or by the serial path).
execution_order: list[str] = []

# When each recipe that is running in this process started, by name: from the hook's "before" to its "after".
_started: dict[str, float] = {}


def gallery_dir(app_or_env: Any) -> Path:
    """The folder sphinx-gallery writes the gallery to, where the run records live."""
    return Path(app_or_env.srcdir) / app_or_env.config.xnnguide_gallery_dir


def executions_log(gallery: Path) -> Path:
    """The executions log: a line per recipe run of this build (name, pid, time, build id)."""
    return records_dir(gallery) / "executions.log"


def start_build() -> None:
    """A new build: a new id for its log lines and records, and no recipe run yet."""
    os.environ[BUILD_ID] = uuid.uuid4().hex
    execution_order.clear()


def _gallery(gallery_conf: dict[str, Any]) -> Path:
    return Path(gallery_conf["src_dir"]) / gallery_conf["gallery_dirs"]


def _recipe_source(gallery_conf: dict[str, Any], fname: str) -> Path:
    # sphinx-gallery names the file only, not its subsection.
    return find_recipe((Path(gallery_conf["src_dir"]) / gallery_conf["examples_dirs"]).resolve(), fname)


def recipe_hook(gallery_conf: dict[str, Any], fname: str | None, when: str) -> None:
    """sphinx-gallery ``reset_modules`` callable: bracket each recipe run."""
    if fname is None:  # called once when entering a folder of examples
        return
    name = Path(fname).stem
    source = _recipe_source(gallery_conf, fname)
    if when == "before":
        limit_threads(gallery_conf, source)
        facts.begin_recipe(name, records_dir(_gallery(gallery_conf)) / "facts")
        # One short line in append mode: workers' lines never interleave.
        with open(executions_log(_gallery(gallery_conf)), "a", encoding="utf-8") as log:
            log.write(f"{name}\t{os.getpid()}\t{_dt.datetime.now().isoformat()}\t"
                      f"{os.environ.get(BUILD_ID, '-')}\n")
        _started[name] = time.perf_counter()
        return
    facts.end_recipe()
    # sphinx-gallery decides pass or fail only after this hook returns; the end of the build (.build) fills
    # in the verdict.
    write_run(gallery_conf, fname, seconds=time.perf_counter() - _started.pop(name, time.perf_counter()),
              pid=os.getpid(), status="finished", error=None,
              **dict(zip(("budget_seconds", "budget_gb"), budgets(source))))


def add_to_run_record(gallery_conf: dict[str, Any], fname: str, **fields: Any) -> None:
    """Add *fields* to the run record the recipe's hook wrote, if it wrote one."""
    gallery = _gallery(gallery_conf)
    record = load_run_record(gallery, Path(fname).stem)
    if record is not None:
        write_run_record(records_dir(gallery), {**record, **fields})  # type: ignore[typeddict-item]


def write_run(gallery_conf: dict[str, Any], fname: str, seconds: float, pid: int, **fields: Any) -> None:
    """Write the run record of a recipe that just ran (here, or in a process :mod:`.isolation` watched)."""
    write_record(_gallery(gallery_conf), _recipe_source(gallery_conf, fname), seconds, pid, **fields)


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
        # Whether a worker process of a parallel build ran it, beside others.
        "worker": in_worker(),
        "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment.describe(),
        **fields,
    }
    write_run_record(records_dir(gallery), record)


def register(app: Sphinx) -> None:
    """Add the gallery's folder to the configuration (called by :func:`xnnguide.site.setup`)."""
    app.add_config_value("xnnguide_gallery_dir", "gallery", "env")

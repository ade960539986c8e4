"""When and with what a recipe runs: its place in the gallery, its time and memory budgets, its threads.

* :class:`RecipeOrder`, sphinx-gallery's ``within_subsection_order``: the order a subsection's header lists;
* :func:`budgets`: a recipe's time and memory budget, declared or this build's defaults (enforced by
  :mod:`.isolation`);
* :func:`thread_share` and :func:`limit_threads`: thread limits for recipes that run side by side
  (:mod:`.pool` decides which do), and :func:`in_worker`, which tells whether this process is one of them.

A recipe runs in processes that have no Sphinx application (a joblib worker, a child of :mod:`.isolation`):
what they need of the build (its defaults, which process is the build's own) reaches them in environment
variables, set by :func:`start_build`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from xnnguide.core.records import DEFAULT_BUDGET_GB, DEFAULT_BUDGET_SECONDS, budget_gb, budget_seconds, listed_order

# Set by the Sphinx process when a build starts; loky worker processes inherit it, which tells a worker
# apart from the Sphinx process.
_BUILD_PID = "XNNGUIDE_BUILD_PID"
#: "1" or "0" in the child process that runs one recipe (:mod:`.isolation`): whether its parent is a worker.
IN_WORKER = "XNNGUIDE_IN_WORKER"
# The default budgets of this build, from its configuration, for processes that have no Sphinx application.
_DEFAULT_SECONDS = "XNNGUIDE_DEFAULT_BUDGET_SECONDS"
_DEFAULT_GB = "XNNGUIDE_DEFAULT_BUDGET_GB"


class RecipeOrder:
    """sphinx-gallery ``within_subsection_order``: the order the subsection's header lists; recipes it does not
    list (``tests/test_gallery_order.py`` forbids them) come after, by file name."""

    def __init__(self, src_dir: str | os.PathLike[str]) -> None:
        self.order = listed_order(src_dir)

    def __call__(self, filename: str) -> tuple[int, str]:
        stem = Path(filename).stem
        return (self.order.index(stem) if stem in self.order else len(self.order), str(filename))

    def __repr__(self) -> str:  # sphinx-gallery puts it in the config it compares between builds
        return f"<{type(self).__name__}>"


def start_build(app: Sphinx) -> None:
    """Mark this process as the build's own and hand this build's default budgets to the processes it starts
    (called when the build starts, before any recipe runs)."""
    os.environ[_BUILD_PID] = str(os.getpid())
    os.environ[_DEFAULT_SECONDS] = str(float(app.config.xnnguide_default_budget_seconds))
    os.environ[_DEFAULT_GB] = str(float(app.config.xnnguide_default_budget_gb))


def budgets(source: Path) -> tuple[float, float]:
    """A recipe's time budget in seconds and memory budget in GB, declared or this build's defaults."""
    seconds = float(os.environ.get(_DEFAULT_SECONDS, DEFAULT_BUDGET_SECONDS))
    gb = float(os.environ.get(_DEFAULT_GB, DEFAULT_BUDGET_GB))
    return budget_seconds(source, seconds), budget_gb(source, gb)


def in_worker() -> bool:
    """Whether this is a worker process of a build, or a recipe's process started by one."""
    if os.environ.get(IN_WORKER) in ("0", "1"):
        return os.environ[IN_WORKER] == "1"
    return os.environ.get(_BUILD_PID, str(os.getpid())) != str(os.getpid())


def thread_share(gallery_conf: dict[str, Any]) -> int:
    """The threads of a recipe that runs beside others: its share of the cores."""
    return max(1, (os.cpu_count() or 1) // int(gallery_conf.get("parallel") or 1))


def limit_threads(gallery_conf: dict[str, Any], source: Path) -> None:
    """Keep recipes that run side by side from oversubscribing the cores (called before each recipe runs).

    In a worker process of a parallel build each recipe gets ``cores // parallel`` threads, for PyTorch and
    for ExecuTorch's thread pool, which XNNPACK uses; in the Sphinx process, where recipes run alone, both get
    every core. joblib sets ``OMP_NUM_THREADS`` in workers, which only a fresh ``import torch`` obeys.
    ExecuTorch's pool ignores it and defaults to every core, so it is sized here, before the recipe loads any
    program: a loaded XNNPACK program may still use the pool that a reset replaces.
    """
    cores, worker = os.cpu_count() or 1, in_worker()
    threads = thread_share(gallery_conf) if worker else cores
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    loaded = "executorch.extension.pybindings._C" in sys.modules
    if loaded or (worker and "executorch" in source.read_text(encoding="utf-8")):
        from executorch.extension.pybindings import portable_lib

        if portable_lib._threadpool_get_thread_count() != threads:
            portable_lib._unsafe_reset_threadpool(threads)


def register(app: Sphinx) -> None:
    """Add the default budgets to the configuration (called by :func:`xnnguide.site.setup`)."""
    app.add_config_value("xnnguide_default_budget_seconds", DEFAULT_BUDGET_SECONDS, "")
    app.add_config_value("xnnguide_default_budget_gb", DEFAULT_BUDGET_GB, "")

"""Each recipe runs in a process of its own, within its time and memory budgets.

In sphinx-gallery's own process, a recipe that hangs would hold the build, and one whose interpreter dies
(a segfault in native code, an abort) would take the build down. :func:`generate_file_rst` wraps
sphinx-gallery's function of that name: a recipe that has to run runs in a child process, started from a
``forkserver`` that has imported torch, and the modules most recipes import, once (:func:`preload`). The
process that asked for the run watches it:

* **time**: the budget counts the seconds the child ran, not those it spent stopped by a recipe that held
  the machine to time something (:mod:`xnnguide.core.quiet`); past it, the child is asked for a traceback
  (``SIGUSR1``, which :mod:`faulthandler` answers from any state) and killed;
* **memory**: the resident memory of the child and its own children is read every 0.2 s; over the budget,
  the child is asked for a traceback (``SIGUSR1``) and killed;
* **crashes**: the signal that ended the child, with the traceback that :mod:`faulthandler` wrote.

A recipe stopped in any of these ways is an ordinary failing example for sphinx-gallery: its page is written
without outputs, the build goes on, and ends failing with the recipe's file, line and reason. Its run record
says ``failed``, so the next build runs it again (:func:`xnnguide.core.records.stale_reason`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import faulthandler
import functools
import linecache
import multiprocessing
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import cloudpickle
import psutil
from joblib._parallel_backends import ParallelBackendBase
from sphinx_gallery import gen_rst
from sphinx_gallery.utils import get_md5sum

from xnnguide.core import quiet
from xnnguide.core.records import helper_modules, imported_modules, recipe_files, shown
from xnnguide.core.results import failure_line
from xnnguide.site import recipe_output, runs, scheduling

#: How long a child asked for its traceback has to write it before it is killed.
TRACE_SECONDS = 0.5
POLL_SECONDS = 0.2
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+) in (.+)$')
#: The packages a recipe imports torch through, itself included.
TORCH_PACKAGES = frozenset({"torch", "torchvision", "torchao", "executorch"})

_original = gen_rst.generate_file_rst


@dataclasses.dataclass(frozen=True)
class Run:
    """How one recipe's child process ended."""

    outcome: Any  # sphinx-gallery's result for the recipe, or (a str) why the child was stopped
    elapsed: float
    pid: int
    peak: int  # bytes: the highest resident memory of the child and its own children
    trace: str  # what faulthandler wrote: empty unless the child was stopped


def recipe_path(fname: str, src_dir: str | os.PathLike[str]) -> Path:
    """The file of the recipe sphinx-gallery names *fname* in *src_dir*: one spelling of each path, so that the
    pool finds a recipe by it."""
    return Path(os.path.normpath(Path(src_dir, fname)))


def must_run(fname: str, target_dir: str, src_dir: str, gallery_conf: dict[str, Any]) -> bool:
    """Whether sphinx-gallery would execute this recipe now: it is executable and changed (or stale runs)."""
    source = recipe_path(fname, src_dir)
    checksum = Path(target_dir, f"{fname}.md5")
    current = checksum.is_file() and checksum.read_text() == get_md5sum(source, mode="t")
    return not (current and not gallery_conf["run_stale_examples"]) and gen_rst.executable_script(source, gallery_conf)


def run(args: tuple[str, str, str, dict[str, Any]], beside_others: bool) -> Run:
    """Run sphinx-gallery's ``generate_file_rst(*args)`` in a watched child process.

    *beside_others*: the recipe shares the cores with other recipes, and gets its share of threads (as in a
    joblib worker, whose thread limits it gets too); otherwise it has the machine to itself. Raises
    :class:`ValueError` for a recipe whose budgets do not parse.
    """
    fname, _, src_dir, gallery_conf = args
    return run_call(_generate_file_rst, args, recipe_path(fname, src_dir), gallery_conf, beside_others)


def _generate_file_rst(*args: Any) -> Any:
    # By this module's name the child finds it; sphinx-gallery's own is replaced by the pool's in the parent.
    recipe_output.show_printed_output_only()
    return _original(*args)


def run_call(function: Any, args: tuple[Any, ...], source: Path, gallery_conf: dict[str, Any],
             beside_others: bool) -> Run:
    """Run ``function(*args)`` in a watched child process, within the budgets that *source* declares: the
    recipe or build step it runs. *function* must be importable by name, as the child unpickles it."""
    seconds, gb = scheduling.budgets(source)
    env = dict(os.environ, **{scheduling.IN_WORKER: "1" if beside_others else "0"})
    if beside_others:
        share = str(scheduling.thread_share(gallery_conf))
        env.update({name: os.environ.get(name, share) for name in ParallelBackendBase.MAX_NUM_THREADS_VARS})
    payload = cloudpickle.dumps((function, args, env, sys.path, os.getcwd()))
    with tempfile.NamedTemporaryFile("w+", prefix="xnnguide-trace-", suffix=".txt") as trace:
        outcome, elapsed, pid, peak = _watch(payload, trace.name, seconds, gb, preload(gallery_conf))
        text = "" if not isinstance(outcome, str) else Path(trace.name).read_text(errors="replace")
    return Run(outcome, elapsed, pid, peak, text)


def generate_file_rst(fname: str, target_dir: str, src_dir: str, gallery_conf: dict[str, Any]) -> Any:
    """sphinx-gallery's ``generate_file_rst``, with the recipe run in a watched child process."""
    args = (fname, target_dir, src_dir, gallery_conf)
    if not must_run(*args):
        return _original(*args)
    runs.execution_order.append(Path(fname).stem)
    try:
        ran = run(args, scheduling.in_worker())
    except ValueError as error:
        return failed(args, str(error), 0.0)
    return result(args, ran)


def result(args: tuple[str, str, str, dict[str, Any]], ran: Run) -> Any:
    """sphinx-gallery's result for a recipe that ran in a child: its own, or a failure naming the recipe's line
    and why the child was stopped."""
    fname, _, src_dir, gallery_conf = args
    source = recipe_path(fname, src_dir)
    if not isinstance(ran.outcome, str):
        runs.add_to_run_record(gallery_conf, fname, peak_gb=round(ran.peak / 1e9, 3))
        return ran.outcome
    frames = _recipe_thread(ran.trace, source)
    # From the recipe's outermost frame on, as sphinx-gallery shows a traceback.
    first = next((index for index, (path, _, _) in enumerate(frames) if _same(path, source)), 0)
    trace_text = "".join(
        f'  File "{path}", line {number}, in {function}\n'
        + (f"    {linecache.getline(path, int(number)).strip()}\n" if _same(path, source) else "")
        for path, number, function in frames[first:])
    # The recipe's own line, found as `make test` finds it in a traceback.
    line, raised = failure_line(trace_text, source, Path.cwd())
    inside = any(_same(path, source) for path, _, _ in frames)
    message = ran.outcome + (f" while at {linecache.getline(str(source), line).strip()}" if inside else "")
    print(f"{shown(source)}:{line}: recipe: {message}{raised}", file=sys.stderr, flush=True)
    error = f"Traceback (most recent call last), from faulthandler in process {ran.pid}:\n{trace_text}{message}"
    seconds, gb = scheduling.budgets(source)
    runs.write_run(gallery_conf, fname, seconds=ran.elapsed, pid=ran.pid, status="failed", error=error,
                   budget_seconds=seconds, budget_gb=gb, peak_gb=round(ran.peak / 1e9, 3))
    return failed(args, error, ran.elapsed)


def failed(args: tuple[Any, ...], error: str, elapsed: float) -> Any:
    """sphinx-gallery's result for a recipe that failed; its page is written without outputs."""
    intro, title, _, out_vars = _original(*args[:3], {**args[3], "plot_gallery": False})
    out_vars.pop("passing", None)
    out_vars["formatted_exception"] = error
    return intro, title, (elapsed, 0.0), out_vars


def preload(gallery_conf: dict[str, Any]) -> list[str]:
    """The modules the forkserver imports once for all the recipes it starts, so that no recipe's time budget
    is spent on importing them.

    sphinx-gallery resets matplotlib before each recipe, and the child unpickles its work from this module:
    every child needs both. torch takes seconds to import: it is preloaded when a recipe of the gallery
    imports it, as every recipe of this site does, and left out for a gallery whose recipes never import it
    (the test suite's throwaway sites). So are the modules of :data:`TORCH_PACKAGES` that at least half of
    the recipes import (:func:`shared_imports`): ExecuTorch's runtime, ``exir`` and XNNPACK partitioner take
    about 5 s more in each recipe that imports them.
    """
    snippets = (Path(gallery_conf["src_dir"]) / gallery_conf["examples_dirs"]).resolve()
    torch = ["torch"] if recipes_import_torch(snippets) else []
    return torch + [name for name in shared_imports(snippets) if name not in torch] + ["matplotlib.pyplot", __name__]


@functools.cache
def torch_imports(snippets: Path) -> tuple[int, collections.Counter[str]]:
    """How many recipes there are below *snippets*, and for each module of :data:`TORCH_PACKAGES` how many of
    them import it, themselves or through an ``xnnguide`` helper module."""
    sources = recipe_files(snippets)
    counts = collections.Counter(
        name for source in sources
        for name in {module for path in [source, *helper_modules(source)] for module in imported_modules(path)}
        if name.split(".")[0] in TORCH_PACKAGES)
    return len(sources), counts


def shared_imports(snippets: Path) -> list[str]:
    """The modules of :data:`TORCH_PACKAGES` that at least half of the recipes below *snippets* import, by
    name. A module fewer recipes import is left to them: every child of the forkserver would carry it."""
    recipes_found, counts = torch_imports(snippets)
    return sorted(name for name, count in counts.items() if 2 * count >= recipes_found)


def recipes_import_torch(snippets: Path) -> bool:
    """Whether a recipe below *snippets*, or an ``xnnguide`` helper module it imports, imports torch or a
    package of :data:`TORCH_PACKAGES`."""
    return bool(torch_imports(snippets)[1])


def prepare(gallery_conf: dict[str, Any]) -> None:
    """Set up the forkserver that starts recipes, before threads start recipes from it (:mod:`.pool`)."""
    _context(preload(gallery_conf))


def _context(preloaded: list[str]) -> Any:
    if multiprocessing.get_start_method(allow_none=True) not in (None, "fork", "spawn", "forkserver"):
        # A loky worker's own method, "loky", which a forkserver child cannot look up when it prepares itself.
        multiprocessing.set_start_method("forkserver", force=True)
    context = multiprocessing.get_context("forkserver")
    # Takes effect when the process starts its forkserver, for its first recipe.
    context.set_forkserver_preload(preloaded)
    return context


def _watch(payload: bytes, trace: str, seconds: float, gb: float, preloaded: list[str]) -> tuple[Any, float, int, int]:
    """Run the child; its result, or why it was stopped, with its time, pid and peak memory."""
    context = _context(preloaded)
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(payload, send, trace), name="xnnguide-recipe")
    started = time.monotonic()
    child.start()
    send.close()
    peak, result, over, family = 0, None, False, []
    ran, polled = 0.0, started  # seconds the child was not stopped, and when that was last counted
    process = psutil.Process(child.pid)
    while True:
        # Sampled before waiting, so that a recipe done within one poll is measured too.
        rss, family = _rss(process)
        peak = max(peak, rss)
        if receive.poll(POLL_SECONDS):
            with contextlib.suppress(EOFError):  # EOF: the child ended without a result
                result = receive.recv_bytes()
            break
        now = time.monotonic()
        if quiet.status(process) != psutil.STATUS_STOPPED:  # a holder's SIGSTOP does not spend the budget
            ran += now - polled
        polled = now
        over = rss > gb * 1e9
        if not over and ran < seconds:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGUSR1)  # faulthandler writes where it is
        time.sleep(TRACE_SECONDS)
        peak = max(peak, _rss(process)[0])
        child.kill()
        break
    child.join()
    quiet.unregister(child.pid)
    quiet.continue_paused_by(child.pid)  # what it stopped, if it died holding the machine
    elapsed = round(time.monotonic() - started, 3)
    if result is not None:
        return cloudpickle.loads(result), elapsed, child.pid, peak
    for orphan in family[1:]:  # what the stopped recipe started itself
        with contextlib.suppress(psutil.Error):
            orphan.kill()
    code = child.exitcode or 0
    if over:
        why = f"used {peak / 1e9:.3g} GB, over its {gb:g} GB memory budget,"
    elif ran >= seconds:
        held = elapsed - ran
        why = f"stopped after {seconds:g} s (its time budget)" + (
            f", besides {held:.0f} s stopped while other recipes timed" if held >= 1 else "")
    elif code < 0:
        why = f"its process died of {signal.Signals(-code).name}"
    else:
        why = f"its process exited with code {code} before the recipe ended"
    return why, elapsed, child.pid, peak


def _rss(process: psutil.Process) -> tuple[int, list[psutil.Process]]:
    """Resident memory, in bytes, of a process and its descendants, and those processes."""
    total, family = 0, [process]
    with contextlib.suppress(psutil.Error):
        family += process.children(recursive=True)
    for each in family:
        with contextlib.suppress(psutil.Error):
            total += each.memory_info().rss
    return total, family


def _child(payload: bytes, send: Any, trace: str) -> None:
    """In the child: run the function (sphinx-gallery's, for a recipe) under faulthandler, send back its result."""
    function, args, env, path, cwd = cloudpickle.loads(payload)
    os.environ.clear()
    os.environ.update(env)
    quiet.register()  # a recipe that times something may stop this one for a moment (xnnguide.core.quiet)
    sys.path[:] = path
    os.chdir(cwd)
    out = open(trace, "w")  # noqa: SIM115 - open until the process ends
    faulthandler.enable(out, all_threads=True)
    faulthandler.register(signal.SIGUSR1, out, all_threads=True)
    result = function(*args)
    send.send_bytes(cloudpickle.dumps(result))
    send.close()


def _same(path: str, source: Path) -> bool:
    return os.path.realpath(path) == os.path.realpath(source)


def _recipe_thread(text: str, source: Path) -> list[tuple[str, str, str]]:
    """Frames, oldest first, of the first thread in a faulthandler dump that is in *source*."""
    threads: list[list[tuple[str, str, str]]] = [[]]
    for line in text.splitlines():
        match = _FRAME.match(line)
        if match:
            threads[-1].insert(0, match.groups())  # type: ignore[arg-type]
        elif line.strip():
            threads.append([])
    inside = [frames for frames in threads if any(_same(path, source) for path, _, _ in frames)]
    return inside[0] if inside else next((frames for frames in threads if frames), [])

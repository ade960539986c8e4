"""The watchdog: each recipe runs in a child process of its own, within its time and memory budgets.

A hanging recipe would hold its shard, and a crashing one (a segfault, an abort) take it down. :func:`run`
starts the child from a forkserver that imported Sphinx, and torch when the recipes need it
(:func:`start_forkserver`), and stops it, after asking :mod:`faulthandler` for a traceback (``SIGUSR1``):

* **time**: past its budget, counted from the recipe's start (:func:`mark_started`) and not counting the
  seconds a recipe holding the machine kept it stopped (:mod:`xnnguide.core.machine_hold`);
* **memory**: when the resident memory of the child and its children, read every 0.2 s, passes its budget;
* **crashes**: the signal that ended it is named.

:func:`stop_message` names a stopped recipe at its own line; its run record says ``failed``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import linecache
import multiprocessing
import os
import pickle
import re
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import psutil

from xnnguide.core import machine_hold
from xnnguide.core.recipes import budget_gb, budget_seconds, shown
from xnnguide.core.results import failure_line

#: How long a child asked for its traceback has to write it before it is killed.
TRACE_SECONDS = 0.5
POLL_SECONDS = 0.2
#: How long a child may take to start its recipe (:func:`mark_started`) before that time counts in its budget.
START_SECONDS = 60.0
#: The file a child touches when its recipe starts.
STARTED = "XNNGUIDE_RECIPE_STARTED"
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+) in (.+)$')
#: What the forkserver imports once for all its children: Sphinx and the site, and torch for recipes that need it.
PRELOAD = ["sphinx.cmd.build", "sphinx_gallery.gen_gallery", "myst_parser", "pydata_sphinx_theme", "matplotlib.pyplot",
           "xnnguide.site"]
TORCH_PRELOAD = ["torch", "executorch.exir", "executorch.runtime"]
_preload: list[str] = list(PRELOAD)


@dataclasses.dataclass(frozen=True)
class Run:
    """How one child process ended."""

    outcome: Any  # what the function returned, or (a str) why the child was stopped
    elapsed: float
    pid: int
    peak: int  # bytes: the highest resident memory of the child and its own children
    trace: str  # what faulthandler wrote: empty unless the child was stopped

    @property
    def stopped(self) -> bool:
        return isinstance(self.outcome, str)


def run(function: Callable[..., Any], args: tuple[Any, ...], source: Path, env: dict[str, str]) -> Run:
    """Run ``function(*args)`` in a watched child process with the environment *env*, within the budgets the
    budget table gives *source* (the recipe or build step it runs; :func:`xnnguide.core.recipes.budget_table`). *function* must be importable by name."""
    seconds, gb = budget_seconds(source), budget_gb(source)
    with tempfile.TemporaryDirectory(prefix="xnnguide-watch-") as folder:
        trace, started = Path(folder, "trace.txt"), Path(folder, "started")
        payload = pickle.dumps((function, args, {**env, STARTED: str(started)}, sys.path, os.getcwd()))
        outcome, elapsed, pid, peak = _watch(payload, str(trace), started, seconds, gb)
        text = "" if not isinstance(outcome, str) else trace.read_text(errors="replace")
    return Run(outcome, elapsed, pid, peak, text)


def mark_started() -> None:
    """In a watched child, as its recipe starts: from now on its time budget counts."""
    if os.environ.get(STARTED):
        Path(os.environ[STARTED]).touch()


def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    # Takes effect when this process starts its forkserver, for its first child.
    context.set_forkserver_preload(_preload)
    return context


def start_forkserver(torch: bool) -> None:
    """Start the forkserver and wait until it imported :data:`PRELOAD`, and :data:`TORCH_PRELOAD` with *torch*
    (the recipes import it), so that no recipe's budget pays for the imports."""
    _preload[:] = [*TORCH_PRELOAD, *PRELOAD] if torch else PRELOAD
    child = _context().Process(target=os.getpid, name="xnnguide-forkserver-ready")
    child.start()
    child.join()


def _watch(payload: bytes, trace: str, marker: Path, seconds: float, gb: float) -> tuple[Any, float, int, int]:
    """Run the child; its result, or why it was stopped, with its time, pid and peak memory."""
    context = _context()
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(payload, send, trace), name="xnnguide-recipe")
    started = time.monotonic()
    child.start()
    send.close()
    peak, result, over, family = 0, None, False, []
    ran, paused, polled = 0.0, 0.0, started  # seconds of the budget spent, and stopped; when last counted
    try:
        process = psutil.Process(child.pid)
    except psutil.NoSuchProcess:  # it ended already: the forkserver, its parent, reaped it (a quick build step)
        process = None
    while True:
        # Sampled before waiting, so that a recipe done within one poll is measured too.
        rss, family = _rss(process)
        peak = max(peak, rss)
        if receive.poll(POLL_SECONDS):
            with contextlib.suppress(EOFError):  # EOF: the child ended without a result
                result = receive.recv_bytes()
            break
        now = time.monotonic()
        if machine_hold.status(process) == psutil.STATUS_STOPPED:  # a holder's SIGSTOP spends no budget
            paused += now - polled
        elif marker.exists() or now - started > START_SECONDS:
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
    machine_hold.unregister(child.pid)
    machine_hold.continue_paused_by(child.pid)  # what it stopped, if it died holding the machine
    elapsed = round(time.monotonic() - started, 3)
    if result is not None:
        return pickle.loads(result), elapsed, child.pid, peak
    for orphan in family[1:]:  # what the stopped recipe started itself
        with contextlib.suppress(psutil.Error):
            orphan.kill()
    code = child.exitcode or 0
    if over:
        why = f"used {peak / 1e9:.3g} GB, over its {gb:g} GB memory budget,"
    elif ran >= seconds:
        why = f"stopped after {seconds:g} s (its time budget)" + (
            f", besides {paused:.0f} s stopped while other recipes timed" if paused >= 1 else "")
    elif code < 0:
        why = f"its process died of {signal.Signals(-code).name}"
    else:
        why = f"its process exited with code {code} before the recipe ended"
    return why, elapsed, child.pid, peak


def _rss(process: psutil.Process | None) -> tuple[int, list[psutil.Process]]:
    """Resident memory, in bytes, of a process and its descendants, and those processes (none once it is gone)."""
    if process is None:
        return 0, []
    total, family = 0, [process]
    with contextlib.suppress(psutil.Error):
        family += process.children(recursive=True)
    for each in family:
        with contextlib.suppress(psutil.Error):
            total += each.memory_info().rss
    return total, family


def _child(payload: bytes, send: Any, trace: str) -> None:
    """In the child: run the function under faulthandler, send back its result (an exit status, if it exits)."""
    function, args, env, path, cwd = pickle.loads(payload)
    os.environ.clear()
    os.environ.update(env)
    machine_hold.register()  # a recipe that times something may pause this one for a moment
    sys.path[:] = path
    os.chdir(cwd)
    out = open(trace, "w")  # noqa: SIM115 - open until the process ends
    faulthandler.enable(out, all_threads=True)
    faulthandler.register(signal.SIGUSR1, out, all_threads=True)
    try:
        result = function(*args)
    except SystemExit as done:
        result = done.code
    send.send_bytes(pickle.dumps(result))
    send.close()


def stop_message(source: Path, ran: Run) -> str:
    """The error of a child the watchdog stopped (its record's ``error``), printed first as one line naming the
    recipe's own line and why: ``snippets/<task>/<name>.py:LINE: recipe: <why> while at <code>``."""
    frames = _recipe_thread(ran.trace, source)
    # From the recipe's outermost frame on, as Python shows a traceback.
    first = next((index for index, (path, _, _) in enumerate(frames) if _same(path, source)), 0)
    trace_text = "".join(
        f'  File "{os.path.realpath(path)}", line {number}, in {function}\n'
        + (f"    {linecache.getline(path, int(number)).strip()}\n" if _same(path, source) else "")
        for path, number, function in frames[first:])
    line, raised = failure_line(trace_text, source, Path.cwd())
    inside = any(_same(path, source) for path, _, _ in frames)
    message = ran.outcome + (f" while at {linecache.getline(str(source), line).strip()}" if inside else "")
    print(f"{shown(source)}:{line}: recipe: {message}{raised}", file=sys.stderr, flush=True)
    return f"Traceback (most recent call last), from faulthandler in process {ran.pid}:\n{trace_text}{message}"


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

"""xnnguide.core.machine_hold: a recipe that times something stops the other running recipes, and only for as long as it
holds the machine."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from xnnguide.core import machine_hold

ROOT = Path(__file__).resolve().parents[2]
# A recipe process: registers, starts a child of its own (as a recipe starts an exporter), then spins.
RECIPE = """
import subprocess, sys
from pathlib import Path
from xnnguide.core import machine_hold
machine_hold.register()
subprocess.Popen([sys.executable, "-c", "while True: pass"])
Path(sys.argv[1]).touch()
while True:
    pass
"""
# A recipe that holds the machine, then dies without releasing it.
DYING_HOLDER = """
import os, sys
from pathlib import Path
from xnnguide.core import machine_hold
machine_hold.register()
machine_hold.pause_other_recipes()
Path(sys.argv[1]).touch()
os._exit(1)
"""


@pytest.fixture
def hold_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(machine_hold.ENV, str(tmp_path / "hold"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    started: list[subprocess.Popen] = []
    yield tmp_path, started
    for process in started:
        for each in [process.pid, *(child.pid for child in _children(process.pid))]:
            with _gone():
                psutil.Process(each).resume()
                psutil.Process(each).kill()
        process.wait()


class _gone:
    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        return kind is not None and issubclass(kind, psutil.Error)


def _children(pid: int) -> list[psutil.Process]:
    with _gone():
        return psutil.Process(pid).children(recursive=True)
    return []


def start(script: str, marker: Path, started: list) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", script, str(marker)])
    started.append(process)
    return process


def wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def statuses(process: subprocess.Popen) -> set[str]:
    """The states of a recipe process and of what it started."""
    found = set()
    for each in [psutil.Process(process.pid), *_children(process.pid)]:
        with _gone():
            found.add(each.status())
    return found


def test_a_hold_stops_the_other_recipes_with_their_children_until_it_is_released(hold_folder):
    tmp_path, started = hold_folder
    recipes = [start(RECIPE, tmp_path / f"ready-{n}", started) for n in range(2)]
    assert wait_for(lambda: all((tmp_path / f"ready-{n}").exists() for n in range(2)))
    assert all(len(_children(recipe.pid)) == 1 for recipe in recipes)

    held = machine_hold.pause_other_recipes()
    assert sorted(held.stopped) == sorted(recipe.pid for recipe in recipes)
    assert all(statuses(recipe) == {psutil.STATUS_STOPPED} for recipe in recipes)

    assert held.release() >= 0
    assert wait_for(lambda: all(psutil.STATUS_STOPPED not in statuses(recipe) for recipe in recipes))


def test_no_recipe_starts_while_the_machine_is_held(hold_folder):
    tmp_path, started = hold_folder
    held = machine_hold.pause_other_recipes()
    start(RECIPE, tmp_path / "ready", started)
    time.sleep(1.5)
    assert not (tmp_path / "ready").exists(), "a recipe registered while the machine was held"
    held.release()
    assert wait_for(lambda: (tmp_path / "ready").exists())


def test_what_a_holder_that_died_stopped_is_continued_by_its_watcher(hold_folder):
    tmp_path, started = hold_folder
    recipe = start(RECIPE, tmp_path / "ready", started)
    assert wait_for(lambda: (tmp_path / "ready").exists())
    holder = start(DYING_HOLDER, tmp_path / "held", started)
    assert holder.wait(timeout=30) == 1 and (tmp_path / "held").exists()
    assert statuses(recipe) == {psutil.STATUS_STOPPED}

    assert machine_hold.continue_paused_by(holder.pid) == [recipe.pid]
    assert wait_for(lambda: psutil.STATUS_STOPPED not in statuses(recipe))
    machine_hold.pause_other_recipes().release()  # and the lock it held is free


def test_outside_a_build_a_hold_stops_nothing(monkeypatch):
    monkeypatch.delenv(machine_hold.ENV, raising=False)
    held = machine_hold.pause_other_recipes()
    assert held.stopped == [] and held.release() >= 0

"""Files one recipe writes and others of its folder read, made once per version of the recipe that writes them.

The language-model recipes export, run and measure the model that ``train_a_tiny_llama.py`` trains. A recipe
may run before that one, after it, beside it or alone, so each calls :func:`ensure` in a hidden block before its
visible code reads the files: when the folder holds files from this version of the writing recipe it returns at
once, otherwise it runs the writing recipe in a fresh interpreter in a temporary folder (the training is
deterministic: one thread, fixed seeds) and moves its files into place one atomic rename at a time. The writing
recipe calls :func:`mark` at its end. Several recipes may write into one folder (the training recipe its three
files, the export recipe its programs); each has its own key there, and a run of one starts from what the folder
already holds, so that it does not make the others' files again (a recipe that needs them calls :func:`ensure`
for them itself). The content key is a hash of the writing recipe's source and of the
installed torch and executorch versions, and of the keys of the recipes whose files it reads, so an edit to
the recipe or to one it depends on, or a new release, makes the files again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from xnnguide.core.recipes import declared_files

KEY_PREFIX = ".made_by."
# The folder of the recipes, for a recipe that :func:`ensure` runs in a temporary folder: its own calls name
# their sibling recipes relative to it.
RECIPE_DIR = "XNNGUIDE_SHARED_RECIPE_DIR"


def _recipe_path(recipe: str | os.PathLike[str]) -> Path:
    return (Path(os.environ.get(RECIPE_DIR, ".")) / recipe).resolve()


def _key_file(folder: Path, recipe: Path) -> Path:
    return folder / f"{KEY_PREFIX}{recipe.stem}"


# The recipes a recipe's own ensure() calls name: their files are its inputs, so their versions are part of its key.
_ENSURED = re.compile(r"shared_files\.ensure\(([^)]*)\)")


def content_key(recipe: str | os.PathLike[str]) -> str:
    """The hash that names one version of the files *recipe* writes: of its source, of the keys of the
    recipes whose files it reads (the ones its own :func:`ensure` calls name) and of the installed releases."""
    path = _recipe_path(recipe)
    source = path.read_text(encoding="utf-8")
    digest = hashlib.sha256(source.encode())
    for call in _ENSURED.findall(source):
        for name in re.findall(r"[\"']([\w.-]+\.py)[\"']", call):
            digest.update(content_key(path.parent / name).encode())
    for package in ("torch", "executorch", "tokenizers"):
        digest.update(f"{package}=={importlib.metadata.version(package)}".encode())
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def is_current(folder: str | os.PathLike[str], recipe: str | os.PathLike[str]) -> bool:
    """Whether *folder* holds the files of this version of *recipe*."""
    key = _key_file(Path(folder), Path(recipe))
    return key.is_file() and key.read_text(encoding="utf-8") == content_key(recipe)


def mark(folder: str | os.PathLike[str], recipe: str | os.PathLike[str]) -> None:
    """Say that *folder* now holds the files of this version of *recipe* (called at the end of *recipe*)."""
    key = _key_file(Path(folder), Path(recipe))
    tmp = key.with_name(f"{key.name}.{os.getpid()}")
    tmp.write_text(content_key(recipe), encoding="utf-8")
    os.replace(tmp, key)


def ensure(folder: str | os.PathLike[str], *recipes: str | os.PathLike[str]) -> float:
    """Make *folder* (relative to the working directory) hold what each of *recipes* (sibling recipe files, in
    the order they must run) writes there; return the seconds spent making it (0 when it was already there).
    Raises ``RuntimeError`` with a recipe's last error line when it fails."""
    return sum(_ensure_one(Path(folder).resolve(), _recipe_path(recipe)) for recipe in recipes)


def _ensure_one(folder: Path, recipe: Path) -> float:
    with _locked(folder):
        if is_current(folder, recipe):
            return 0.0
        started = os.times().elapsed
        with tempfile.TemporaryDirectory(prefix="xnnguide-shared-") as work:
            root = str(Path(__file__).resolve().parents[2])
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
                   "MPLBACKEND": "Agg", RECIPE_DIR: str(recipe.parent)}
            made = Path(work) / folder.name
            if folder.is_dir():  # what other recipes made there already, so that the run does not make it again
                shutil.copytree(folder, made)
            # What the writing recipe reads beside it (``# xnnguide_depends_on``: the C++ runner's sources, say),
            # where it finds them; its sibling recipes it reaches through RECIPE_DIR.
            for needed in declared_files(recipe):
                if needed.suffix != ".py":
                    copy = Path(work) / needed.relative_to(recipe.parent)
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(needed, copy)
            done = subprocess.run([sys.executable, str(recipe)], cwd=work, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                lines = done.stderr.strip().splitlines() or ["(no output)"]
                raise RuntimeError(f"{recipe.name} failed while making {folder.name}/: {lines[-1]}")
            folder.mkdir(exist_ok=True)
            for path in sorted(made.iterdir()):
                # The keys come too: a run that had to make another recipe's files first marked them.
                if path.is_file() and path.name != ".lock":
                    staged = folder / f".{path.name}.{os.getpid()}"
                    shutil.copyfile(path, staged)
                    os.replace(staged, folder / path.name)
        mark(folder, recipe)
        return os.times().elapsed - started

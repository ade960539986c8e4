"""The release matrix: run every recipe on a release combination and record what happened.

``python -m xnnguide.tools.matrix requirements [--check]``
    write (or check) ``releases/<name>.txt`` of each combination from requirements.txt and its pins.
``python -m xnnguide.tools.matrix venv NAME --make MAKE``
    make the combination's environment with ``make venv`` (its own requirements file and folder), and fetch
    its executorch's aarch64 wheel for the ARM recipe (``make aarch64``).
``python -m xnnguide.tools.matrix run NAME|all [--jobs N] [--offline CMD] [--all-recipes]``
    run, on each named combination in turn, every recipe that has no record of its current source there,
    through the build's own runner (:mod:`xnnguide.site.run_shards`' shard processes: each recipe a one-recipe
    build in a child the watchdog watches), in a scratch copy of the checkout under ``_build/matrix/``, with the
    combination's Python; then write ``releases/records/<name>/<recipe>.json``. Nothing is written for a
    combination whose run did not finish; the other combinations' records are never touched.
``python -m xnnguide.tools.matrix check FOLDER...``
    the merge step of CI's matrix jobs: each folder's records must have the schema, name a declared
    combination and a recipe of this checkout, and be made from its current source; then they are copied in.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from xnnguide.core import environment, machine_hold, matrix, shards
from xnnguide.core.recipes import missing_requirements, recipe_files, shown, source_digest
from xnnguide.core.results import TRACEBACK_FRAME

ROOT = Path(__file__).resolve().parents[2]
#: The build id a recipe's records name (xnnguide.site.runs.BUILD_ID): the matrix run's, not a build's.
BUILD_ID = "XNNGUIDE_BUILD_ID"
#: The last line of a traceback: ``ValueError: message`` (a dotted name, a colon) or a bare exception name.
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")
#: What a failure says when the installed release lacks a name: the name (module and member).
_MISSING = [re.compile(r"cannot import name '(?P<member>[\w.]+)' from '(?P<module>[\w.]+)'"),
            re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<member>\w+)'"),
            re.compile(r"No module named '(?P<module>[\w.]+)'")]
#: The packages whose names count as an API a release may lack; another missing module is a missing dependency.
API_PACKAGES = ("executorch", "torch", "torchao", "torchvision")


def env_key(top: Path, combo: matrix.Combination) -> str:
    """The key ``make venv`` gives an environment made from *combo*'s requirements file (its stamp's name)."""
    data = (top / combo.requirements).read_bytes() + (top / "pyproject.toml").read_bytes()
    return hashlib.sha256(data).hexdigest()[:16]


def python_of(top: Path, combo: matrix.Combination) -> Path:
    """The Python of *combo*'s environment, if ``make matrix-venv`` made it from its current requirements."""
    venv = top / combo.venv
    if not (venv / f".installed-{env_key(top, combo)}").is_file():
        raise matrix.MatrixError(f"combination {combo.name}: no environment made from {combo.requirements} in "
                                 f"{combo.venv}; run: make matrix-venv COMBO={combo.name}")
    return venv / "bin" / "python"


def aarch64_dir(top: Path, combo: matrix.Combination) -> Path:
    """Where the aarch64 build of the combination's executorch is unpacked (the ARM recipe's runtime)."""
    version = matrix.pinned_versions(top, combo).get("executorch", "")
    return (top / ".aarch64" if not combo.derived else top / ".venv-matrix" / "aarch64") / f"executorch-{version}"


def write_requirements(top: Path, check: bool) -> int:
    stale = []
    for combo in matrix.combinations(top).values():
        if not combo.derived:
            continue
        path, text = top / combo.requirements, matrix.requirements_text(top, combo)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        if check:
            stale.append(combo.requirements)
        else:
            path.write_text(text, encoding="utf-8")
            print(f">> wrote {combo.requirements}")
    for name in stale:
        print(f"error: {name} is not what releases/combinations.toml declares; run: make matrix-requirements",
              file=sys.stderr)
    return 1 if stale else 0


def make_venv(top: Path, combo: matrix.Combination, make: list[str]) -> int:
    if combo.derived and write_requirements(top, check=True):
        return 1
    args = [f"VENV={combo.venv}", f"REQUIREMENTS={combo.requirements}"]
    if not combo.local_wheels:  # uv_flags then reads no configuration of pip's: PyPI alone
        args.append("UV_FLAGS_ENV=env -u PIP_FIND_LINKS -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null")
    done = subprocess.run([*make, "--no-print-directory", "venv", *args], cwd=top, check=False)
    if done.returncode:
        print(f"error: combination {combo.name}: {combo.requirements} did not install (make venv exited with "
              f"{done.returncode}; uv's reason is above)", file=sys.stderr)
        return 1
    version = matrix.pinned_versions(top, combo)["executorch"]
    folder = aarch64_dir(top, combo).relative_to(top)
    done = subprocess.run([*make, "--no-print-directory", "aarch64", f"AARCH64_DIR={folder}",
                           f"ET_VERSION={version}"], cwd=top, check=False)
    if done.returncode:  # the ARM recipe is then recorded as failing, with the file it lacks
        print(f"warning: combination {combo.name}: the aarch64 executorch {version} is missing "
              f"(make aarch64 exited with {done.returncode})", file=sys.stderr)
    return 0


def scratch_copy(top: Path, scratch: Path) -> None:
    """A copy of the checkout's files (tracked, and new ones git does not ignore) in *scratch*."""
    shutil.rmtree(scratch, ignore_errors=True)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=top,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if name.startswith(f"{matrix.RELEASES}/{matrix.RECORDS}/") or not (top / name).is_file():
            continue
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(top / name, scratch / name)


def failure(error: str) -> tuple[str | None, str, str | None]:
    """The exception's name, its message's first line, and the last frame (``path:line in function``, below
    site-packages or the checkout) of a run record's error text."""
    lines = (error or "").rstrip().splitlines()
    frames = [index for index, line in enumerate(lines) if TRACEBACK_FRAME.search(line)]
    after = lines[frames[-1] + 1:] if frames else lines
    exception, message = None, (after[-1].strip() if after else "no error text")
    for line in after:
        match = _EXCEPTION.match(line)
        if match and not line.startswith(" "):
            exception, message = match[1], (match[2] or "").strip()
            break
    if exception and "." not in exception and not exception[0].isupper():
        exception, message = None, lines[-1].strip()  # a watchdog's "stopped after ..." line, not an exception
    last = TRACEBACK_FRAME.findall(lines[frames[-1]]) if frames else []
    frame = None
    if last:
        path, number, function = last[0]
        path = re.sub(r".*/site-packages/", "", path)
        path = re.sub(r".*/_build/matrix/[^/]+/checkout/", "", path)
        frame = f"{path}:{number}" + (f" in {function}" if function else "")
    return exception, message, frame


def missing_api(exception: str | None, message: str) -> str | None:
    """The name a failure says the installed release lacks, when it is one of :data:`API_PACKAGES`'."""
    if exception not in ("ImportError", "ModuleNotFoundError", "AttributeError"):
        return None
    for pattern in _MISSING:
        match = pattern.search(message)
        if match:
            name = match["module"] + (f".{match['member']}" if "member" in pattern.groupindex else "")
            return name if name.split(".")[0] in API_PACKAGES else None
    return None


def make_record(combo: str, source: Path, shown_source: str, run: dict[str, Any] | None,
                recorded: dict[str, Any], reason: str | None, origin: str = "make matrix") -> dict[str, Any]:
    """The matrix record of one recipe's run (*run*: its run record; *reason*: why it could not run)."""
    status = "failed" if reason else (run or {}).get("status", "failed")
    exception = message = frame = None
    if status != "passed":
        exception, message, frame = (None, reason, None) if reason else failure((run or {}).get("error") or "")
    env = (run or {}).get("environment") or {}
    return {"schema": matrix.SCHEMA, "combination": combo, "recipe": source.stem, "source": shown_source,
            "source_sha256": source_digest(source), "status": status, "exception": exception, "message": message,
            "last_frame": frame, "missing_api": missing_api(exception, message or ""), "api_in": {},
            "facts": {key: fact["display"] for key, fact in sorted(recorded.items()) if "display" in fact},
            "seconds": float((run or {}).get("seconds") or 0.0),
            "date": _dt.date.today().isoformat(),
            "machine": {key: env.get(key, default) for key, default in (
                ("cpu", environment.cpu_model()), ("cores", os.cpu_count() or 1),
                ("machine", platform.machine()), ("python", platform.python_version()))},
            "versions": env.get("versions", {}), "origin": origin}


def to_run(top: Path, combo: matrix.Combination, every: bool) -> list[Path]:
    """The recipes of the checkout without a record of their current source on *combo* (all with *every*)."""
    folder = matrix.records_folder(top, combo.name)
    found = []
    for source in recipe_files(top / "snippets"):
        path = folder / f"{source.stem}.json"
        if every or not path.is_file() or matrix.load_record(path)["source_sha256"] != source_digest(source):
            found.append(source)
    return found


def run_combination(top: Path, combo: matrix.Combination, jobs: int, offline: list[str], every: bool,
                    only: list[str] | None = None, until: float | None = None) -> int:
    python = python_of(top, combo)
    wanted = {source.stem for source in to_run(top, combo, every) if only is None or source.stem in only}
    if not wanted:
        print(f">> {combo.name}: every recipe has a record of its current source; nothing to run")
        return 0
    scratch = top / "_build" / "matrix" / combo.name
    checkout = scratch / "checkout"
    scratch_copy(top, checkout)
    snippets, docs = checkout / "snippets", checkout / "docs"
    env = dict(os.environ, PYTHONPATH=str(checkout),
               EXECUTORCH_AARCH64=str(aarch64_dir(top, combo).resolve() / "executorch"))
    env.pop("VIRTUAL_ENV", None)
    unrunnable = {}
    with _environ(env):
        for source in recipe_files(snippets):
            if source.stem in wanted and missing_requirements(source):
                unrunnable[source.stem] = missing_requirements(source)
    # Whole units: a recipe that reads another's files runs after it (xnnguide.core.shards.units).
    units = [[str(path) for path in unit] for _, unit in shards.units(recipe_files(snippets), docs / "gallery")
             if any(path.stem in wanted and path.stem not in unrunnable for path in unit)]
    # Quickest first, by what the records of any combination took: a run stopped at its time limit (--minutes)
    # then leaves the fewest recipes without a record.
    took = {name: record["seconds"] for records in matrix.records(top).values() for name, record in records.items()}
    units.sort(key=lambda unit: sum(took.get(Path(path).stem, 300.0) for path in unit))
    shared = scratch / "shards"
    shutil.rmtree(shared, ignore_errors=True)
    (shared / "claims").mkdir(parents=True)
    (shared / "plan.json").write_text(json.dumps(units), encoding="utf-8")
    count = max(1, min(jobs, len(units)))
    folders = [shared / f"shard-{number}" for number in range(1, count + 1)]
    threads = max(1, (os.cpu_count() or 1) // count)
    env.update({BUILD_ID: f"matrix-{combo.name}-{int(time.time())}",
                machine_hold.ENV: tempfile.mkdtemp(prefix="xnnguide-hold-")})
    started = time.perf_counter()
    print(f">> {combo.name}: running {sum(map(len, units))} recipe(s) in {count} shard(s) with {python}", flush=True)
    processes = [subprocess.Popen([*offline, str(python), "-m", "xnnguide.site.run_shards", "--plan",
                                   str(shared / "plan.json"), "--folder", str(folder), "--threads", str(threads),
                                   "--docs", str(docs), "--conf", str(checkout)], cwd=checkout, env=env,
                                  start_new_session=True)
                 for folder in folders] if units else []
    stopped = False
    while any(process.poll() is None for process in processes):
        if until is not None and time.time() > until:  # keep what finished; the next run takes the rest
            for process in processes:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            stopped = True
        time.sleep(2)
    statuses = [process.wait() for process in processes]
    seconds = time.perf_counter() - started
    if not stopped and any(status not in (0, 1) for status in statuses):
        print(f"error: combination {combo.name}: a shard's process ended with status {statuses}; "
              f"no record was written", file=sys.stderr)
        return 2
    made = {}
    for folder in folders:
        for path in sorted((folder / "_records" / "runs").glob("*.json")):
            run = json.loads(path.read_text(encoding="utf-8"))
            if run.get("status") not in ("passed", "failed"):
                continue  # the recipe a stopped run was in the middle of
            facts_path = folder / "_records" / "facts" / path.name
            recorded = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.is_file() else {}
            made[path.stem] = (run, recorded)
    records = {}
    for source in recipe_files(top / "snippets"):
        if source.stem in made or source.stem in unrunnable:
            run, recorded = made.get(source.stem, (None, {}))
            records[source.stem] = make_record(combo.name, source, shown(source), run, recorded,
                                               unrunnable.get(source.stem))
    missing = sorted(wanted - set(records))
    if missing and stopped:
        print(f">> {combo.name}: stopped at the time limit; not run yet: {', '.join(missing)}", flush=True)
    elif missing:
        print(f"error: combination {combo.name}: no run of {', '.join(missing)}; no record was written",
              file=sys.stderr)
        return 2
    folder = matrix.records_folder(top, combo.name)
    folder.mkdir(parents=True, exist_ok=True)
    for name, record in records.items():
        _write(folder / f"{name}.json", record)
    failed = sorted(name for name, record in records.items() if record["status"] != "passed")
    (scratch / "wall-time.txt").write_text(f"{seconds:.0f}\n", encoding="utf-8")
    print(f">> {combo.name}: {len(records)} recipe(s) in {seconds:.0f} s, {len(failed)} failed"
          + (f": {', '.join(failed)}" if failed else ""), flush=True)
    return 0


class _environ:
    """Use *env* as ``os.environ`` inside a ``with`` block (a recipe's requirements name its variables)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.saved = env, dict(os.environ)

    def __enter__(self) -> None:
        os.environ.clear()
        os.environ.update(self.env)

    def __exit__(self, *exc: object) -> None:
        os.environ.clear()
        os.environ.update(self.saved)


def _write(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


#: Run in a combination's Python: which of the dotted names (argv) its installed packages have.
_PROBE = """
import importlib, json, sys
found = {}
for name in sys.argv[1:]:
    parts, ok = name.split("."), False
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:
            continue
        try:
            for member in parts[cut:]:
                obj = getattr(obj, member)
            ok = True
        except AttributeError:
            ok = False
        break
    found[name] = ok
print(json.dumps(found))
"""


def probe_apis(top: Path) -> None:
    """Fill each failure's ``api_in``: whether each combination's installed packages have the name it lacked."""
    every = matrix.records(top)
    names = sorted({record["missing_api"] for combo in every.values() for record in combo.values()
                    if record["missing_api"]})
    if not names:
        return
    present: dict[str, dict[str, bool]] = {}
    for combo in matrix.combinations(top).values():
        try:
            python = python_of(top, combo)
        except matrix.MatrixError:
            continue  # not set up here: what it has stays unknown
        done = subprocess.run([str(python), "-c", _PROBE, *names], capture_output=True, text=True, check=False,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, cwd=tempfile.gettempdir())
        if done.returncode == 0:
            present[combo.name] = json.loads(done.stdout.strip().splitlines()[-1])
    for name, records in every.items():
        for record in records.values():
            if record["missing_api"]:
                found = {combo: flags[record["missing_api"]] for combo, flags in present.items()}
                if found != record["api_in"]:
                    _write(matrix.records_folder(top, name) / f"{record['recipe']}.json", {**record, "api_in": found})


def import_build(top: Path, combo: matrix.Combination, gallery: Path) -> int:
    """Take *combo*'s records from a finished build of the site (its gallery's run records and facts), for the
    recipes whose run there was of their current source with exactly the combination's pinned releases."""
    pins = matrix.pinned_versions(top, combo)
    taken, refused = {}, []
    for source in recipe_files(top / "snippets"):
        path = gallery / "_records" / "runs" / f"{source.stem}.json"
        if not path.is_file():
            refused.append(f"{source.stem}: no run record")
            continue
        run = json.loads(path.read_text(encoding="utf-8"))
        versions = (run.get("environment") or {}).get("versions", {})
        other = {name: versions.get(name) for name in pins if name in versions and versions[name] != pins[name]}
        if run.get("source_sha256") != source_digest(source):
            refused.append(f"{source.stem}: run of other recipe code")
        elif other or run.get("status") not in ("passed", "failed"):
            refused.append(f"{source.stem}: " + (f"ran with {other}" if other else f"status {run.get('status')}"))
        else:
            facts_path = gallery / "_records" / "facts" / f"{source.stem}.json"
            recorded = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.is_file() else {}
            record = make_record(combo.name, source, shown(source), run, recorded, None,
                                 origin=f"the site's build {run.get('build_id')}")
            taken[source.stem] = {**record, "date": str(run.get("finished", ""))[:10] or record["date"]}
    folder = matrix.records_folder(top, combo.name)
    folder.mkdir(parents=True, exist_ok=True)
    for name, record in taken.items():
        _write(folder / f"{name}.json", record)
    print(f">> {combo.name}: took {len(taken)} record(s) from {gallery}" +
          (f"; left out {len(refused)}: {'; '.join(refused)}" if refused else ""))
    return 0


def check_folders(top: Path, folders: list[Path]) -> int:
    """CI's merge step: every record in *folders* (``<folder>/<combination>/<recipe>.json``) checked against this
    checkout, then copied into ``releases/records``; nothing is copied if any is wrong."""
    problems, copies = [], []
    known = matrix.combinations(top)
    sources = {source.stem: source for source in recipe_files(top / "snippets")}
    for folder in folders:
        paths = sorted(folder.glob("*/*.json"))
        if not paths:
            problems.append(f"{folder}: no records (<combination>/<recipe>.json)")
        for path in paths:
            try:
                record = matrix.load_record(path)
            except matrix.MatrixError as error:
                problems.append(str(error))
                continue
            if record["combination"] not in known:
                problems.append(f"{path}: combination {record['combination']!r} is not declared")
            elif record["recipe"] not in sources:
                problems.append(f"{path}: this checkout has no recipe {record['recipe']!r}")
            elif record["source_sha256"] != source_digest(sources[record["recipe"]]):
                problems.append(f"{path}: made from other recipe code than this checkout's "
                                f"{shown(sources[record['recipe']])}")
            else:
                copies.append((path, matrix.records_folder(top, record["combination"]) / path.name))
    for problem in problems:
        print(f"error: {problem}; refusing to merge, nothing was copied", file=sys.stderr)
    if problems:
        return 1
    for path, target in copies:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    print(f">> merged {len(copies)} matrix record(s) from {len(folders)} folder(s) into releases/records")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.matrix", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    requirements = commands.add_parser("requirements", help="write each combination's requirements file")
    requirements.add_argument("--check", action="store_true", help="only check that they are up to date")
    venv = commands.add_parser("venv", help="make a combination's environment")
    venv.add_argument("name")
    venv.add_argument("--make", default="make")
    run = commands.add_parser("run", help="run the recipes on a combination (or all, one after another)")
    run.add_argument("name")
    run.add_argument("--jobs", type=int, default=2)
    run.add_argument("--offline", default="", help="the command that cuts the network, e.g. 'unshare -rn'")
    run.add_argument("--all-recipes", action="store_true", help="run every recipe, recorded or not")
    run.add_argument("--recipes", nargs="+", default=None, help="only these recipes (stems), of those to run")
    run.add_argument("--minutes", type=float, default=None,
                     help="stop after this long, keeping the records of the recipes that finished")
    imported = commands.add_parser("import-build", help="take a combination's records from a build of the site")
    imported.add_argument("name")
    imported.add_argument("--gallery", type=Path, required=True, help="the build's docs/gallery")
    check = commands.add_parser("check", help="check CI's matrix records and copy them in")
    check.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "requirements":
            return write_requirements(ROOT, args.check)
        if args.command == "check":
            return check_folders(ROOT, args.folders)
        names = list(matrix.combinations(ROOT)) if args.name == "all" else [args.name]
        combos = [matrix.combination(ROOT, name) for name in names]
        if args.command == "import-build":
            return import_build(ROOT, combos[0], args.gallery)
        if args.command == "venv":
            return max(make_venv(ROOT, combo, shlex.split(args.make)) for combo in combos)
        if args.jobs < 1:
            raise matrix.MatrixError(f"--jobs {args.jobs}: expected at least 1")
        for combo in combos:  # each checked before any runs: a bad one stops the run before it starts
            python_of(ROOT, combo)
            matrix.records(ROOT)
        worst, until = 0, None if args.minutes is None else time.time() + 60 * args.minutes
        for combo in combos:
            worst = max(worst, run_combination(ROOT, combo, args.jobs, shlex.split(args.offline), args.all_recipes,
                                                  args.recipes, until))
        if worst < 2:  # a combination whose run failed leaves every record as it was
            probe_apis(ROOT)
        return worst
    except matrix.MatrixError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

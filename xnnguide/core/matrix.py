"""The release matrix: which releases every recipe was run on, and what happened, readable without Sphinx.

The combinations are declared in ``releases/combinations.toml`` (:func:`combinations`); ``make matrix`` runs every
recipe on one of them and writes one record a recipe, ``releases/records/<combination>/<recipe>.json``
(:data:`RECORD_FIELDS`), keyed by the recipe's source digest. The pages read them through :func:`verdict`: a
record of another source than the recipe's current one is ``"changed"``, never a pass.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from xnnguide.core.recipes import find_recipe, recipe_files, source_digest

#: Where the combinations and their records live, below the checkout's top.
RELEASES = "releases"
COMBINATIONS = "combinations.toml"
RECORDS = "records"
#: The version of the record format; a record of another version is refused.
SCHEMA = 1
#: A record's ``origin``: made by ``make matrix``, or taken from the run records of a build of the site in the
#: combination's own environment (``matrix import-build``), which ran the recipe with the same runner.
#: Every field of a record and the types it may hold.
RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "schema": (int,), "combination": (str,), "recipe": (str,), "source": (str,), "source_sha256": (str,),
    "status": (str,), "exception": (str, type(None)), "message": (str, type(None)),
    "last_frame": (str, type(None)), "missing_api": (str, type(None)), "api_in": (dict,), "facts": (dict,),
    "seconds": (int, float), "date": (str,), "machine": (dict,), "versions": (dict,), "origin": (str,)}
STATUSES = ("passed", "failed", "not-run")
#: A failure's message on a page is cut to this many characters.
MESSAGE_CHARACTERS = 160
#: How a page names each verdict of :func:`verdict`.
VERDICTS = {"passed": "passed", "failed": "failed", "not-run": "not run", "changed": "not re-run since the recipe changed",
            "missing": "not run yet"}
#: Figures that differ between any two runs: what measures time or memory, the conditions of a timing (the hold
#: and the machine's share), ratios of two timings (``_vs_``), and text a run prints (log lines, traces, generated
#: text, the files a run left, version strings of install lines); the Releases page compares the others.
_RUN_TO_RUN = re.compile(r"(?:^|_)(ms|us|seconds?|secs?|latency|time|times|timing|speed|speedup|throughput|tokens_per"
                         r"|per_second|elapsed|rss|memory|peak|mb_s|mib|load|median|mean|p\d+|hold|held|stopped|share"
                         r"|vs|log|line|trace|text|behind|constraints|dependency|package)(?:_|$)")
#: The lock lines of torch's CUDA libraries, which a combination with ``cuda_lock = false`` leaves out.
CUDA_LOCK = re.compile(r"^(nvidia-[\w-]+|cuda-[\w-]+|triton)==.*\n", re.MULTILINE)
#: The packages a combination may pin differently from requirements.txt.
PINNABLE = ("executorch", "torch", "torchvision", "torchao", "torchaudio")


class MatrixError(ValueError):
    """Bad input: an unknown combination, a malformed declaration or record. Its text is one line."""


@dataclasses.dataclass(frozen=True)
class Combination:
    name: str
    about: str
    requirements: str  # relative to the checkout's top
    venv: str
    pins: dict[str, str]
    local_wheels: bool
    cuda_lock: bool

    @property
    def derived(self) -> bool:
        """Whether its requirements file is written from requirements.txt (every combination but the pin)."""
        return self.requirements != "requirements.txt"


def combinations_file(top: Path) -> Path:
    return top / RELEASES / COMBINATIONS


def combinations(top: Path) -> dict[str, Combination]:
    """The combinations declared in ``releases/combinations.toml`` of the checkout *top*, in their order."""
    path = combinations_file(top)
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise MatrixError(f"{path}: {error}") from None
    found = {}
    for name, entry in table.items():
        unknown = set(entry) - {"about", "requirements", "venv", "pins", "local_wheels", "cuda_lock"}
        if unknown or not re.fullmatch(r"[a-z][\w.-]*", name):
            raise MatrixError(f"{path}: [{name}]: unknown key {sorted(unknown)[0]!r}" if unknown
                              else f"{path}: [{name}]: a name is lower-case letters, digits, '.', '-' and '_'")
        pins = dict(entry.get("pins", {}))
        if set(pins) - set(PINNABLE):
            raise MatrixError(f"{path}: [{name}]: pins {sorted(set(pins) - set(PINNABLE))[0]!r}; "
                              f"a combination pins only {', '.join(PINNABLE)}")
        found[name] = Combination(name, str(entry.get("about", "")),
                                  entry.get("requirements", f"{RELEASES}/{name}.txt"),
                                  entry.get("venv", f".venv-matrix/{name}"), pins,
                                  bool(entry.get("local_wheels", True)), bool(entry.get("cuda_lock", True)))
    if not found:
        raise MatrixError(f"{path}: declares no combination")
    return found


def combination(top: Path, name: str) -> Combination:
    known = combinations(top)
    if name not in known:
        raise MatrixError(f"unknown combination {name!r}; {RELEASES}/{COMBINATIONS} declares: {', '.join(known)}")
    return known[name]


def requirements_text(top: Path, combo: Combination) -> str:
    """The requirements file *combo* is made from: requirements.txt with its pins changed."""
    text = (top / "requirements.txt").read_text(encoding="utf-8")
    for package, version in combo.pins.items():
        text, count = re.subn(rf"^{re.escape(package)}==\S+$", f"{package}=={version}", text, flags=re.MULTILINE)
        if count != 1:
            raise MatrixError(f"[{combo.name}]: requirements.txt pins {package} {count} times; expected once")
    if not combo.cuda_lock:
        text = CUDA_LOCK.sub("", text)
    header = (f"# The release combination {combo.name} ({RELEASES}/{COMBINATIONS}): {combo.about}.\n"
              f"# Written from requirements.txt by `make matrix-requirements`; change {COMBINATIONS}, not this.\n")
    return header + text


def pinned_versions(top: Path, combo: Combination) -> dict[str, str]:
    """The versions of :data:`PINNABLE` that *combo*'s requirements file pins."""
    text = (top / combo.requirements).read_text(encoding="utf-8")
    return {name: match[1] for name in PINNABLE
            for match in [re.search(rf"^{re.escape(name)}==(\S+)$", text, re.MULTILINE)] if match}


def records_folder(top: Path, name: str) -> Path:
    return top / RELEASES / RECORDS / name


def load_record(path: Path) -> dict[str, Any]:
    """The record at *path* if it has the schema of :data:`RECORD_FIELDS`; else a :class:`MatrixError` naming it."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise MatrixError(f"{path}: {error}") from None
    if not isinstance(record, dict):
        raise MatrixError(f"{path}: not a matrix record (a JSON object)")
    if record.get("schema") != SCHEMA:
        raise MatrixError(f"{path}: schema {record.get('schema')!r}; this checkout reads schema {SCHEMA}")
    for field, types in RECORD_FIELDS.items():
        if field not in record:
            raise MatrixError(f"{path}: no field {field!r}")
        if not isinstance(record[field], types) or isinstance(record[field], bool):
            raise MatrixError(f"{path}: field {field!r} is {type(record[field]).__name__}")
    extra = sorted(set(record) - set(RECORD_FIELDS))
    if extra:
        raise MatrixError(f"{path}: unknown field {extra[0]!r}")
    if record["status"] not in STATUSES:
        raise MatrixError(f"{path}: status {record['status']!r}; expected one of {', '.join(STATUSES)}")
    if record["combination"] != path.parent.name or record["recipe"] != path.stem:
        raise MatrixError(f"{path}: holds {record['combination']}/{record['recipe']}, not the file's own name")
    return record


def records(top: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Every record, ``{combination: {recipe: record}}``, for the declared combinations (in their order)."""
    return {name: {path.stem: load_record(path) for path in sorted(records_folder(top, name).glob("*.json"))}
            for name in combinations(top)}


def verdict(record: dict[str, Any] | None, source: Path) -> str:
    """What a record says of the recipe at *source* now: its status, ``"changed"`` when it was made from other
    source than the recipe's current one, ``"missing"`` without a record."""
    if record is None:
        return "missing"
    if record["source_sha256"] != source_digest(source):
        return "changed"
    return record["status"]


def combination_releases(top: Path, name: str) -> str:
    """How a page names a combination: the executorch and torch its requirements file pins."""
    pins = pinned_versions(top, combinations(top)[name])
    return ", ".join(f"{package} {pins[package]}" for package in ("executorch", "torch") if package in pins)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def added_in(record: dict[str, Any], all_records: dict[str, dict[str, dict[str, Any]]]) -> str | None:
    """The release that added the API a failure lacked (``executorch 1.5.0``): of the releases whose installed
    packages were probed (each record's ``api_in``), the oldest that has it, when every older one lacks it."""
    name = record.get("missing_api")
    if not name:
        return None
    package = name.split(".")[0]
    seen: dict[str, bool] = {}
    for combo_records in all_records.values():
        for other in combo_records.values():
            if other.get("missing_api") == name:
                for combo, present in other["api_in"].items():
                    version = next((each.get("versions", {}).get(package) for each in all_records.get(combo, {})
                                    .values() if each.get("versions", {}).get(package)), None)
                    if version:
                        seen[version] = bool(present)
    ordered = sorted(seen, key=version_key)
    first = next((index for index, version in enumerate(ordered) if seen[version]), None)
    if not first:  # no release has it, or the oldest one probed already has it
        return None
    return f"{package} {ordered[first].split('+')[0]}"


def cause(record: dict[str, Any], every: dict[str, dict[str, dict[str, Any]]]) -> str:
    """A failure's cause in one line: the API the release lacks and the release that added it, else the
    recorded exception and the traceback's last frame."""
    added = added_in(record, every)
    if record["missing_api"] and added:
        return f"this release lacks {record['missing_api']}, added in {added}"
    message = record["message"] or ""
    command = _FAILED_COMMAND.search(message)
    if command:  # the whole command line says less than which program failed, and how
        message = f"{Path(command[1]).name} exited with status {command[2]}"
    message = _MACHINE_PATH.sub("", message)
    what = ": ".join(part for part in (record["exception"], message) if part) or "no message recorded"
    if len(what) > MESSAGE_CHARACTERS:
        what = what[:MESSAGE_CHARACTERS].rstrip() + "…"
    frame = _MACHINE_PATH.sub("", record["last_frame"] or "")
    if frame.startswith(_SITE_PACKAGE):  # the site's own checking code is not where a reader's run fails
        frame = ""
    in_recipe = re.match(r"snippets/\S+\.py:(\d+)", frame)
    if in_recipe:  # the page is the recipe's: its line, not the site's source path
        frame = f"the recipe's line {in_recipe[1]}"
    return what + (f" (at {frame})" if frame else "")


#: A failed command's message (``subprocess.CalledProcessError``): its program and exit status.
_FAILED_COMMAND = re.compile(r"Command '\[?'([^']+)'.*?returned non-zero exit status (\d+)")
#: Where an installed package, the standard library or a checkout lies on the machine that ran the matrix: a
#: reader's paths differ, so a page shows a path from the package or the checkout's top on.
_MACHINE_PATH = re.compile(r"/\S*?/(?:lib/python3\.\d+/(?:site-packages/|dist-packages/)?|site-packages/|dist-packages/)"
                           r"|/\S*?/(?=snippets/)")
_SITE_PACKAGE = __name__.split(".")[0] + "/"


def needs(recipe: str, every: dict[str, dict[str, dict[str, Any]]]) -> str | None:
    """``executorch 1.5.0`` when the recipe failed somewhere for want of an API that release added."""
    found = [added_in(records[recipe], every) for records in every.values()
             if recipe in records and records[recipe]["status"] == "failed"]
    found = [each for each in found if each]
    return max(found, key=lambda each: version_key(each.split()[-1])) if found else None


def works_on(top: Path, recipe: str, every: dict[str, dict[str, dict[str, Any]]], brief: bool = False
             ) -> str | None:
    """The "works on" sentence of *recipe*, from the records *every* (:func:`records`); ``None`` for a build step,
    which the matrix does not run. The *brief* form, for a page's later stamps, says how many releases passed and
    which failed or were not re-run, without the causes (the recipe's own page, and a page's first stamp, give them)."""
    source = find_recipe(top / "snippets", recipe)
    if not source.is_file():
        return None
    groups: dict[str, list[str]] = {}
    failures = []
    for name, records in every.items():
        found, label = verdict(records.get(recipe), source), combination_releases(top, name)
        if found == "failed":
            failures.append(label if brief else f"{label} ({cause(records[recipe], every)})")
        else:
            groups.setdefault(found, []).append(label)
    passed = groups.pop("passed", [])
    total = len(passed) + sum(map(len, groups.values())) + len(failures)
    counted = f"all {total}" if len(passed) == total else f"{len(passed)} of {total}"
    parts = [f"passed on {counted} releases" if brief else "passed on " + "; ".join(passed)] if passed else []
    if failures:
        parts.append("failed on " + "; ".join(failures))
    parts += [f"{VERDICTS[outcome]}: {'; '.join(labels)}" for outcome, labels in groups.items()]
    need = needs(recipe, every)
    sentence = ". ".join(part[0].upper() + part[1:] for part in parts) + "."
    return sentence + (f" Needs {need.replace(' ', ' ≥ ', 1)}." if need else "")


def matrix_tables(top: Path, every: dict[str, dict[str, dict[str, Any]]]
                  ) -> list[tuple[list[str], list[list[str]], str, str]]:
    """The Releases page's tables (header, rows, caption, class): every recipe on every combination, why each
    failure failed, and the recorded figures that differ between releases."""
    combos = list(every)
    heads = [combination_releases(top, name) for name in combos]
    rows, failures, differing = [], [], []
    for source in recipe_files(top / "snippets"):
        verdicts = [verdict(every[name].get(source.stem), source) for name in combos]
        rows.append([source.stem, *(VERDICTS[verdict] for verdict in verdicts)])
        for name, head, outcome in zip(combos, heads, verdicts):
            if outcome == "failed":
                failures.append([source.stem, head, cause(every[name][source.stem], every)])
        passed = {head: every[name][source.stem]["facts"] for name, head, outcome in zip(combos, heads, verdicts)
                  if outcome == "passed"}
        keys = sorted({key for figures in passed.values() for key in figures if not _RUN_TO_RUN.search(key)})
        for key in keys:
            values = [figures.get(key, "—") for figures in passed.values()]
            if len(set(values)) > 1 and len(passed) > 1:
                differing.append([f"{source.stem}: {key}",
                                  "; ".join(f"{head}: {value}" for head, value in zip(passed, values))])
    runs = []
    for name, head in zip(combos, heads):
        got = list(every[name].values())
        dates = sorted({record["date"] for record in got})
        machines = sorted({f"{record['machine'].get('cpu')}, {record['machine'].get('cores')} logical cores"
                           for record in got})
        how = sorted({"the site's own build" if record["origin"].startswith("the site's build")
                      else "a run of every recipe in an environment of its own" for record in got})
        runs.append([head, " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "—",
                     "; ".join(machines) or "—", "; ".join(how) or "not run yet"])
    return [(["Releases", "Run on", "Machine", "Run by"], runs, "Where and when each column ran",
             "xnnguide-release-runs"),
            (["Recipe", *heads], rows, "Every recipe on every release combination", "xnnguide-release-matrix"),
            (["Recipe", "Releases", "Cause"], failures or [["—", "—", "no failure recorded"]],
             "Why each failure failed", "xnnguide-release-failures"),
            (["Recipe: figure", "Value on each release it passed on"],
             differing or [["—", "no recorded figure differs"]],
             "Recorded figures that differ between releases", "xnnguide-release-figures")]


#: What a page may say of a release by hand: "works on executorch 1.5.0", "needs executorch ≥ 1.5.0".
_WORKS_CLAIM = re.compile(r"\b(?:works|runs|ran|passes|passed|tested|verified) (?:on|with) (executorch|torch) "
                          r"(\d+\.\d+\.\d+)", re.IGNORECASE)
_NEEDS_CLAIM = re.compile(r"\bneeds (executorch|torch) (?:≥|>=) ?(\d+\.\d+\.\d+)", re.IGNORECASE)
_STAMPED = re.compile(r"^[`:]{3,}\{verified-stamp\}\s+(\w+)", re.MULTILINE)


def unsupported_claims(top: Path, page: Path, every: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """What the page *page* says of a release that the records do not back, one line each (``path:line: ...``).

    "works on <package> <version>" (runs, passed, tested...) needs every recipe the page stamps to have passed,
    in its current source, on a combination that pins that version; "needs <package> ≥ <version>" needs a
    recipe it stamps to have failed for want of an API that release added (:func:`needs`)."""
    text = page.read_text(encoding="utf-8")
    recipes = [name for name in _STAMPED.findall(text) if find_recipe(top / "snippets", name).is_file()]
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in _WORKS_CLAIM.finditer(line):
            package, version = match[1].lower(), match[2]
            combos = [name for name in every
                      if pinned_versions(top, combinations(top)[name]).get(package) == version]
            failing = [recipe for recipe in recipes if not any(
                verdict(every[name].get(recipe), find_recipe(top / "snippets", recipe)) == "passed"
                for name in combos)]
            if not recipes or not combos or failing:
                why = ("no combination pins it" if not combos else "the page stamps no recipe" if not recipes
                       else f"{', '.join(failing)} has no current pass there")
                problems.append(f"{page}:{number}: claims {match[0]!r}, which the release records do not back: {why}")
        for match in _NEEDS_CLAIM.finditer(line):
            claimed = f"{match[1].lower()} {match[2]}"
            found = {needs(recipe, every) for recipe in recipes} - {None}
            if claimed not in found:
                problems.append(f"{page}:{number}: claims {match[0]!r}, which the release records do not back: "
                                f"they show {', '.join(sorted(found)) or 'no API its recipes lack on older releases'}")
    return problems

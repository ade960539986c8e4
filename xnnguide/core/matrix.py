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

from xnnguide.core.recipes import source_digest

#: Where the combinations and their records live, below the checkout's top.
RELEASES = "releases"
COMBINATIONS = "combinations.toml"
RECORDS = "records"
#: The version of the record format; a record of another version is refused.
SCHEMA = 1
#: Every field of a record and the types it may hold.
RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "schema": (int,), "combination": (str,), "recipe": (str,), "source": (str,), "source_sha256": (str,),
    "status": (str,), "exception": (str, type(None)), "message": (str, type(None)),
    "last_frame": (str, type(None)), "missing_api": (str, type(None)), "api_in": (dict,), "facts": (dict,),
    "seconds": (int, float), "date": (str,), "machine": (dict,), "versions": (dict,)}
STATUSES = ("passed", "failed", "not-run")
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


def combinations(top: Path) -> dict[str, Combination]:
    """The combinations declared in ``releases/combinations.toml`` of the checkout *top*, in their order."""
    path = top / RELEASES / COMBINATIONS
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
    """The combination called *name*; an unknown name is a :class:`MatrixError` listing the known ones."""
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


def check_record(record: Any, where: str) -> dict[str, Any]:
    """*record* if it has the schema of :data:`RECORD_FIELDS`; else a :class:`MatrixError` naming *where*."""
    if not isinstance(record, dict):
        raise MatrixError(f"{where}: not a matrix record (a JSON object)")
    if record.get("schema") != SCHEMA:
        raise MatrixError(f"{where}: schema {record.get('schema')!r}; this checkout reads schema {SCHEMA}")
    for field, types in RECORD_FIELDS.items():
        if field not in record:
            raise MatrixError(f"{where}: no field {field!r}")
        if not isinstance(record[field], types) or isinstance(record[field], bool):
            raise MatrixError(f"{where}: field {field!r} is {type(record[field]).__name__}")
    extra = sorted(set(record) - set(RECORD_FIELDS))
    if extra:
        raise MatrixError(f"{where}: unknown field {extra[0]!r}")
    if record["status"] not in STATUSES:
        raise MatrixError(f"{where}: status {record['status']!r}; expected one of {', '.join(STATUSES)}")
    return record


def load_record(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise MatrixError(f"{path}: {error}") from None
    record = check_record(record, str(path))
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


def releases_of(record: dict[str, Any]) -> str:
    """How a page names the releases a record ran with: ``executorch 1.5.0, torch 2.14.1``."""
    versions = record["versions"]
    return ", ".join(f"{name} {versions[name]}" for name in ("executorch", "torch") if name in versions)


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
    if first is None or first == 0 or any(seen[version] for version in ordered[:first]):
        return None
    return f"{package} {ordered[first].split('+')[0]}"

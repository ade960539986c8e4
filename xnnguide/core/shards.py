"""Shards: the recipes that must run, split by their past run times, and the shards' results merged.

Builds run recipes in shards side by side (``make html``) or one per machine in CI (``make html SHARD=k/N``).
Both end in :func:`merge` (``make merge-shards`` in CI), which checks each shard's run records against this
checkout and copies them into the gallery, so that the next build finds every recipe current.
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import re
import shutil
import sys
from pathlib import Path

from xnnguide.core import environment, matrix
from xnnguide.core.records import load_run_record, records_dir
from xnnguide.core.recipes import (budget_seconds, declared_files, dependency_key, find_source, is_build_step, shown,
                                   source_digest)

MANIFEST = "shard.json"


def parse(shard: str) -> tuple[int, int]:
    """``"k/N"`` as ``(k, N)``, with 1 <= k <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", shard)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"SHARD={shard!r}: expected k/N with 1 <= k <= N, e.g. SHARD=1/2")
    return int(match[1]), int(match[2])


def units(sources: list[Path], gallery: Path) -> list[tuple[float, list[Path]]]:
    """The units of work in *sources*, each with the seconds its last runs took (0: never timed,
    :func:`past_seconds`), in the order the shards take them.

    A recipe that declares another recipe with ``# xnnguide_depends_on`` (it reads that recipe's files) is one
    unit with that recipe, after it (:func:`in_order`). The never-timed units go first, the largest time budget
    in the budget table first (a recipe given more than the default runs long), then by name: how long they take
    is not known, so they must not be what the shards end on. The timed ones follow, longest first, so that the
    shards, each taking the next unit, end within about the shortest ones' time.
    """
    group = {source.resolve(): [source] for source in sources}
    for source in sorted((source for source in sources if source.is_file()), key=lambda path: path.stem):
        for needed in (path.resolve() for path in declared_files(source) if path.suffix == ".py"):
            if needed in group and group[needed] is not group[source.resolve()]:
                merged = group[needed] + group[source.resolve()]
                for member in merged:
                    group[member.resolve()] = merged
    found = {id(members): in_order(sorted(members, key=lambda path: path.stem)) for members in group.values()}
    timed, untimed = [], []
    for members in sorted(found.values(), key=lambda members: members[0].stem):
        seconds = sum(past_seconds(gallery, path) for path in members)
        (timed if seconds > 0 else untimed).append((seconds, members))
    budget = {id(members): max(budget_seconds(path) if path.is_file() else 0.0 for path in members)
              for _, members in untimed}
    return (sorted(untimed, key=lambda item: (-budget[id(item[1])], item[1][0].stem))
            + sorted(timed, key=lambda item: (-item[0], item[1][0].stem)))


def past_seconds(gallery: Path, source: Path) -> float:
    """How long *source* ran last (0: never timed): its run record in *gallery*; else, in a checkout that has
    none (a fresh clone), the record a build of the site's own release left in the release matrix
    (:func:`own_release_records`)."""
    record = load_run_record(gallery, source.stem)
    if record is None:
        top = next((parent for parent in source.parents if matrix.combinations_file(parent).is_file()), None)
        path = None if top is None else own_release_records(top) / f"{source.stem}.json"
        record = matrix.load_record(path) if path is not None and path.is_file() else {}
    return float(record.get("seconds") or 0.0)


@functools.cache
def own_release_records(top: Path) -> Path:
    """The release-matrix records of the combination the site itself is built with (read once per checkout)."""
    return matrix.records_folder(top, next(name for name, combo in matrix.combinations(top).items()
                                           if not combo.derived))


def in_order(sources: list[Path]) -> list[Path]:
    """*sources* with each after the ones whose files it reads (``# xnnguide_depends_on``), else as given."""
    ordered: list[Path] = []
    waiting = list(sources)
    while waiting:
        done = {path.resolve() for path in ordered}
        ready = next((source for source in waiting if all(
            path.resolve() in done for path in (declared_files(source) if source.is_file() else [])
            if path.resolve() in {other.resolve() for other in waiting} and path.resolve() != source.resolve())),
            waiting[0])
        waiting.remove(ready)
        ordered.append(ready)
    return ordered


def assign(sources: list[Path], gallery: Path, count: int) -> list[list[Path]]:
    """The recipes of each of *count* shards, the same on every machine with the same records (CI's matrix).

    The :func:`units` go in their order: a timed one onto the shard with the least recorded time so far (the
    lowest-numbered on a tie), the never-timed ones round-robin.
    """
    shards: list[list[Path]] = [[] for _ in range(count)]
    loads, untimed = [0.0] * count, 0
    for seconds, members in units(sources, gallery):
        if seconds > 0:
            index = min(range(count), key=lambda shard: (loads[shard], shard))
            loads[index] += seconds
        else:
            index, untimed = untimed % count, untimed + 1
        shards[index].extend(members)
    return shards


def outputs(gallery: Path, snippets: Path, source: Path) -> list[Path]:
    """What a build keeps of one recipe or build step below *gallery*, relative to it.

    Its run record and its facts; for a recipe, sphinx-gallery's files of it too (``<name>.*``: the copy, its
    checksum, the page, notebook, archive, cost), its figures and thumbnail (``images/sphx_glr_<name>_NNN.png``).
    """
    found = [records_dir(gallery) / kind / f"{source.stem}.json" for kind in ("runs", "facts")]
    if not is_build_step(source):
        folder = gallery / source.parent.relative_to(snippets)
        figure = re.compile(rf"sphx_glr_{re.escape(source.stem)}_(?:\d+|thumb)\.\w+")
        found += [path for path in folder.glob(f"{glob.escape(source.stem)}.*") if path.is_file()]
        found += [path for path in (folder / "images").rglob("sphx_glr_*") if figure.fullmatch(path.name)]
    return sorted(path.relative_to(gallery) for path in found if path.is_file())


def _disagreement(record: dict, source: Path) -> str | None:
    """How a shard's run of *source* differs from what this checkout would run, if it does."""
    if record.get("dependency_key") == dependency_key(source):
        return None
    theirs = record.get("environment", {}).get("versions", {})
    ours = environment.package_versions()
    changed = [f"{name} {theirs.get(name)} (here {version})" for name, version in ours.items()
               if theirs.get(name) != version]
    if changed:
        return f"it was built against other package versions: {', '.join(changed)}"
    if record.get("source_sha256") != source_digest(source):
        return f"it was built from other recipe code than this checkout's {shown(source)}"
    return "it was built with other helper modules or files it depends on than this checkout's"


def merge(folders: list[Path], gallery: Path, snippets: Path, docs: Path) -> list[str]:
    """Copy the shard *folders* into *gallery*; nothing is copied if any problem is found.

    A failed run is merged like a passed one: the build that renders the pages fails naming it, and the next
    build runs it again. Returns the problems, one line each, naming the shard and the recipe.
    """
    problems, taken, copies = [], {}, []  # taken: recipe -> the shard that has it
    for folder in folders:
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            problems.append(f"{folder}: not a shard folder ({MANIFEST}: {error})")
            continue
        for name in manifest["recipes"]:
            source, record = find_source(snippets, docs, name), load_run_record(folder, name)
            if not source.is_file():
                why = "this checkout has no such recipe"
            elif name in taken:
                why = f"it is also in {taken[name]}"
            elif record is None:
                why = "it has no run record"
            else:
                why = _disagreement(dict(record), source)
            taken.setdefault(name, folder)
            copies.append((folder, source))
            if why:
                problems.append(f"{folder}: recipe {name}: {why}")
    if problems:
        return problems
    for folder, source in copies:
        for path in outputs(gallery, snippets, source):
            (gallery / path).unlink()
        for path in outputs(folder, snippets, source):
            (gallery / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(folder / path, gallery / path)
    records_dir(gallery).mkdir(parents=True, exist_ok=True)
    with open(records_dir(gallery) / "executions.log", "a", encoding="utf-8") as log:  # what this build ran
        for folder in folders:
            if (records_dir(folder) / "executions.log").is_file():
                log.write((records_dir(folder) / "executions.log").read_text(encoding="utf-8"))
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.core.shards", description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="the shard folders that `make html SHARD=k/N` wrote")
    parser.add_argument("--gallery", type=Path, default=Path("docs/gallery"))
    parser.add_argument("--snippets", type=Path, default=Path("snippets"))
    parser.add_argument("--docs", type=Path, default=Path("docs"))
    args = parser.parse_args(argv)
    problems = merge(args.folders, args.gallery, args.snippets.resolve(), args.docs.resolve())
    for problem in problems:
        print(f"error: {problem}; refusing to merge, nothing was copied", file=sys.stderr)
    if not problems:
        print(f">> merged {len(args.folders)} shard folder(s) into {args.gallery}; `make html` runs what they lack")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

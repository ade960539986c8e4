"""Answer API questions by importing the packages: the fallback of rule 3.

Run as ``python -m xnnguide.doccheck.apiprobe`` with a JSON list of queries on
standard input (``{"path": "torch:randn", "module": false, "params": true}``: a
module to import, a colon, then attributes to follow); prints one JSON
answer per query. It runs in its own process so that importing torch and
friends (their log lines, their import time, any crash) stays out of the
checker; :mod:`.api` caches the answers per installed package versions.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from types import ModuleType


def _names(obj) -> list[str]:
    try:
        return sorted(n for n in dir(obj) if not n.startswith("_"))[:400]
    except Exception:
        return []


def _parameters(obj) -> list[list[str]] | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    kinds = {inspect.Parameter.POSITIONAL_ONLY: "po", inspect.Parameter.POSITIONAL_OR_KEYWORD: "pk",
             inspect.Parameter.VAR_POSITIONAL: "vp", inspect.Parameter.KEYWORD_ONLY: "ko",
             inspect.Parameter.VAR_KEYWORD: "vk"}
    return [[p.name, kinds[p.kind]] for p in signature.parameters.values()]


def _kind(obj) -> str:
    if isinstance(obj, ModuleType):
        return "module"
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        return "function"
    return "value"


def _import(name: str) -> tuple[ModuleType | None, dict | None]:
    try:
        return importlib.import_module(name), None
    except ModuleNotFoundError as error:
        if error.name and (name == error.name or name.startswith(error.name + ".")):
            return None, {"status": "missing", "missing_at": name.rpartition(".")[0], "missing_name": name}
        return None, {"status": "unknown", "error": f"{type(error).__name__}: {error}"}
    except BaseException as error:  # importing ran code that failed: cannot tell
        return None, {"status": "unknown", "error": f"{type(error).__name__}: {error}"}


def answer(query: dict) -> dict:
    path = query["path"]
    if query.get("module"):
        module, problem = _import(path)
        return problem or {"status": "found", "kind": "module"}
    module, _, attributes = path.partition(":")
    obj, problem = _import(module)
    if problem:
        return problem
    current = module
    for part in attributes.split(".") if attributes else []:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            if isinstance(obj, ModuleType):
                sub, problem = _import(f"{obj.__name__}.{part}")
                if problem and problem["status"] == "missing":
                    return {"status": "missing", "missing_at": current, "missing_name": part, "names": _names(obj)}
                if problem:
                    return problem
                obj = sub
            else:
                return {"status": "missing", "missing_at": current, "missing_name": part, "names": _names(obj)}
        except BaseException as error:
            return {"status": "unknown", "error": f"{type(error).__name__}: {error}"}
        current = f"{current}.{part}"
    result = {"status": "found", "kind": _kind(obj)}
    if query.get("params"):
        result["params"] = _parameters(obj)
    return result


def main() -> int:
    queries = json.loads(sys.stdin.read() or "[]")
    answers = [answer(query) for query in queries]
    sys.stdout.write(json.dumps(answers))
    return 0


if __name__ == "__main__":
    # Keep the JSON on stdout clean: libraries may print while importing.
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        queries = json.loads(sys.stdin.read() or "[]")
        answers = [answer(query) for query in queries]
    finally:
        sys.stdout = real_stdout
    real_stdout.write(json.dumps(answers))
    real_stdout.flush()

"""Recipes that time things run alone, or stop the recipes beside them while they time (xnnguide.core.quiet);
the build's pool starts them in its order (xnnguide.site.pool)."""

from __future__ import annotations

import ast
import datetime as dt
import json
from pathlib import Path

import pytest

from conftest import DOCS, GALLERY, SNIPPETS, runs_alone
from xnnguide.core import facts
from xnnguide.core.records import build_step_files, load_run_record, recipe_files, records_dir
from xnnguide.site import pool
from xnnguide.site.pool import Job, next_job, starts_early

pytestmark = pytest.mark.static


def _times_something(source) -> bool:
    # A recipe measures latency if it uses torch.utils.benchmark or reads time.perf_counter inside a loop, i.e.
    # times repeated calls; one perf_counter pair around a whole step is not
    # a latency measurement.
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "torch.utils.benchmark":
            return True
        if isinstance(node, ast.Attribute) and ast.unparse(node) == "torch.utils.benchmark":
            return True
        if isinstance(node, (ast.For, ast.While)) and any(
            isinstance(inner, ast.Attribute) and (inner.attr == "perf_counter" or _runner_timestamp(inner))
            for inner in ast.walk(node)
        ):
            return True
    return False


def _runner_timestamp(node: ast.Attribute) -> bool:
    # The timestamps of ExecuTorch's runner Stats: first_token_ms, inference_end_ms, ...
    return node.attr.endswith("_ms")


def _holds_the_machine(source) -> bool:
    """Whether the recipe calls ``quiet.hold()`` (in a hidden block, around its timing code)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Call) and ast.unparse(node.func) == "quiet.hold" for node in ast.walk(tree))


TIMING_RECIPES = sorted(source for source in recipe_files(SNIPPETS) if _times_something(source))


def test_the_benchmark_is_among_the_timing_recipes():
    timing = [source.stem for source in TIMING_RECIPES]
    assert "benchmark_xnnpack_speedup" in timing and "time_pte_from_cpp" in timing, timing


def test_the_recipes_that_time_a_few_seconds_of_a_longer_run_hold_the_machine():
    holding = [source.stem for source in TIMING_RECIPES if _holds_the_machine(source)]
    assert holding == ["export_a_llama_with_export_llm", "export_char_llm_with_kv_cache", "benchmark_xnnpack_speedup",
                       "run_pte_on_arm_under_qemu", "time_pte_from_cpp", "quantize_crepe_pitch_tracker",
                       "remove_int8_conversions_from_crepe_tiny", "troubleshoot_weight_only_linear_layers"], holding


@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_a_recipe_that_measures_speed_runs_alone_or_holds_the_machine(source):
    assert runs_alone(source) != _holds_the_machine(source), (
        f"{source.name} times repeated calls: add `# sphinx_gallery_parallel = False`, or hold the machine "
        "around the timing code with xnnguide.core.quiet.hold() (not both)")


def _recipe_intervals() -> dict[str, tuple[float, float]]:
    """When each recipe and build step of the last build ran: from the recipe hook's start line, or the step's
    run record, and the run record's seconds."""
    started = {}
    for line in (records_dir(GALLERY) / "executions.log").read_text().splitlines():
        name, _, start, _ = line.split("\t")
        started[name] = start
    build_id = json.loads((records_dir(GALLERY) / "build.json").read_text())["build_id"]
    for source in build_step_files(DOCS):
        record = load_run_record(GALLERY, source.stem)
        if record and record.get("build_id") == build_id:
            started[source.stem] = record["started"]
    return {name: (dt.datetime.fromisoformat(start).timestamp(),
                   dt.datetime.fromisoformat(start).timestamp() + load_run_record(GALLERY, name)["seconds"])
            for name, start in started.items()}


@pytest.mark.build
@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_timing_recipes_ran_alone_or_timed_with_the_machine_held(built_site, source):
    # A serial recipe ran with no other recipe running; the others record their hold.
    record = load_run_record(GALLERY, source.stem)
    assert record is not None, f"{source.name} never ran"
    if runs_alone(source):
        assert record.get("worker") is False, f"{source.name} ran with a share of the threads, beside other recipes"
        intervals = _recipe_intervals()
        start, end = intervals[source.stem]
        beside = [name for name, (other_start, other_end) in intervals.items()
                  if name != source.stem and other_start < end - 0.01 and other_end > start + 0.01]
        assert not beside, f"{source.name} ran while {beside} ran"
    else:
        hold = facts.load(GALLERY / "_records" / "facts" / f"{source.stem}.json").get("timing_hold")
        assert hold and hold["value"]["in_build"] and hold["value"]["seconds"] > 0, (source.name, hold)
        # What other work took of the machine while it was held: the pages flag a busy window's timings.
        assert set(hold["value"]["load"]) >= {"other_share", "steal_share", "busy"}, (source.name, hold)


# -- the order in which the build's pool starts the recipes ----------------------------

EARLY_RECIPES = sorted(source.stem for source in recipe_files(SNIPPETS) if starts_early(source))


def test_the_long_parallel_recipes_declare_that_they_start_early():
    assert EARLY_RECIPES == ["benchmark_xnnpack_speedup", "export_a_llama_with_export_llm",
                             "export_char_llm_with_kv_cache", "export_with_xnnpack_recipe_types",
                             "quantize_crepe_pitch_tracker", "quantize_mobilenet_v2_int8_static"]


def test_starts_early_reads_only_the_exact_declaration(tmp_path):
    cases = {
        "# xnnguide_start_early = True\n": True,
        "x = 1\n    #   xnnguide_start_early=True  \n": True,
        "# xnnguide_start_early = False\n": False,
        "# xnnguide_start_early = True later\n": False,
        "print('xnnguide_start_early = True')\n": False,
    }
    for number, (text, expected) in enumerate(cases.items()):
        recipe = tmp_path / f"recipe_{number}.py"
        recipe.write_text(text)
        assert starts_early(recipe) is expected, text


def _jobs(*specs: str) -> list[Job]:
    """Jobs from specs such as ``"b alone"``, ``"c early"``, ``"d after=b"``, in gallery order."""
    jobs: dict[str, Job] = {}
    for position, spec in enumerate(specs):
        name, *flags = spec.split()
        after = frozenset(jobs[other].source for flag in flags if flag.startswith("after=")
                          for other in flag[len("after="):].split(","))
        jobs[name] = Job(Path(f"{name}.py"), (f"{name}.py", "", "", {}), alone="alone" in flags,
                         early="early" in flags, after=after, position=position)
    return list(jobs.values())


def _replay(jobs: list[Job], slots: int = 2) -> list[list[str]]:
    """What *slots* slots start, round by round, when every round's jobs end together."""
    pending, ended, rounds = list(jobs), set(), []
    while pending:
        running: list[Job] = []
        while len(running) < slots and (job := next_job(pending, running, ended)) is not None:
            pending.remove(job)
            running.append(job)
        rounds.append([job.name for job in running])
        ended |= {job.source for job in running}
    return rounds


def test_the_pool_runs_a_recipe_alone_first_then_the_early_ones_in_gallery_order():
    jobs = _jobs("a", "b early", "c alone", "d", "e early", "f alone")
    assert _replay(jobs) == [["c"], ["f"], ["b", "e"], ["a", "d"]]


def test_a_recipe_starts_after_the_recipes_whose_files_it_reads():
    jobs = _jobs("a", "b after=a", "c", "d")
    assert _replay(jobs) == [["a", "c"], ["b", "d"]]


def test_a_recipe_that_runs_alone_and_waits_starts_when_nothing_runs():
    # It cannot start at once, and waiting for the machine to empty would leave cores idle: the others go on
    # starting, and it starts when nothing runs, at the latest after the last of them.
    jobs = _jobs("a early", "b alone after=a", "c", "d")
    a, b, c, d = jobs
    assert next_job([b, c, d], [a], set()).name == "c"
    assert next_job([b, d], [c], {a.source}).name == "d"
    assert next_job([b], [d], {a.source, c.source}) is None
    assert next_job([b], [], {a.source, c.source, d.source}).name == "b"
    assert _replay(jobs) == [["a", "c"], ["b"], ["d"]]


def test_recipes_that_wait_for_each_other_still_run():
    jobs = _jobs("a", "b")
    looped = [Job(job.source, job.args, job.alone, job.early, frozenset({other.source}), job.position)
              for job, other in zip(jobs, reversed(jobs))]
    assert _replay(looped) == [["a"], ["b"]]


def test_the_extension_wraps_sphinx_gallery_once():
    from sphinx_gallery import gen_gallery, gen_rst

    pool.install()
    wrapped = gen_gallery.generate_dir_rst, gen_rst._split_parallel
    assert all(getattr(function, "xnnguide_wrapped", False) for function in wrapped)
    assert gen_rst.generate_file_rst is pool.generate_file_rst
    pool.install()
    assert (gen_gallery.generate_dir_rst, gen_rst._split_parallel) == wrapped, "wrapped twice"

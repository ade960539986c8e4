"""The LLM guide's commands: the export command for a published checkpoint, which the build cannot run (it needs
the model's files), names only options the installed ``LlmConfig`` has, with values of their types; and every
command on the page is shown one option a line, within 88 columns."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "llm.md"
EXPORTER = "executorch.extension.llm.export.export_llm"


def bash_blocks(page: str) -> list[str]:
    """The bodies of the page's ```bash blocks."""
    return re.findall(r"^```bash\n(.*?)^```", page, flags=re.S | re.M)

OWN_CHECKPOINT = "## 1. Export your checkpoint"


def own_checkpoint_command(page: str) -> str:
    """The exporter command of the page's section on exporting a published checkpoint."""
    section = page.split(OWN_CHECKPOINT, 1)[1].split("\n## ", 1)[0]
    (command,) = [block for block in bash_blocks(section) if EXPORTER in block]
    return command

def overrides(command: str) -> list[str]:
    """The Hydra overrides of an ``export_llm`` command, as the shell passes them."""
    words = shlex.split(command.replace("\\\n", " "))
    return words[words.index(EXPORTER) + 1 :]

def llm_config_problems(options: list[str]) -> list[str]:
    """One line per option that the installed ``LlmConfig`` rejects (an unknown key or a value of the wrong
    type); Hydra's own ``hydra.*`` options are left to Hydra."""
    from executorch.extension.llm.export.config.llm_config import LlmConfig
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    config, problems = OmegaConf.structured(LlmConfig), []
    for override in OverridesParser.create().parse_overrides(options):
        key = override.key_or_group
        if key.startswith("hydra."):
            continue
        try:
            OmegaConf.update(config, key, override.value(), merge=True)
        except OmegaConfBaseException as error:
            problems.append(f"{key}: {str(error).splitlines()[0]}")
    return problems

def test_the_own_checkpoint_command_names_only_options_of_the_installed_llm_config():
    options = overrides(own_checkpoint_command(GUIDE.read_text(encoding="utf-8")))
    assert len(options) >= 15, options
    assert llm_config_problems(options) == []

def test_the_check_fails_on_a_misspelled_key_and_a_wrong_type():
    problems = llm_config_problems(["export.max_seq_len=64", "model.use_kv_cache=maybe",
                                    "backend.xnnpack.enabled=true"])
    assert [line.split(":")[0] for line in problems] == ["export.max_seq_len", "model.use_kv_cache"], problems

def layout_problems(block: str) -> list[str]:
    """The lines of a ```bash block that break the page's layout: over 88 columns, or more than one option on a
    continuation line (a line after one ending in a backslash). A line after one without a backslash starts a
    new command, whose program and first words may share it."""
    problems, continued = [], False
    for line in block.splitlines():
        if len(line) > 88:
            problems.append(f"over 88 columns: {line}")
        if continued and len(shlex.split(line.rstrip("\\"))) != 1:
            problems.append(f"more than one option: {line}")
        continued = line.endswith("\\")
    return problems


def test_every_command_on_the_page_is_one_option_a_line_within_88_columns():
    blocks = bash_blocks(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 2, blocks  # the export command and the phone's commands
    assert [problem for block in blocks for problem in layout_problems(block)] == []


def test_the_layout_check_fails_on_two_options_a_line_and_a_long_line():
    block = "adb shell mkdir -p /data/local/tmp\nadb push \\\n    a.pte b.model \\\n    " + "x" * 90 + "\n"
    assert [problem.split(":")[0] for problem in layout_problems(block)] == ["more than one option",
                                                                          "over 88 columns"]

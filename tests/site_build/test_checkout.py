"""What git offers for commit in a checkout."""

from __future__ import annotations

import subprocess

from conftest import ROOT


def test_a_venv_symlink_is_ignored(tmp_path):
    # `/.venv/` would match a directory only; a worktree's .venv is often a symlink to a shared one.
    link = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(link)], check=True)
    (link / ".gitignore").write_bytes((ROOT / ".gitignore").read_bytes())
    (link / ".venv").symlink_to(tmp_path)
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=link, capture_output=True, text=True,
                            check=True).stdout
    assert "!! .venv" in status and "?? .venv" not in status, status

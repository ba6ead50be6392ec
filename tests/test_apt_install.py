"""``.ci/apt-install``'s refusals: they name what was wrong and install nothing.

What it does when dpkg has unfinished work (``dpkg --configure -a`` first) changes the
machine's packages, so it is not run here; the closing note of the change records it run
on a package left unpacked and not configured.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

APT_INSTALL = Path(__file__).resolve().parents[1] / ".ci" / "apt-install"


def test_too_few_arguments_are_refused_with_the_usage(tmp_path: Path) -> None:
    log = tmp_path / "apt.log"
    run = subprocess.run([str(APT_INSTALL), str(log)], capture_output=True, text=True,
                         timeout=30, check=False)
    assert run.returncode == 2
    assert "usage: apt-install LOG PACKAGE... (got 1 arguments)" in run.stderr
    assert not log.exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run the script as another user")
def test_a_user_other_than_root_is_refused_before_apt_runs() -> None:
    # A folder that user can enter: the checkout and pytest's tmp_path may be private to
    # root (a clone made in a mktemp -d folder is 0700).
    folder = Path(tempfile.mkdtemp(prefix="erpsim-apt-"))
    try:
        folder.chmod(0o755)
        script = folder / "apt-install"
        shutil.copy(APT_INSTALL, script)
        script.chmod(0o755)
        log = folder / "apt.log"
        run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              str(script), str(log), "hello"],
                             capture_output=True, text=True, timeout=30, check=False)
        assert run.returncode == 1, run.stderr
        assert "apt-install: cannot install hello (not root)" in run.stderr
        assert not log.exists()
    finally:
        shutil.rmtree(folder)

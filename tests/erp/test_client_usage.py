"""The agent-side ``erp`` client: usage only, until the API exists."""

from __future__ import annotations

import subprocess
import sys

from erp.cli import main


def test_help_prints_usage(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: erp COMMAND")
    assert "ERPSIM_API" in out and "ERPSIM_TOKEN" in out


def test_a_command_is_refused_with_a_clear_line(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["invoices", "list"]) == 2
    err = capsys.readouterr().err
    assert err == ("erp: 'invoices': no commands are available in this build (the ERP API is "
                   "not part of it yet); see 'erp --help'\n")


def test_module_entry_point_runs() -> None:
    result = subprocess.run([sys.executable, "-m", "erp.cli"], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0 and "usage: erp" in result.stdout

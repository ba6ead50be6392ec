"""payment-proposal-script: the reference script and proposal are accepted; a script that
breaks one rule (checked by rerunning it on the held-out week) or an edited proposal is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import (
    Edit,
    add_row,
    cent_up,
    drop_row,
    failed_names,
    read_rows,
    regrade,
    remove,
    replace_text,
    set_cell,
    solved_attempt,
    write_rows,
)

TASK = "payment-proposal-script"
OUT, SCRIPT = "out/payment_proposal.csv", "out/payment_proposal.py"
RERUN = "rerun/held-out-proposal-matches"


@pytest.fixture(scope="module")
def attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp), tmp


def _hard_coded(ws: Path) -> None:
    """A script that writes today's proposal whatever it is given."""
    rows = read_rows(ws / OUT)
    text = "\\n".join(",".join(r) for r in rows) + "\\n"
    (ws / SCRIPT).write_text(
        "import sys\nargs = sys.argv\nout = args[args.index('--output') + 1]\n"
        f"open(out, 'w').write({text!r})\n".replace("\\\\n", "\\n"))


def _reversed(ws: Path) -> None:
    """The proposal's rows last vendor first (the prompt asks for vendor_id order)."""
    rows = read_rows(ws / OUT)
    write_rows(ws / OUT, [rows[0], *rows[:0:-1]])


CASES: list[tuple[str, Edit, str]] = [
    ("output: drop a vendor", drop_row(OUT, 0), "vendors-with-a-proposed-bill"),
    ("output: a vendor twice", add_row(OUT, copy_of=0), "one-row-per-vendor"),
    ("output: the held vendor added", add_row(OUT, ["V002", "1", "1898.00", "0.00", "1898.00"]),
     "vendors-with-a-proposed-bill"),
    ("wrong figure: a cent on the net", set_cell(OUT, 0, "net", cent_up), "proposal-figures"),
    ("wrong figure: the bill count", set_cell(OUT, 1, "bills", lambda n: str(int(n) + 1)),
     "proposal-figures"),
    ("wrong identifier: another vendor", set_cell(OUT, 0, "vendor_id", "V099"),
     "vendors-with-a-proposed-bill"),
    ("tooling: the script hard-codes today's answer", _hard_coded, RERUN),
    ("tooling: holds ignored",
     replace_text(SCRIPT, 'balance <= 0 or v.get("on_hold", "")', "balance <= 0"), RERUN),
    ("tooling: six days ahead, not seven",
     replace_text(SCRIPT, "timedelta(days=7)", "timedelta(days=6)"), RERUN),
    ("tooling: a discount closed on its last day",
     replace_text(SCRIPT, "a.pay_date <= date.fromisoformat", "a.pay_date < date.fromisoformat"),
     RERUN),
    ("tooling: discounts truncated, not rounded",
     replace_text(SCRIPT, "(balance * bp + 5000) // 10000", "(balance * bp) // 10000"), RERUN),
    ("tooling: the script crashes",
     replace_text(SCRIPT, "def main():", "def main():\n    raise RuntimeError('x')"),
     "rerun/script-runs-on-held-out-input"),
    ("tooling: no script left", remove(SCRIPT), "script-left"),
    ("output: the vendors in reverse order", _reversed,
     "proposal-in-vendor-id-order/in-vendor-id-order"),
]


def test_reference_is_accepted(attempt: tuple[Path, Path]) -> None:
    verdict = regrade(attempt[0], TASK, attempt[1], lambda ws: None)
    assert verdict.status == "accepted", failed_names(verdict)


def test_every_mutation_class_is_rejected(attempt: tuple[Path, Path]) -> None:
    missed = []
    for label, edit, check in CASES:
        verdict = regrade(attempt[0], TASK, attempt[1], edit)
        if verdict.status != "rejected" or check not in failed_names(verdict):
            missed.append((label, verdict.status, sorted(failed_names(verdict))))
    assert missed == []

"""contractor-accrual: the solution's memo passes; a memo stating a wrong fact about the
entry (another figure for the accrual, the entry's amount or its date) fails a check."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from desk.tasks import load_task
from tests.desk.output_mutants import (
    Edit,
    failed_names,
    regrade,
    replace_text,
    solved_attempt,
)

TASK = "contractor-accrual"
MEMO = "out/accrual_memo.txt"


@pytest.fixture(scope="module")
def attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp), tmp


def _regrade(attempt: tuple[Path, Path], edit: Edit) -> Any:
    return regrade(attempt[0], TASK, attempt[1], edit)


@pytest.fixture(scope="module")
def expected() -> dict[str, str]:
    folder = load_task(TASK).loaded.reference_dir
    assert folder is not None
    ref = folder / "expected.csv"
    with ref.open(encoding="utf-8", newline="") as f:
        return next(csv.DictReader(f))


def test_the_memo_sentence_about_the_hours_states_the_accrual(
        attempt: tuple[Path, Path], expected: dict[str, str]) -> None:
    a, hours = expected["accrual"], expected["unbilled_hours"]
    v = _regrade(attempt, replace_text(MEMO, f"accrued {a} for", f"accrued {hours} for"))
    assert "memo-states-amount-for-the-hours" in failed_names(v)


def test_the_entry_sentence_states_its_amount(attempt: tuple[Path, Path],
                                              expected: dict[str, str]) -> None:
    a, hours = expected["accrual"], expected["unbilled_hours"]
    v = _regrade(attempt, replace_text(MEMO, f"liabilities for {a}",
                                             f"liabilities for {hours}"))
    assert failed_names(v) == {"memo-states-the-entry"}


def test_the_entry_sentence_states_its_date(attempt: tuple[Path, Path],
                                            expected: dict[str, str]) -> None:
    day = expected["entry_date"]
    later = day[:-2] + f"{int(day[-2:]) + 1:02d}"
    v = _regrade(attempt, replace_text(MEMO, f"dated {day}", f"dated {later}"))
    assert failed_names(v) == {"memo-states-the-entry"}


def test_the_entry_sentence_may_not_deny_it(attempt: tuple[Path, Path]) -> None:
    v = _regrade(attempt, replace_text(MEMO, "The entry dated", "The entry not dated"))
    assert "memo-states-the-entry" in failed_names(v)


def test_the_entry_sentence_states_its_direction(attempt: tuple[Path, Path]) -> None:
    """The entry stated the other way round (debit 2100, credit 6300): a wrong fact."""
    v = _regrade(attempt, replace_text(
        MEMO, "debits 6300 Contractors and credits 2100 Accrued liabilities",
        "debits 2100 Accrued liabilities and credits 6300 Contractors"))
    assert failed_names(v) == {"memo-states-the-entry"}


def _write_memo(text: str) -> Edit:
    def edit(ws: Path) -> None:
        (ws / MEMO).write_text(text, encoding="utf-8")
    return edit


def test_the_entry_in_dr_cr_notation_and_hours_as_hrs_are_accepted(
        attempt: tuple[Path, Path], expected: dict[str, str]) -> None:
    """An accountant's Dr/Cr notation states the entry's direction, "hrs" the hours."""
    a, day = f"{float(expected['accrual']):,.2f}", expected["entry_date"]
    v = _regrade(attempt, _write_memo(
        f"We accrued ${a} for 198.5 unbilled hrs.\n\n"
        f"Journal entry dated {day}: Dr 6300 Contractors ${a}, Cr 2100 Accrued liabilities "
        f"${a}.\n"))
    assert v.status == "accepted", failed_names(v)


def test_the_entry_in_dr_cr_notation_the_other_way_round_is_refused(
        attempt: tuple[Path, Path], expected: dict[str, str]) -> None:
    a, day = f"{float(expected['accrual']):,.2f}", expected["entry_date"]
    v = _regrade(attempt, _write_memo(
        f"We accrued ${a} for 198.5 unbilled hrs.\n\n"
        f"Journal entry dated {day}: Dr 2100 Accrued liabilities ${a}, Cr 6300 Contractors "
        f"${a}.\n"))
    assert failed_names(v) == {"memo-states-the-entry"}


def test_the_prompt_asks_the_amount_and_hours_in_one_sentence() -> None:
    """memo-states-amount-for-the-hours wants both in one sentence (a bulleted memo with the
    amount and the hours on separate lines is refused): the prompt says so."""
    prompt = " ".join((load_task(TASK).folder / "prompt.md").read_text().split())
    assert "in one sentence, the amount accrued and the number of unbilled hours" in prompt
    assert "(amounts to the cent)" in prompt  # "$17,016" is refused
    assert "its amount, stated without negations" in prompt  # "The entry not dated" too


def test_the_amount_rounded_to_the_dollar_is_refused(attempt: tuple[Path, Path],
                                                     expected: dict[str, str]) -> None:
    a = expected["accrual"]
    whole = f"{round(float(a)):,}"
    v = _regrade(attempt, _write_memo(
        f"We accrued ${whole} for 198.5 unbilled hours. The entry dated "
        f"{expected['entry_date']} debits 6300 Contractors and credits 2100 Accrued "
        f"liabilities for ${whole}.\n"))
    assert failed_names(v) == {"memo-states-amount-for-the-hours", "memo-states-the-entry"}

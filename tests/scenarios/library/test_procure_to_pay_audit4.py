"""procure-to-pay: the exceptions file kept at every turn, not written once at the end
(easy tier, seed 1, real attempts).

The prompt asks each turn to "keep" ``out/exceptions.csv`` listing every vendor document
not entered or acted on, and why; the checks read the file the last turn left. A clerk who
wrote it only on the month's last business day (the files of the turns before it held no
list while documents sat unentered) was accepted (audit 3 left it open).
``exceptions-list-rows`` now sets ``each_turn``: the file as every turn left it, against the
documents sent by then and the books when that turn ended. A file whose later turns drop a
document still not acted on fails too; the reference, keeping it at every turn, passes.
"""

from __future__ import annotations

import csv
import io

import pytest

from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "procure-to-pay"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference, its exceptions file written another way (``name``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run_turn(self, desk: TurnContext) -> None:
        solver.reference(desk)
        path = desk.output_dir / solver.EXCEPTIONS_FILE
        if self.name == "only-at-the-end" and not solver.is_last_business_day(desk.day):
            path.unlink()
        if self.name == "only-the-turns-own" and not solver.is_last_business_day(desk.day):
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
            inbox = {p.name for p in desk.inbox()}
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(
                [rows[0], *(r for r in rows[1:] if r[0] in inbox)])
            path.write_text(buf.getvalue(), encoding="utf-8")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, AttemptResult]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("p2p-audit4")
    return {n: run_attempt(loaded, SEED, n, root / n, agent=_Clerk(n))
            for n in ("only-at-the-end", "only-the-turns-own", "as-the-reference")}


def test_an_exceptions_file_written_only_at_the_end_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["only-at-the-end"]
    assert failed_checks(res.out) == {"exceptions-list-rows"}
    detail = check_results(res.out)["exceptions-list-rows"]["detail"]
    assert "left no out/exceptions.csv" in detail, detail


def test_a_file_that_drops_what_earlier_turns_listed_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["only-the-turns-own"]
    assert failed_checks(res.out) == {"exceptions-list-rows"}
    detail = check_results(res.out)["exceptions-list-rows"]["detail"]
    assert "not acted on but not listed" in detail, detail


def test_the_file_kept_at_every_turn_is_accepted(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["as-the-reference"]
    assert failed_checks(res.out) == set()
    metrics = check_results(res.out)["exceptions-list-rows"]["metrics"]
    assert metrics["turns_failed"] == 0 and metrics["turns"] > 10, metrics

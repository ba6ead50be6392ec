"""demand-forecast: wrong forecasts are refused by the check that names the mistake; the
same right forecast written another way is accepted.

The solution runs on a copy of the task's workspace and the task's own checks grade each
edit of its out/forecast.csv (``tests.desk.output_mutants.solve``). Before the item list
reached the reference folder, ``forecast_error`` ignored keys beyond the truth: a forecast
that also listed an item the history does not hold (``Widgets,40``), even twice, was
accepted; so was an item forecast at -5 (the error bound absorbed it).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from datetime import date

import pytest

from checks.context import CheckContext
from checks.verdict import evaluate
from desk.generators.demand import demand_tables
from desk.tasks import generate_task, load_task, supplied_differs
from sim.world_events import OrderLine, OrderPlaced
from tests.desk.output_mutants import Solved, solve

TASK = "demand-forecast"
OUT = "out/forecast.csv"

Edit = Callable[[str], str]


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


@pytest.fixture
def reference(solved: Solved) -> Iterator[str]:
    """The solution's forecast, put back after the test."""
    path = solved.path(OUT)
    text = path.read_text(encoding="utf-8")
    yield text
    path.write_text(text, encoding="utf-8")


def _grade(solved: Solved, text: str) -> dict[str, tuple[bool, str]]:
    """``name: (passed, detail)`` of the required checks on this forecast."""
    solved.path(OUT).write_bytes(text.encode("utf-8"))
    loaded = solved.task.loaded
    ctx = CheckContext(solved.store, workspace=solved.workspace,
                       reference=loaded.reference_dir,
                       inputs=tuple(sorted(loaded.workspace_files)), cache=solved.cache)
    verdict = evaluate(loaded.checks, ctx)
    assert not verdict.grader_errors, verdict.grader_errors
    return {r.name: (r.passed, r.detail) for r in verdict.results if r.required}


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def _csv(rows: list[list[str]], end: str = "\n") -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=end).writerows(rows)
    return buf.getvalue()


def _first_item(text: str) -> str:
    return _rows(text)[1][0]


def test_reference_forecast_is_accepted(solved: Solved, reference: str) -> None:
    results = _grade(solved, reference)
    assert all(passed for passed, _ in results.values()), results
    assert {"forecast-items", "forecast-rows/items-once",
            "forecast-rows/quantities-not-negative"} <= set(results)


# --- wrong work: (label, edit of the reference forecast, the check, words of its detail)

def _add(row: list[str], times: int = 1) -> Edit:
    return lambda text: _csv([*_rows(text), *[row] * times])


def _drop_first(text: str) -> str:
    rows = _rows(text)
    return _csv([rows[0], *rows[2:]])


def _first_twice(text: str) -> str:
    rows = _rows(text)
    return _csv([*rows, [rows[1][0], "0"]])


def _first_negative(text: str) -> str:
    rows = _rows(text)
    rows[1][1] = "-5"
    return _csv(rows)


def _first_parenthesized(text: str) -> str:
    rows = _rows(text)
    rows[1][1] = f"({rows[1][1]})"
    return _csv(rows)


def _renamed(text: str) -> str:
    rows = _rows(text)
    rows[1][0] = rows[1][0] + " (renamed)"
    return _csv(rows)


WRONG: list[tuple[str, Edit, str, str]] = [
    ("unknown item added", _add(["Widgets", "40"]), "forecast-items", "extra (1): 'Widgets'"),
    ("unknown item added twice", _add(["Widgets", "40"], 2), "forecast-items",
     "extra (1): 'Widgets'"),
    ("unknown item at zero", _add(["Widgets", "0"]), "forecast-items", "Widgets"),
    ("item renamed", _renamed, "forecast-items", "(renamed)"),
    ("item left out", _drop_first, "forecast-items", "missing (1): "),
    ("item on two rows", _first_twice, "forecast-rows/items-once", "(2 rows)"),
    ("negative quantity", _first_negative, "forecast-rows/quantities-not-negative", "'-5'"),
    ("negative in parentheses", _first_parenthesized,
     "forecast-rows/quantities-not-negative", "= '("),
]


@pytest.mark.parametrize(("label", "edit", "check", "words"), WRONG,
                         ids=[w[0] for w in WRONG])
def test_wrong_forecast_is_refused_naming_the_item(solved: Solved, reference: str,
                                                   label: str, edit: Edit, check: str,
                                                   words: str) -> None:
    results = _grade(solved, edit(reference))
    assert check in results, sorted(results)
    passed, detail = results[check]
    assert not passed, (label, detail)
    assert words in detail, detail
    if label in ("item left out", "item on two rows", "negative quantity"):
        assert _first_item(reference) in detail, detail


# --- right work written another way: accepted

def _reversed_columns(text: str) -> str:
    return _csv([list(reversed(r)) for r in _rows(text)])


def _extra_column(text: str) -> str:
    rows = _rows(text)
    return _csv([[*rows[0], "method"], *[[*r, "mean per day"] for r in rows[1:]]])


def _padded(text: str) -> str:
    return _csv([[f"  {c} " for c in r] for r in _rows(text)])


def _integers(text: str) -> str:
    rows = _rows(text)
    return _csv([rows[0], *[[r[0], str(round(float(r[1])))] for r in rows[1:]]])


def _reordered(text: str) -> str:
    rows = _rows(text)
    return _csv([rows[0], *reversed(rows[1:])])


RIGHT: list[tuple[str, Edit]] = [
    ("byte-order mark", lambda t: "\ufeff" + t),
    ("CRLF line ends", lambda t: _csv(_rows(t), "\r\n")),
    ("columns reversed", _reversed_columns),
    ("an extra column", _extra_column),
    ("spaces around names and cells", _padded),
    ("every cell quoted", lambda t: "".join(
        ",".join(f'"{c}"' for c in r) + "\n" for r in _rows(t))),
    ("whole quantities", _integers),
    ("rows in another order", _reordered),
    ("blank lines between rows", lambda t: t.replace("\n", "\n\n")),
]


@pytest.mark.parametrize(("label", "edit"), RIGHT, ids=[r[0] for r in RIGHT])
def test_right_forecast_written_another_way_is_accepted(solved: Solved, reference: str,
                                                        label: str, edit: Edit) -> None:
    results = _grade(solved, edit(reference))
    assert all(passed for passed, _ in results.values()), (label, results)


def test_a_total_row_is_refused_as_the_prompt_says(solved: Solved, reference: str) -> None:
    """A TOTAL row is not an item of the history: forecast-items refuses it, and the prompt
    now says so (it asked for one row per item only)."""
    assert "(no total row)" in load_task(TASK).spec.prompt
    rows = _rows(reference)
    total = sum(float(r[1]) for r in rows[1:])
    results = _grade(solved, _csv([*rows, ["TOTAL", f"{total:.1f}"]]))
    assert not results["forecast-items"][0], results


def test_zero_quantity_is_not_negative(solved: Solved, reference: str) -> None:
    rows = _rows(reference)
    rows[1][1] = "-0"
    results = _grade(solved, _csv(rows))
    assert results["forecast-rows/quantities-not-negative"][0], results


# --- the generator: the item list and the truth are the history's items


def _order(day: date, order_id: str, *items: tuple[str, int]) -> tuple[date, OrderPlaced]:
    lines = tuple(OrderLine(description=d, quantity=q, unit_price=100) for d, q in items)
    return day, OrderPlaced(customer_id="C0001", order_id=order_id, lines=lines)


def test_truth_holds_the_history_items_only() -> None:
    today = date(2026, 4, 15)
    orders = [
        _order(date(2026, 4, 1), "SO-1", ("Training session", 2), ("Zebra audit", 1)),
        _order(date(2026, 4, 15), "SO-2", ("Consulting hours", 3)),
        _order(date(2026, 4, 16), "SO-3", ("Consulting hours", 4), ("Data migration", 5)),
    ]
    history, truth = demand_tables(orders, today)
    assert [r[3] for r in history] == ["Training session", "Zebra audit", "Consulting hours"]
    # catalogue order, then others by name; an item first ordered after today is not there
    assert truth == [["Consulting hours", "4"], ["Training session", "0"],
                     ["Zebra audit", "0"]]


def test_generated_item_list_is_the_history_items_in_reference_only() -> None:
    task = load_task(TASK)
    files = generate_task(task)
    history = list(csv.DictReader(io.StringIO(
        files["workspace/order_history.csv"].decode("utf-8"))))
    listed = [r["item"] for r in csv.DictReader(io.StringIO(
        files["reference/history_items.csv"].decode("utf-8")))]
    truth = [r["item"] for r in csv.DictReader(io.StringIO(
        files["reference/actual_demand.csv"].decode("utf-8")))]
    assert sorted(listed) == sorted({r["item"] for r in history})
    assert len(listed) == len(set(listed)) and listed == truth
    assert not any(rel.startswith("workspace/") and rel.endswith("history_items.csv")
                   for rel in files)
    assert supplied_differs(task) == []

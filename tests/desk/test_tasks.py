"""Loading desk tasks: the format, its strictness, and what a loaded task runs as."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

from desk.errors import DeskTaskError
from desk.tasks import (
    generate_task,
    list_tasks,
    load_task,
    supplied_differs,
    tasks_dir,
    write_generated,
)

SAMPLES = ["ar-aging-workbook", "contractor-accrual", "demand-forecast", "payments-match",
           "vendor-statement-recon"]

MakeTask = Callable[..., Path]


def _error(folder: Path) -> str:
    with pytest.raises(DeskTaskError) as info:
        load_task(folder)
    return str(info.value)


# --- listing and loading the samples -------------------------------------------------------

def test_list_tasks_names_the_samples() -> None:
    names = list_tasks()
    assert names == sorted(names)
    assert set(SAMPLES) <= set(names)


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_loads_as_a_one_turn_desk_scenario(name: str) -> None:
    task = load_task(name)
    loaded = task.loaded
    assert (task.id, task.folder) == (name, tasks_dir() / name)
    assert loaded.kind == "desk"
    assert loaded.reference_dir == tasks_dir() / name / "reference"
    assert loaded.workspace_files and all(not k.startswith("/") for k in loaded.workspace_files)
    assert task.solution.is_file() and os.access(task.solution, os.X_OK)
    assert (task.folder / "README.md").is_file()
    cal = loaded.scenario.calendar.build()
    assert cal.end == task.spec.date
    assert loaded.scenario.turns.dates_in(cal) == [task.spec.date]
    if task.has_books:
        assert cal.start < cal.end
    else:
        assert cal.business_days() == [task.spec.date]
        assert loaded.scenario.population.customers.count == 0
        assert not loaded.scenario.company.automation.bank_feed
    assert len(loaded.checks) == len(task.spec.checks)
    assert "{outputs}" in loaded.prompt_template


def test_library_books_keep_the_library_company_and_holidays() -> None:
    task = load_task("contractor-accrual")
    sc = task.loaded.scenario
    assert sc.population.customers.count == 60
    assert sc.calendar.holidays == (date(2026, 5, 25),)
    assert all(date(2026, 5, 18) <= i.on <= date(2026, 5, 29) for i in sc.injections)


def test_prompt_braces_stay_literal(make_task: MakeTask) -> None:
    task = load_task(make_task(prompt="Write {\"total\": 1} as JSON."))
    from string import Formatter

    rendered = task.loaded.prompt_template.format_map(
        {"title": "T", "date": "2026-03-04", "weekday": "Wednesday", "outputs": "- x"})
    assert '{"total": 1}' in rendered
    assert list(Formatter().parse(task.loaded.prompt_template))


def test_a_workbook_output_brings_the_libreoffice_note(make_task: MakeTask) -> None:
    """XLOOKUP is #NAME? to the LibreOffice the checks recalculate with: a task leaving a
    workbook says so (coa-mapping-workbook's lookups written with XLOOKUP were refused by
    no-error-cells with nothing in the prompt to warn of it); a task without one does not."""
    from desk.tasks import WORKBOOK_NOTE

    assert "XLOOKUP" in WORKBOOK_NOTE
    plain = load_task(make_task()).loaded.prompt_template
    assert WORKBOOK_NOTE not in plain
    book = load_task(make_task(outputs=["out/answer.txt", "out/model.XLSX"])).loaded
    assert book.prompt_template.rstrip().endswith(WORKBOOK_NOTE)
    assert WORKBOOK_NOTE in load_task("coa-mapping-workbook").loaded.prompt_template


def test_sha256_covers_the_supplied_files(make_task: MakeTask) -> None:
    folder = make_task()
    before = load_task(folder).loaded.sha256
    (folder / "workspace" / "data.txt").write_text("43.00\n")
    assert load_task(folder).loaded.sha256 != before


def test_find_by_unknown_name_lists_the_tasks() -> None:
    with pytest.raises(DeskTaskError, match=r"no such task.*payments-match"):
        load_task("no-such-task")


# --- strictness ------------------------------------------------------------------------------

def test_unknown_field_is_named_with_the_allowed_ones(make_task: MakeTask) -> None:
    message = _error(make_task(colour="blue"))
    assert message.startswith("task tiny/task.yaml: colour: unknown field (allowed: ")
    assert "category" in message


def test_unknown_nested_field_names_its_path(make_task: MakeTask) -> None:
    message = _error(make_task(generator={"module": "desk.generators.aging", "seed": 1,
                                          "sead": 2}))
    assert "generator.sead: unknown field (allowed: module, params, seed)" in message


def test_a_bad_value_names_path_value_and_expectation(make_task: MakeTask) -> None:
    message = _error(make_task(timeout_s=0))
    assert "timeout_s: Input should be greater than or equal to 1 (got 0)" in message
    message = _error(make_task(date="2026-02-30"))
    assert "date: not a valid date (expected YYYY-MM-DD) (got '2026-02-30')" in message


def test_a_weekend_date_is_refused(make_task: MakeTask) -> None:
    assert "2026-03-07 is a Saturday (expected a business day" in _error(
        make_task(date="2026-03-07"))


def test_a_prompt_file_outside_the_folder_is_refused(make_task: MakeTask,
                                                     tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("x")
    message = _error(make_task(prompt=None, prompt_file="../secret.md"))
    assert "prompt_file: '../secret.md' resolves to" in message
    assert "outside the task folder" in message


def test_a_bad_check_is_named_by_its_path(make_task: MakeTask) -> None:
    message = _error(make_task(checks=[{"type": "csv_columns", "path": "../out.csv",
                                        "columns": ["a"]},
                                       {"type": "no_such_check"}]))
    assert "task tiny/task.yaml: 2 problems" in message
    assert "checks[0].path: expected a relative path inside the workspace" in message
    assert "checks[1].type: unknown check type" in message


def test_a_check_path_escaping_the_workspace_is_refused(make_task: MakeTask) -> None:
    message = _error(make_task(checks=[{"type": "file_exists", "path": "/etc/passwd"}]))
    assert "checks[0].path:" in message and "'/etc/passwd'" in message


def test_a_reference_file_the_checks_name_must_exist(make_task: MakeTask) -> None:
    message = _error(make_task(reference={}))
    assert "checks[1].equals_ref: 'rows.csv' is not in reference/" in message


def test_a_forecast_truth_in_the_workspace_is_refused(make_task: MakeTask) -> None:
    check = {"type": "forecast_error", "path": "out/forecast.csv", "ref": "truth.csv",
             "key": "item", "column": "qty", "max_error": 0.2}
    message = _error(make_task(checks=[check], files={"truth.csv": "item,qty\na,1\n"},
                               reference={"truth.csv": "item,qty\na,1\n"}))
    assert "checks[0].ref: the truth file 'truth.csv' is in the workspace" in message


def test_a_link_in_the_workspace_is_refused(make_task: MakeTask, tmp_path: Path) -> None:
    folder = make_task()
    (tmp_path / "elsewhere.txt").write_text("x")
    (folder / "workspace" / "link.txt").symlink_to(tmp_path / "elsewhere.txt")
    assert "workspace/link.txt: a link" in _error(folder)


def test_runner_names_in_the_workspace_are_refused(make_task: MakeTask) -> None:
    message = _error(make_task(files={"prompt.md": "x", "out/answer.txt": "x"}))
    assert "workspace/prompt.md: the runner writes this name itself" in message
    assert "workspace/out/answer.txt" in message


def test_the_solution_must_be_executable(make_task: MakeTask) -> None:
    folder = make_task()
    os.chmod(folder / "solution" / "solve", 0o644)
    assert "solution/solve: not executable" in _error(folder)


def test_the_id_must_be_the_folder_name(make_task: MakeTask) -> None:
    folder = make_task()
    folder.rename(folder.parent / "other")
    assert "id: 'tiny' differs from the folder's name 'other'" in _error(
        folder.parent / "other")


def test_an_unknown_generator_module_is_refused(make_task: MakeTask) -> None:
    message = _error(make_task(generator={"module": "desk.generators.nope", "seed": 1}))
    assert "generator.module: 'desk.generators.nope' cannot be imported" in message
    message = _error(make_task(generator={"module": "os.path", "seed": 1}))
    assert "generator.module: String should match pattern" in message


@pytest.mark.parametrize(("source", "expected"), [
    ("def generate(ctx):\n    return {\n", "has a syntax error ("),
    ("raise RuntimeError('no data dir')\n", "failed while it was imported (RuntimeError: "
                                            "no data dir)"),
])
def test_a_generator_that_cannot_load_is_a_clear_error(make_task: MakeTask, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       source: str, expected: str) -> None:
    import importlib
    import sys

    import desk.generators

    extra = tmp_path / "generators"
    extra.mkdir()
    (extra / "broken_gen.py").write_text(source)
    monkeypatch.setattr(desk.generators, "__path__", [*desk.generators.__path__, str(extra)])
    monkeypatch.delitem(sys.modules, "desk.generators.broken_gen", raising=False)
    importlib.invalidate_caches()
    message = _error(make_task(generator={"module": "desk.generators.broken_gen", "seed": 1}))
    assert "generator.module: 'desk.generators.broken_gen' " + expected in message


def test_books_must_start_by_the_task_date(make_task: MakeTask) -> None:
    message = _error(make_task(books={"start": "2026-03-09"}))
    assert "books.start: 2026-03-09 is after the task date 2026-03-04" in message


def test_yaml_errors_name_the_line(make_task: MakeTask) -> None:
    message = _error(make_task(raw="id: tiny\nid: again\n"))
    assert message.startswith("task tiny/task.yaml: line 2, column 1: duplicate key 'id'")


# --- generation ------------------------------------------------------------------------------

def test_generation_is_deterministic_and_matches_the_release() -> None:
    task = load_task("vendor-statement-recon")
    first, second = generate_task(task), generate_task(task)
    assert first == second
    assert sorted(first) == ["reference/balances.csv", "reference/reconciling_items.csv",
                             "workspace/ap_open_items.csv", "workspace/statements/V001.csv",
                             "workspace/statements/V002.csv", "workspace/statements/V003.csv"]
    assert supplied_differs(task) == []


def test_a_workspace_file_the_generator_no_longer_makes_is_stale(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "vendor-statement-recon"
    shutil.copytree(tasks_dir() / "vendor-statement-recon", folder)
    (folder / "workspace" / "statements" / "V009.csv").write_text("left from a release\n")
    (folder / "reference" / "notes_check.py").write_text("# a hand-written helper\n")
    task = load_task(folder)
    assert supplied_differs(task) == ["workspace/statements/V009.csv"]
    assert write_generated(task) == [("removed", "workspace/statements/V009.csv")]
    assert (folder / "reference" / "notes_check.py").is_file()  # reference/ is not swept
    assert supplied_differs(task) == [] and write_generated(task) == []
    (folder / "reference" / "balances.csv").write_text("edited\n")
    assert write_generated(task) == [("wrote", "reference/balances.csv")]
    assert not list(folder.rglob(".*.partial"))


def test_another_seed_gives_other_files() -> None:
    task = load_task("demand-forecast")
    assert generate_task(task, seed=4) != generate_task(task)


def test_a_task_without_generator_has_nothing_to_generate(make_task: MakeTask) -> None:
    task = load_task(make_task())
    assert supplied_differs(task) == []
    with pytest.raises(DeskTaskError, match="generator: the task has none"):
        generate_task(task)


def test_supplied_differs_lists_edited_files(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "payments-match"
    shutil.copytree(tasks_dir() / "payments-match", folder)
    (folder / "workspace" / "note.txt").write_text("edited\n")
    (folder / "reference" / "cases.csv").unlink()
    task = load_task(folder)
    assert supplied_differs(task) == ["reference/cases.csv", "workspace/note.txt"]

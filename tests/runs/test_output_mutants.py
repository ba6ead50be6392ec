"""The output operators' edits (runs/output_mutants.py) on real files: each kind of mistake
is made where it applies, says why where it cannot, and an edit that changes only bytes is
seen as holding the same data."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import openpyxl
import pytest

from runs.output_mutants import (
    OUTPUT_OPS,
    Edit,
    file_edits,
    mentioned_ids,
    order_stated,
    same_content,
)
from tests.conftest import require_soffice


def _rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"))))


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def books(tmp_path: Path) -> tuple[Path, Path]:
    """An input export of four invoices and an output listing two of them."""
    ws = tmp_path / "ws"
    _write(ws / "open_items.csv",
           "invoice_id,customer,due_date,open_balance\n"
           "INV-0101,Acme Ltd,2026-05-03,100.00\n"
           "INV-0102,Acme Ltd,2026-05-09,250.50\n"
           "INV-0103,Acme Ltd,2026-07-01,75.25\n"
           "INV-0104,Birch plc,2026-05-04,10.00\n")
    out = _write(ws / "out" / "overdue.csv",
                 "invoice_id,customer,due_date,open_balance,status,note\n"
                 "INV-0101,Acme Ltd,2026-05-03,100.00,overdue,called twice about it\n"
                 "INV-0102,Acme Ltd,2026-05-09,250.50,overdue,promised by Friday\n")
    return ws, out


def _by_kind(edits: list[Edit]) -> dict[str, list[Edit]]:
    out: dict[str, list[Edit]] = {}
    for e in edits:
        out.setdefault(e.kind, []).append(e)
    return out


def test_csv_rows_are_dropped_added_and_an_excluded_input_row_put_in(
        books: tuple[Path, Path]) -> None:
    ws, out = books
    plan, _ = file_edits(out, workspace=ws, mentioned=mentioned_ids([out]))
    data = out.read_bytes()
    assert len(plan["output_drop_row"]) == 2
    assert _rows(plan["output_drop_row"][0].apply(data))[1][0] == "INV-0102"
    added = _by_kind(plan["output_add_row"])
    excluded = [_rows(e.apply(data))[2] for e in added["excluded row"]]
    # the nearest input rows no output mentions, their own figures and dates carried over
    assert ["INV-0103", "Acme Ltd", "2026-07-01", "75.25", "overdue",
            "called twice about it"] in excluded
    changed = _rows(added["copy with a changed key"][0].apply(data))
    assert changed[2][0] == "INV-0103" and changed[1][0] == "INV-0101"  # 0102 is taken
    assert len(_rows(added["row twice"][0].apply(data))) == 4


def test_csv_cells_change_by_kind_and_prose_is_left_alone(books: tuple[Path, Path]) -> None:
    ws, out = books
    plan, _ = file_edits(out, workspace=ws, mentioned=mentioned_ids([out]))
    cells: dict[tuple[str, str], Edit] = {}
    for e in plan["output_change_cell"]:
        cells.setdefault((e.site, e.kind), e)  # row 1's
    data = out.read_bytes()
    assert _rows(cells["open_balance", "money by a cent"].apply(data))[1][3] == "100.01"
    assert _rows(cells["open_balance", "money to another amount"].apply(data))[1][3] == "250.50"
    assert _rows(cells["due_date", "date by a day"].apply(data))[1][2] == "2026-05-04"
    assert _rows(cells["invoice_id", "another id of the column"].apply(data))[1][0] == "INV-0102"
    # a category repeats; a customer name is another one of the input's column
    assert ("customer", "another value of the column") in cells
    assert _rows(cells["customer", "another value of the column"].apply(data))[1][1] in (
        "Birch plc",)
    assert not any(site == "note" for site, _ in cells)  # free text: no valid other value


def test_columns_are_reordered_only_where_the_prompt_states_the_order_exactly(
        books: tuple[Path, Path]) -> None:
    ws, out = books
    header = _rows(out.read_bytes())[0]
    prompt = "Write out/overdue.csv with exactly the columns\n  `" + ",".join(header) + "`."
    assert order_stated(header, prompt)
    assert not order_stated(header, "columns " + ",".join(header))
    plan, _ = file_edits(out, workspace=ws, prompt=prompt)
    reordered = _by_kind(plan["output_swap_columns"])["columns in the wrong order"]
    assert _rows(reordered[0].apply(out.read_bytes()))[0][:2] == ["customer", "invoice_id"]
    plain, _ = file_edits(out, workspace=ws)
    kinds = _by_kind(plain.get("output_swap_columns", []))
    assert "columns in the wrong order" not in kinds


def test_two_money_columns_swap_values_under_the_header(tmp_path: Path) -> None:
    out = _write(tmp_path / "je.csv", "entry_id,debit,credit\nJE-01,10.00,0.00\n"
                                      "JE-01,0.00,10.00\n")
    plan, _ = file_edits(out)
    (swap,) = plan["output_swap_columns"]
    assert swap.kind == "values under the wrong header"
    assert _rows(swap.apply(out.read_bytes()))[1:] == [["JE-01", "0.00", "10.00"],
                                                        ["JE-01", "10.00", "0.00"]]


def test_a_text_states_an_excluded_item_a_wrong_figure_date_or_name(
        books: tuple[Path, Path]) -> None:
    ws, _ = books
    email = _write(ws / "out" / "emails" / "C1.txt",
                   "Dear Acme Ltd,\n\n- INV-0101, $100.00, due 2026-05-03\n"
                   "- INV-0102, $250.50, due 2026-05-09\n\nTotal overdue: $350.50.\n")
    plan, why = file_edits(email, workspace=ws, mentioned=mentioned_ids([email]))
    text = email.read_bytes()
    lines = {e.apply(text).decode().split("\n")[3] for e in plan["output_add_row"]}
    assert "- INV-0103, $75.25, due 2026-07-01" in lines
    kinds = _by_kind(plan["output_change_cell"])
    cent = kinds["figure by a cent"][0].apply(text).decode()
    assert "$100.01" in cent and "$100.00" not in cent
    assert "2026-05-04" in kinds["date by a day"][0].apply(text).decode()
    assert "Dear Birch plc" in kinds["another value of the input's column"][0].apply(
        text).decode()
    assert "output_swap_columns" not in plan and why["output_swap_columns"]


def test_scripts_and_queries_get_their_logic_broken_outside_comments_and_strings(
        tmp_path: Path) -> None:
    sql = _write(tmp_path / "q.sql", "-- paid > total\nSELECT bill_id FROM bills\n"
                                     "WHERE paid > total AND status = 'a>b'\n"
                                     "ORDER BY paid DESC;\n")
    plan, why = file_edits(sql)
    changed = {e.apply(sql.read_bytes()).decode() for e in plan["output_break_logic"]}
    assert "SELECT bill_id FROM bills\nWHERE paid >= total" in "\n".join(changed)
    assert any("ORDER BY paid ASC" in t for t in changed)
    assert any("OR status" in t for t in changed)
    assert all(t.startswith("-- paid > total\n") and "'a>b'" in t for t in changed)
    assert set(why) == set(OUTPUT_OPS) - {"output_break_logic"}
    py = _write(tmp_path / "p.py", '"""Pay what is due."""\nimport csv\n\n'
                                   "def due(b):\n    return b['due'] <= TODAY and not b['hold']\n")
    plan, _ = file_edits(py)
    changed = {e.apply(py.read_bytes()).decode().split("\n")[4] for e in plan["output_break_logic"]}
    assert "    return b['due'] >= TODAY and not b['hold']" in changed
    assert "    return b['due'] <= TODAY or not b['hold']" in changed
    assert "    return b['due'] <= TODAY and b['hold']" in changed


def test_a_workbook_gets_cells_rows_and_formulas_broken(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Aging"
    ws.append(["Invoice", "Days", "Open"])
    ws.append(["INV-1", 3, 100.25])
    ws.append(["INV-2", 40, 50.5])
    ws.append(["Total", None, "=SUM(C2:C3)"])
    path = tmp_path / "a.xlsx"
    wb.save(path)
    plan, why = file_edits(path)
    data = path.read_bytes()
    assert {e.site for e in plan["output_drop_row"]} == {"sheet1!2", "sheet1!3", "sheet1!4"}
    cells = {(e.site, e.kind) for e in plan["output_change_cell"]}
    assert ("sheet1!C2", "figure by a cent") in cells and ("sheet1!B2", "number by one") in cells
    pointer = _by_kind(plan["output_break_formula"])["formula pointing at the wrong cell"]
    after = openpyxl.load_workbook(io.BytesIO(pointer[0].apply(data)))
    assert after["Aging"]["C4"].value == "=SUM(C2:C2)"  # the range one row short
    assert why["output_add_row"] and why["output_swap_columns"] and why["output_break_logic"]
    assert same_content(path, data, data)
    assert not same_content(path, data, pointer[0].apply(data))


def test_an_unreadable_kind_of_file_says_why_for_every_operator(tmp_path: Path) -> None:
    path = tmp_path / "notes.pdf"
    path.write_bytes(b"%PDF-1.4\n")
    plan, why = file_edits(path)
    assert plan == {} and set(why) == set(OUTPUT_OPS)
    assert "a .pdf file: no operator reads it" in why["output_drop_row"]


def test_same_data_written_differently_is_the_same_content(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    assert same_content(path, b'a,b\n"1",2.50\n', b"a,b\n1,2.50\n")
    assert not same_content(path, b"a,b\n1,2.50\n", b"a,b\n1,2.51\n")
    text = tmp_path / "x.txt"
    assert same_content(text, b"Total  $1.00\n", b"Total $1.00")


def test_the_candidates_of_a_turn_say_why_an_operator_draws_none(tmp_path: Path) -> None:
    from runs.validate import output_candidates

    turns = tmp_path / "turns"
    _write(turns / "01" / "workspace" / "prompt.md", "Write out/notes.pdf and out/x.csv.")
    (turns / "01" / "outputs").mkdir(parents=True)
    (turns / "01" / "outputs" / "notes.pdf").write_bytes(b"%PDF-1.4\n")
    _write(turns / "01" / "outputs" / "x.csv", "id,amount\nA-01,1.00\nA-02,2.00\n")
    by_op, reasons = output_candidates(turns)
    assert {m.path for m in by_op["output_drop_row"]} == {"x.csv"}
    assert all(m.kind and m.site for op in by_op for m in by_op[op])
    assert reasons["output_break_formula"] == ("notes.pdf: a .pdf file: no operator reads it; "
                                               "x.csv: a CSV has no formula")
    assert "x.csv: the prompt states no exact column order" in reasons["output_swap_columns"]
    assert "output_change_cell" not in reasons


def test_a_rule_is_witnessed_only_by_a_counted_mutant_its_own_checks_caught() -> None:
    from runs.validate import MutantOutcome, Mutation, _witnessed

    m = Mutation("output_change_cell", 1, 0, "", "x.csv", "money by a cent", "amount")
    rule = (("output_change_cell",), ("totals",))
    caught = MutantOutcome(m, "x", "rejected", False, ("totals/row-2",))
    assert _witnessed([caught], rule)
    assert not _witnessed([MutantOutcome(m, "x", "rejected", False, ("columns",))], rule)
    assert not _witnessed([MutantOutcome(m, "x", "rejected", True, ("totals",))], rule)
    assert not _witnessed([caught], (("output_add_row",), ("totals",)))


def test_the_policy_quotes_why_a_rule_s_operator_drew_nothing() -> None:
    from desk.tasks import load_task
    from runs.policy import check_policy

    loaded = load_task("dunning-emails").loaded
    findings = check_policy(loaded, [], {"output_add_row": "emails/C1.txt: no id"})
    add = next(f for f in findings if "output_add_row" in f.rule.mutants)
    assert any("(0 drawn, 0 counted; not drawn: output_add_row: emails/C1.txt: no id)" in p
               for p in add.problems)


def test_a_decimal_quantity_slips_its_decimal_point(tmp_path: Path) -> None:
    out = _write(tmp_path / "forecast.csv", "item,quantity\nSKU-01,87.4\nSKU-02,75.1\n")
    plan, _ = file_edits(out)
    changes = [e for e in plan["output_change_cell"] if e.site == "quantity"]
    assert [e.kind for e in changes] == ["number ten times", "number ten times"]
    assert _rows(changes[0].apply(out.read_bytes()))[1] == ["SKU-01", "874.0"]


def test_a_rule_s_extra_mutants_aim_at_what_its_checks_read() -> None:
    from runs.validate import Mutation, _aimed

    hints = ["out/commentary.txt", "totals.csv", "total_actual", "total_budget"]

    def m(path: str, site: str, context: str = "") -> Mutation:
        return Mutation("output_change_cell", 1, 0, "", path, "k", site, context)

    assert _aimed(m("variance.csv", "budget"), hints) == 0  # another file
    assert _aimed(m("commentary.txt", "figure 3,765.62", "In total, May revenue was"),
                  hints) == 2
    assert _aimed(m("commentary.txt", "figure 68.15", "Data migration came in"), hints) == 1
    assert _aimed(m("x.txt", "figure $42,887.00"), [r"\$?\s?42,?887\.00(?!\d)"]) == 3


@pytest.mark.usefixtures("soffice")
def test_a_formula_pointed_elsewhere_that_computes_the_same_is_equivalent(
        tmp_path: Path) -> None:
    from runs.output_mutants import same_values

    def book(formula: str) -> bytes:
        wb = openpyxl.Workbook()
        ws = wb.active
        assert ws is not None
        ws.append(["Open"])
        ws.append([100.25])
        ws.append([50.5])
        ws["B1"] = formula
        path = tmp_path / "b.xlsx"
        wb.save(path)
        return path.read_bytes()

    # a range one row longer than its data, cut by a row: the same total
    assert same_values(book("=SUM(A2:A4)"), book("=SUM(A2:A3)"))
    assert not same_values(book("=SUM(A2:A3)"), book("=SUM(A2:A2)"))


def test_a_lookup_reads_the_wrong_column(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.append(["legacy", "new"])
    ws.append(["6100", "=VLOOKUP(A2,Map!$A$2:$B$9,2,FALSE)"])
    path = tmp_path / "m.xlsx"
    wb.save(path)
    plan, _ = file_edits(path)
    (look,) = _by_kind(plan["output_break_formula"])["lookup of the wrong column"]
    after = openpyxl.load_workbook(io.BytesIO(look.apply(path.read_bytes())))
    assert after.active is not None
    assert after.active["B2"].value == "=VLOOKUP(A2,Map!$A$2:$B$9,3,FALSE)"


def test_a_reference_to_deleted_cells_makes_an_error_cell(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Data"
    ws.append(["Open", "Label"])
    ws.append([100.25, "B9"])
    ws.append([50.5, "x"])
    summary = wb.create_sheet("Sum up")
    summary["A1"] = "=SUM(Data!$A$2:$A$3)"
    summary["A2"] = '=COUNTIF(Data!B2:B3,"B9")+LOG10(100)'
    summary["A3"] = "=PI()"
    path = tmp_path / "s.xlsx"
    wb.save(path)
    data = path.read_bytes()
    plan, _ = file_edits(path)
    gone = _by_kind(plan["output_break_formula"])["reference to a deleted cell (#REF!)"]
    assert {e.site for e in gone} == {"sheet2!A1", "sheet2!A2"}  # =PI() references no cell
    formulas = {}
    for e in gone:
        after = openpyxl.load_workbook(io.BytesIO(e.apply(data)))
        formulas[e.site] = after["Sum up"][e.site.split("!")[1]].value
    # the first reference goes, its sheet too; a string literal that looks like a cell and
    # a function's digits stay
    assert formulas == {"sheet2!A1": "=SUM(#REF!)",
                        "sheet2!A2": '=COUNTIF(#REF!,"B9")+LOG10(100)'}
    assert not same_content(path, data, gone[0].apply(data))
    require_soffice()
    from checks.workbook import convert_with_soffice

    src = tmp_path / "in" / "s.xlsx"
    src.parent.mkdir()
    src.write_bytes(gone[0].apply(data))
    calc = openpyxl.load_workbook(convert_with_soffice(src, tmp_path / "calc"), data_only=True)
    assert calc["Sum up"]["A1"].value == "#REF!"  # an error cell after recalculation

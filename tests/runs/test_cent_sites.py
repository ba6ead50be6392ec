"""The ``cent_up`` / ``cent_down`` mutants (class ``command``) move a money figure of every
command that carries one, not only those whose figure is called ``amount``.

They were drawn only for commands with an ``amount``: a bill's lines, an invoice's, a
purchase order's or a matched bill's unit prices, a journal entry's or an accrual's lines,
a payroll register's rows and a disposal's proceeds were never a cent off, so
``validate --mutants`` said nothing of whether a template catches an agent keying a bill,
an accrual or a payroll register a cent wrong.
"""

from __future__ import annotations

from datetime import date

import erp.commands as c
from runs import validate as v

D = date(2026, 5, 31)


_MONEY_NAMES = ("amount", "price", "proceeds", "gross", "net", "total", "sales", "tax_due",
                "withheld", "salvage", "cost")
SET_ASIDE = {"FileSalesTaxReturn": "its figures must be the books' own (return_does_not_tie):"
                                   " a cent off is refused and files nothing, as `drop` does"}


def _cents_fields(model: type) -> set[str]:
    """Fields of cents: typed ``Cents``, or whole numbers named as money."""
    return {f for f, info in model.model_fields.items()  # type: ignore[attr-defined]
            if "Cents" in str(info.annotation)
            or ("int" in str(info.annotation) and any(m in f for m in _MONEY_NAMES))}


def test_every_command_carrying_money_has_a_figure_the_mutant_moves() -> None:
    # one figure a command (its first: a capitalization's amount, not its salvage)
    moved_top = {"amount", "proceeds"}
    moved_line = {"amount", "unit_price", "debit", "gross"}
    for name, cls in c.COMMANDS.items():
        if name in v._NO_CODING or name in SET_ASIDE:
            continue
        money = _cents_fields(cls)
        lines = cls.model_fields.get("lines")
        line_money: set[str] = set()
        for arg in getattr(lines.annotation, "__args__", ()) if lines else ():
            if isinstance(arg, type) and hasattr(arg, "model_fields"):
                line_money |= _cents_fields(arg)
        if money or line_money:
            assert money & moved_top or line_money & moved_line, (name, money, line_money)


def test_the_money_names_find_what_is_not_typed_cents() -> None:
    assert _cents_fields(c.FileSalesTaxReturn) == {"gross_sales", "taxable_sales", "tax_due"}
    assert "life_months" not in _cents_fields(c.CapitalizeAsset)


def test_a_bill_line_moves() -> None:
    bill = c.EnterBill(vendor_id="V1", vendor_invoice_number="X-1", entry_date=D, due_on=D,
                       lines=(c.BillLineIn(description="a", amount=500),
                              c.BillLineIn(description="b", amount=7)))
    up = v.cent_shift(bill, 1)
    assert up is not None and up[1] == "lines[0].amount 500 -> 501"
    assert [x.amount for x in up[0].lines] == [501, 7]  # type: ignore[attr-defined]
    assert v.cent_shift(bill.model_copy(update={"lines": (c.BillLineIn(description="a",
                                                                       amount=1),)}), -1) is None


def test_a_journal_entry_stays_balanced() -> None:
    je = c.PostJournalEntry(entry_date=D, memo="m", lines=(
        c.JournalLineIn(account="6000", debit=300), c.JournalLineIn(account="6100", debit=200),
        c.JournalLineIn(account="2100", credit=500)))
    down = v.cent_shift(je, -1)
    assert down is not None
    lines = down[0].lines  # type: ignore[attr-defined]
    assert sum(x.debit or 0 for x in lines) == sum(x.credit or 0 for x in lines) == 499
    assert down[1] == "lines[0].debit 300 -> 299, lines[2].credit 500 -> 499"


def test_a_payroll_register_still_ties() -> None:
    reg = c.PostPayroll.model_construct(
        lines=(c.PayrollLineIn(employee_id="E1", name="A", gross=1000, withheld=200,
                               employer_taxes=80, net=800),),
        gross_total=1000, net_total=800)
    up = v.cent_shift(reg, 1)
    assert up is not None
    row = up[0].lines[0]  # type: ignore[attr-defined]
    assert (row.gross, row.net, row.gross - row.withheld) == (1001, 801, 801)
    assert (up[0].gross_total, up[0].net_total) == (1001, 801)  # type: ignore[attr-defined]


def test_proceeds_and_a_statement_line_of_either_sign_move() -> None:
    sale = c.DisposeAsset.model_construct(proceeds=250_000)
    assert v.cent_shift(sale, 1) is not None and v.cent_shift(sale, 1)[1] == (  # type: ignore[index]
        "proceeds 250000 -> 250001")
    out = c.ImportStatementLines.model_construct(lines=(c.StatementLineIn.model_construct(
        amount=-100),))
    assert v.cent_shift(out, 1)[1] == "lines[0].amount -100 -> -99"  # type: ignore[index]
    assert v.cent_shift(c.ApproveBill(bill_id="B1"), 1) is None

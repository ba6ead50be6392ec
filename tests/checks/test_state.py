"""State checks (checks/state.py): each type passes and fails on small books, with the
failure's detail; the strict validator's refusals name their path."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from checks.state import read_only, validate_select
from erp import commands as c
from erp.ledger import Ledger
from tests.checks.helpers import run_one, spec_problems
from tests.erp.helpers import CLERK, SYS, set_up_company

START, END = date(2026, 3, 2), date(2026, 3, 13)


def at(day: int) -> date:
    """A date of March 2026."""
    return date(2026, 3, day)


def build(ledger: Ledger) -> None:
    """Three invoices (C1: 100.00 paid by R1, 50.00 open; C2: 70.00 open), receipt R2 of C2
    (30.00, matched to line L2) left unapplied since the 3rd, R3 (20.00, no payer) of the 5th.
    """
    set_up_company(ledger)
    for inv, cust, amount in (("INV-1", "C1", "100.00"), ("INV-2", "C1", "50.00"),
                              ("INV-3", "C2", "70.00")):
        ledger.execute(c.IssueInvoice(invoice_id=inv, customer_id=cust, entry_date=at(2),
                                      lines=(c.InvoiceLineIn(description="Work",
                                                             unit_price=amount),)), **SYS)
    feed = {**SYS, "actor": "system:bank-feed", "business_date": at(3)}
    ledger.execute(c.ImportStatementLines(bank_account_id="B-OPER", lines=(
        c.StatementLineIn(line_id="L1", entry_date=at(3), amount="100.00"),
        c.StatementLineIn(line_id="L2", entry_date=at(3), amount="30.00"))), **feed)
    ledger.execute(c.RecordReceipt(receipt_id="R1", customer_id="C1", bank_account_id="B-OPER",
                                   entry_date=at(3), amount="100.00"), **feed)
    ledger.execute(c.RecordReceipt(receipt_id="R2", customer_id="C2", bank_account_id="B-OPER",
                                   entry_date=at(3), amount="30.00"), **feed)
    ledger.execute(c.MatchStatementLine(line_id="L2", targets=(
        c.MatchRef(kind="receipt", doc_id="R2"),)), **feed)
    ledger.execute(c.ApplyReceipt(receipt_id="R1", invoice_id="INV-1", amount="100.00",
                                  entry_date=at(4)), **{**CLERK, "business_date": at(4)})
    ledger.execute(c.RecordReceipt(receipt_id="R3", bank_account_id="B-OPER", entry_date=at(5),
                                   amount="20.00"), **{**feed, "business_date": at(5)})


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    """The small books on SQLite, built once for the module (the checks only read)."""
    led = Ledger.open(tmp_path_factory.mktemp("books") / "books.db", create=True)
    build(led)
    yield led
    led.close()


def ctx_of(ledger: Ledger, **kw: Any) -> CheckContext:
    """A context over the books, the scenario running from START to END."""
    return CheckContext(store=ledger.store, **{"start": START, "end": END, **kw})



check = run_one


problems = spec_problems


# --- account_balance ------------------------------------------------------------------------


def test_account_balance_passes_within_tolerance_and_as_of(books: Ledger) -> None:
    ctx = ctx_of(books)
    ok = check({"type": "account_balance", "account": "1200", "expected": "120.00"}, ctx)
    assert ok.passed, ok.detail
    assert ok.metrics["balance_cents"] == 12000
    assert "1200" in ok.detail and "120.00 (debit-positive)" in ok.detail
    near = check({"type": "account_balance", "account": "1200", "expected": "120.40",
                  "tolerance": "0.50"}, ctx)
    assert near.passed
    before = check({"type": "account_balance", "account": "1200", "expected": "220.00",
                    "as_of": "2026-03-03"}, ctx)
    assert before.passed, before.detail  # R1 applied on the 4th
    credit = check({"type": "account_balance", "account": "2150", "expected": "-50.00"}, ctx)
    assert credit.passed, credit.detail  # unapplied cash: a credit balance is negative


def test_account_balance_fails_with_the_difference(books: Ledger) -> None:
    r = check({"type": "account_balance", "account": "1200", "expected": "119.50",
               "tolerance": "0.40"}, ctx_of(books))
    assert not r.passed
    assert "as of 2026-03-13: 120.00 (debit-positive), expected 119.50 ± 0.40; off by 0.50" \
        in r.detail
    assert r.metrics["difference_cents"] == 50
    missing = check({"type": "account_balance", "account": "9999", "expected": "0.00"},
                    ctx_of(books))
    assert not missing.passed and "9999 is not in the chart" in missing.detail


def test_account_balance_per_date_uses_the_context_date_and_position(books: Ledger) -> None:
    last_invoice = list(books.store.read(realm="erp", types=["invoice_issued"]))[-1].position
    r = check({"type": "account_balance", "account": "1200", "expected": "220.00"},
              ctx_of(books, as_of=at(2), position=last_invoice))
    assert r.passed, r.detail
    assert "at log position" in r.detail


def test_account_balance_spec_is_strict() -> None:
    found = problems({"type": "account_balance", "account": "1200", "expected": 12.5,
                      "tolerance": "1.01", "colour": "red"})
    assert "expected money as a decimal string" in found["checks[0].expected"]
    assert "between 0.00 and 1.00" in found["checks[0].tolerance"]
    assert "unknown field for account_balance" in found["checks[0].colour"]
    assert "missing" in problems({"type": "account_balance", "expected": "1.00"})[
        "checks[0].account"]
    assert "more than two decimal places" in problems(
        {"type": "account_balance", "account": "1", "expected": "1.001"})["checks[0].expected"]
    assert "checks[0].tolerance" in problems({"type": "account_balance", "account": "1",
                                              "expected": "1.00", "tolerance": "-0.01"})


# --- document_state -------------------------------------------------------------------------


def test_document_state_passes(books: Ledger) -> None:
    ctx = ctx_of(books)
    r = check({"type": "document_state", "kind": "invoice", "id": "INV-1", "status": "paid"},
              ctx)
    assert r.passed, r.detail
    open_ = check({"type": "document_state", "kind": "invoice", "party": "C2",
                   "status": ["open", "partially_paid"]}, ctx)
    assert open_.passed and "all 1 invoice open or partially_paid" in open_.detail
    earlier = check({"type": "document_state", "kind": "invoice", "id": "INV-1",
                     "status": "open", "as_of": "2026-03-03"}, ctx)
    assert earlier.passed, earlier.detail
    none = check({"type": "document_state", "kind": "bill", "status": "paid",
                  "allow_empty": True}, ctx)
    assert none.passed


def test_document_state_fails_naming_the_documents(books: Ledger) -> None:
    ctx = ctx_of(books)
    r = check({"type": "document_state", "kind": "invoice", "party": "C1", "status": "paid"},
              ctx)
    assert not r.passed
    assert "1 of 2 invoice(s) not paid" in r.detail
    assert "INV-2 (open, open 50.00 of 50.00, C1)" in r.detail
    assert "INV-1" not in r.detail
    gone = check({"type": "document_state", "kind": "invoice", "ids": ["INV-1", "INV-9"],
                  "status": "paid"}, ctx)
    assert not gone.passed and "INV-9 (no such invoice)" in gone.detail
    empty = check({"type": "document_state", "kind": "bill", "status": "paid"}, ctx)
    assert not empty.passed and "no document found" in empty.detail


def test_document_state_spec_is_strict() -> None:
    typo = problems({"type": "document_state", "kind": "invoice", "status": "payed"})
    assert "Input should be 'open'" in typo["checks[0].status[0]"]
    wrong_kind = problems({"type": "document_state", "kind": "invoice", "status": "approved"})
    assert "no invoice is ever 'approved'" in wrong_kind["checks[0].status"]
    assert "checks[0].kind" in problems({"type": "document_state", "kind": "invoise",
                                         "status": "open"})
    both = problems({"type": "document_state", "kind": "bill", "id": "B1", "party": "V1",
                     "status": "paid"})
    assert "without id/ids" in both["checks[0]"]


# --- no_unapplied_receipts ------------------------------------------------------------------


def test_no_unapplied_receipts_fails_with_age_amount_and_customer(books: Ledger) -> None:
    r = check({"type": "no_unapplied_receipts", "older_than_days": 2, "as_of": "2026-03-06"},
              ctx_of(books))
    assert not r.passed
    assert ("1 receipt unapplied for more than 2 days as of 2026-03-06: R2 (line L2, "
            "2026-03-03, 3 days, 30.00 open of 30.00, customer C2)") in r.detail
    assert "R3" not in r.detail  # one day old
    late = check({"type": "no_unapplied_receipts", "older_than_days": 0}, ctx_of(books))
    assert "R3 (2026-03-05, 8 days, 20.00 open of 20.00, customer (unknown))" in late.detail


def test_no_unapplied_receipts_passes_and_honours_the_exemption_list(books: Ledger,
                                                                     tmp_path: Path) -> None:
    ok = check({"type": "no_unapplied_receipts", "older_than_days": 3, "as_of": "2026-03-06"},
               ctx_of(books))
    assert ok.passed, ok.detail
    (tmp_path / "out").mkdir()
    listed = tmp_path / "out" / "unapplied.csv"
    spec = {"type": "no_unapplied_receipts", "older_than_days": 0,
            "except_listed_in": "out/unapplied.csv"}
    listed.write_text("line_id,reason\nL2,customer paid twice\nR3,payer unknown\n")
    r = check(spec, ctx_of(books, workspace=tmp_path))
    assert r.passed, r.detail
    assert "2 listed in out/unapplied.csv exempt" in r.detail
    listed.write_text("line_id,reason\nL2,\nR3,payer unknown\n")  # no reason: no exemption
    r = check(spec, ctx_of(books, workspace=tmp_path))
    assert not r.passed and "R2 (line L2" in r.detail and "R3" not in r.detail
    listed.unlink()
    r = check(spec, ctx_of(books, workspace=tmp_path))
    assert not r.passed and "out/unapplied.csv does not exist" in r.detail
    r = check(spec, ctx_of(books))
    assert not r.passed and "no workspace" in r.detail


def test_no_unapplied_receipts_spec_is_strict() -> None:
    found = problems({"type": "no_unapplied_receipts", "older_than_days": -1,
                      "except_listed_in": "../unapplied.csv"})
    assert "greater than or equal to 0" in found["checks[0].older_than_days"]
    assert "inside the workspace" in found["checks[0].except_listed_in"]
    assert "checks[0].older_than_days" in problems({"type": "no_unapplied_receipts"})


# --- open_items_count -----------------------------------------------------------------------


def test_open_items_count(books: Ledger) -> None:
    ctx = ctx_of(books)
    ok = check({"type": "open_items_count", "subledger": "ar", "party": "C2", "equals": 1},
               ctx)
    assert ok.passed, ok.detail
    r = check({"type": "open_items_count", "subledger": "ar", "max": 1}, ctx)
    assert not r.passed
    assert "2 open ar item(s) as of 2026-03-13, expected at most 1" in r.detail
    assert "invoice INV-2 (C1, 2026-03-02, due 2026-04-01, 50.00)" in r.detail
    aged = check({"type": "open_items_count", "subledger": "unapplied_cash",
                  "older_than_days": 8, "max": 0}, ctx)
    assert not aged.passed and "receipt R2" in aged.detail and "R3" not in aged.detail
    overdue = check({"type": "open_items_count", "subledger": "ar", "past_due_days": 0,
                     "max": 0}, ctx)
    assert overdue.passed  # nothing is due before April


def test_open_items_count_spec_is_strict() -> None:
    assert "give max, min or equals" in problems(
        {"type": "open_items_count", "subledger": "ar"})["checks[0]"]
    assert "checks[0].subledger" in problems({"type": "open_items_count", "subledger": "gl",
                                              "max": 1})


# --- sql_assert (SQLite and PostgreSQL) -----------------------------------------------------


def test_sql_assert_on_both_backends(ledger: Ledger) -> None:
    build(ledger)
    ctx = ctx_of(ledger)
    ok = check({"type": "sql_assert", "query": "SELECT doc_id FROM documents WHERE kind = "
                "'invoice' AND status = 'paid' AND doc_id <> 'INV-1'"}, ctx)
    assert ok.passed and ok.detail == "no rows"
    r = check({"type": "sql_assert", "query": "SELECT doc_id, open_amount FROM documents "
               "WHERE kind = 'invoice' AND status = 'open' ORDER BY doc_id;"}, ctx)
    assert not r.passed
    assert r.detail == ("2 rows, expected none: {doc_id='INV-2', open_amount=5000}; "
                        "{doc_id='INV-3', open_amount=7000}")
    total = {"type": "sql_assert", "query": "SELECT SUM(amount) AS ar FROM gl_lines WHERE "
             "account = '1200' AND entry_date <= :as_of"}
    assert check({**total, "expect": {"scalar": 12000}}, ctx).passed
    assert check({**total, "expect": {"scalar": "22000"}}, ctx_of(ledger, as_of=at(3))).passed
    wrong = check({**total, "expect": {"scalar": 1}}, ctx)
    assert not wrong.passed and wrong.detail == "ar = 12000, expected 1"
    clerk = {"type": "sql_assert", "query": "SELECT position, actor FROM audit_trail WHERE "
             "actor LIKE 'agent:%' AND position <= :position"}
    assert check({**clerk, "expect": {"count": 1}}, ctx).passed
    assert check({**clerk, "expect": "rows"}, ctx).passed
    none = check({**clerk, "expect": "rows"}, ctx_of(ledger, position=5))
    assert not none.passed and none.detail == "no rows, expected at least one"
    like = check({"type": "sql_assert", "query": "SELECT doc_id FROM documents WHERE doc_id "
                  "LIKE 'INV-%' AND status = 'paid'", "expect": {"count": 1}}, ctx)
    assert like.passed, like.detail  # a '%' without parameters, on PostgreSQL too
    many = check({"type": "sql_assert", "query": "SELECT doc_id FROM documents",
                  "expect": {"count": 2}}, ctx)
    assert not many.passed and "(first 5 shown)" in many.detail


def test_read_only_refuses_writes_on_both_backends(store: Any) -> None:
    with pytest.raises(Exception, match=r"(?i)read.?only"), read_only(store) as conn:
        conn.exec_driver_sql("INSERT INTO store_meta (key, value) VALUES ('x', 'y')")
    with read_only(store) as conn:  # the connection is usable again afterwards
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM store_meta").scalar() == 1


@pytest.mark.parametrize(("query", "says"), [
    ("DELETE FROM gl_lines", "must start with SELECT or WITH"),
    ("SELECT * FROM events", "the log (events) may not be read"),
    ("SELECT 1 FROM gl_lines; SELECT 2 FROM gl_lines", "one statement only"),
    ("SELECT * INTO copy FROM gl_lines", "'into' is not allowed"),
    ("SELECT name FROM sqlite_master", "'sqlite_master' is not allowed"),
    ("SELECT * FROM store_meta", "'store_meta' is not allowed"),
    ("SELECT * FROM ledger_secrets", "FROM ledger_secrets: the query may read only"),
    ("SELECT * FROM gl_lines WHERE memo = 'x", "unterminated"),
    ("SELECT $$x$$ FROM gl_lines", "dollar quoting"),
    ("SELECT amount::text FROM gl_lines", "':' is not allowed"),
    ("WITH x AS (DELETE FROM gl_lines RETURNING *) SELECT * FROM x", "'delete' is not allowed"),
    ("  -- nothing\n ;", "the query is empty"),
])
def test_sql_assert_refuses_what_is_not_one_select(query: str, says: str) -> None:
    found = problems({"type": "sql_assert", "query": query})
    assert says in found["checks[0].query"], found


def test_sql_assert_accepts_selects_with_literals_comments_and_ctes() -> None:
    for query in ("SELECT 'events; drop' AS label FROM gl_lines -- a comment; here\n",
                  "WITH t AS (SELECT account, SUM(amount) AS s FROM gl_lines GROUP BY account) "
                  "SELECT * FROM t WHERE s <> 0",
                  "(SELECT doc_id FROM documents) /* note */",
                  'SELECT d."doc_id" FROM documents d JOIN doc_history h ON h.doc_id = d.doc_id'):
        assert validate_select(query)
    assert "expected 'no_rows', 'rows'" in problems(
        {"type": "sql_assert", "query": "SELECT 1 FROM gl_lines", "expect": "some"})[
        "checks[0].expect"]
    assert "float" in problems({"type": "sql_assert", "query": "SELECT 1 FROM gl_lines",
                                "expect": {"scalar": 1.5}})["checks[0].expect"]


# --- period_closed --------------------------------------------------------------------------


def test_period_closed(tmp_path: Path) -> None:
    led = Ledger.open(tmp_path / "books.db", create=True)
    try:
        set_up_company(led)
        before = led.position
        led.execute(c.ClosePeriod(period="2026-02"), actor="human:controller", role="controller",
                    business_date=at(2))
        ok = check({"type": "period_closed", "period": "2026-02"}, ctx_of(led))
        assert ok.passed
        assert "period 2026-02 (2026-02-01..2026-02-28) is closed now: closed by " \
               "human:controller (controller) on 2026-03-02" in ok.detail
        assert check({"type": "period_closed", "on": "2026-02-14"}, ctx_of(led)).passed
        r = check({"type": "period_closed"}, ctx_of(led))  # the end's month: March
        assert not r.passed and r.detail == "period 2026-03 (2026-03-01..2026-03-31) is open now"
        then = check({"type": "period_closed", "period": "2026-02"}, ctx_of(led, position=before))
        assert not then.passed and "is open at log position" in then.detail
        gone = check({"type": "period_closed", "period": "2027-01"}, ctx_of(led))
        assert not gone.passed and "no such accounting period" in gone.detail
    finally:
        led.close()
    assert "give period or on" in problems({"type": "period_closed", "period": "2026-02",
                                            "on": "2026-02-01"})["checks[0]"]

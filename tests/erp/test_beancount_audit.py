"""The beancount export of books holding whatever the engine accepts: account codes that are
no beancount names or that collide once joined with their titles, accounts posted to before
the chart opens them or never opened, accounting dates at the ends of the calendar, text
with quotes, backslashes, newlines and NUL, amounts of one cent and the largest the books
take, an empty store. Each ledger is checked by the real ``bean-check`` and its balances,
per account, per party and per accounting date, agree to the cent with erpsim's."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from beancount import loader
from beancount.core import account as bc_account
from beancount.core import data
from hypothesis import given, settings
from hypothesis import strategies as st

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.beancount import (
    COMPANY_ACCOUNT_TYPES,
    ROOTS,
    UNCHARTED_TYPE,
    Exported,
    account_name,
    export_beancount,
)
from erp.charts import chart_commands
from erp.events import CompanyAccounts
from erp.handlers import HANDLERS, Context
from erp.ledger import Ledger, Submission
from erp.money import MAX_CENTS
from erp.store import EventStore, NewEvent

BEAN_CHECK = Path(sys.executable).with_name("bean-check")
DAY = date(2026, 3, 2)
SYS: dict[str, Any] = {"actor": "system:setup", "role": "system", "business_date": DAY}
CONTROLLER: dict[str, Any] = {"actor": "human:controller", "role": "controller",
                              "business_date": DAY}

NAME = 'Q"uote\\back\\n\tTab\nNL\r; colon: ünï € \x00 end' + "x" * 150
"""A company name of every character beancount's strings escape or could choke on."""
ACTOR = 'agent:"weird"\nactor\\ é\t;'

ODD_CODES: tuple[tuple[str, str], ...] = (
    ("abc", "lower case"), ("1000.10", "dotted"), ("-5", "leading dash"), ("5-", "trailing"),
    ("A-1", "Upper"), ("a-1", "Upper"), ("x.y", "dot"), ("x-y", "dot"), ("X--x-Dy", "dot"),
    ("7000-A", "B"), ("7000", "A B"), ("7000A", "B"), ("9", "Ünïcödé only ñ"),
    ("Z", "x" * 200), ("0", '"quoted" \\ name\n'), (".", "..."), ("ZZZZZZZZZZZZZZZZ", "—"),
)
"""Codes the books accept (letters, digits, ``.`` and ``-``) that are no beancount name
component, or that collide with another account's name when joined with their titles
("1000-A" + "B" and "1000" + "A B" were both ``1000-A-B``)."""


def build_adversarial_books(ledger: Ledger) -> None:
    """Books of odd codes and titles, parties differing only in case, text of quotes and
    newlines, one cent and the largest amount, a reversal, and postings on the first and
    the last day a date can name."""
    cmds: list[c.Command] = [c.SetUpCompany(name=NAME, currency="EUR")]
    cmds += chart_commands("standard-services")
    cmds += [c.OpenAccount(code=code, name=title, account_type="expense")
             for code, title in ODD_CODES]
    cmds += [c.OpenPeriod(period=p) for p in ("2026-02", "2026-03", "2026-04")]
    cmds += [c.OpenPeriod(period="last", start=date(9999, 12, 1), end=date(9999, 12, 31)),
             c.OpenPeriod(period="first", start=date(1, 1, 1), end=date(1, 1, 31)),
             c.OpenBankAccount(bank_account_id="B-1", name="Op", number="1", gl_account="1000",
                               entry_date=DAY, opening_balance="0.01"),
             c.RegisterCustomer(customer_id="C:1/a.b", name='Ü "Ac\\me"\nX', credit_limit=None),
             c.RegisterCustomer(customer_id="c:1/a.b", name="Ü \"Ac\\me\"\nX"),
             c.RegisterVendor(vendor_id="V.1", name="Vendor\t;:")]
    ledger.execute_batch([Submission(cmd, **SYS) for cmd in cmds])
    lines = []
    for code, _ in ODD_CODES:
        lines += [c.JournalLineIn(account=code, debit=1, party="C:1/a.b", memo='m"\n'),
                  c.JournalLineIn(account="3000", credit=1, party="c:1/a.b")]
    ledger.execute(c.PostJournalEntry(entry_id="JE-1", entry_date=DAY, memo='m"\\\n',
                                      lines=tuple(lines)),
                   actor=ACTOR, role="controller", business_date=DAY)
    ledger.execute(c.PostJournalEntry(entry_id="JE-2", entry_date=DAY, memo="again",
                                      lines=tuple(lines)), **CONTROLLER)
    ledger.execute(c.ReverseJournalEntry(entry_id="JE-1", entry_date=DAY), **CONTROLLER)
    for n in range(3):  # an account's balance beyond 15 whole digits
        ledger.execute(c.PostJournalEntry(entry_id=f"JE-MAX-{n}", entry_date=DAY, memo="max",
                                          lines=(c.JournalLineIn(account="6000", debit=MAX_CENTS),
                                                 c.JournalLineIn(account="3000",
                                                                 credit=MAX_CENTS))),
                       **CONTROLLER)
    ledger.execute(c.IssueInvoice(invoice_id="INV/1", customer_id="C:1/a.b", entry_date=DAY,
                                  lines=(c.InvoiceLineIn(description='d"\\\n', unit_price=1),),
                                  reference='ref "q"\n\\'), **CONTROLLER)
    ledger.execute(c.EnterBill(bill_id="B:1", vendor_id="V.1", vendor_invoice_number='n"\\\n',
                               entry_date=DAY,
                               lines=(c.BillLineIn(description="é", amount=MAX_CENTS),)),
                   **CONTROLLER)
    for day in (date(9999, 12, 31), date(1, 1, 1)):
        ledger.execute(c.PostJournalEntry(entry_date=day, memo="edge", lines=(
            c.JournalLineIn(account="abc", debit=1, party="C:1/a.b"),
            c.JournalLineIn(account="3000", credit=1))), **CONTROLLER)


# --- checking a ledger ------------------------------------------------------------------

def _exported(store: EventStore, tmp_path: Path) -> tuple[Exported, list[Any], dict[str, Any]]:
    """Export, run the real bean-check on the file, and load it with beancount."""
    exported = export_beancount(store)
    path = tmp_path / "books.beancount"
    path.write_text(exported.text, encoding="utf-8")
    assert BEAN_CHECK.is_file(), f"bean-check missing beside {sys.executable} (make test)"
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    entries, errors, options = loader.load_file(str(path))
    assert errors == []
    return exported, entries, options


def _cents(number: Decimal) -> int:
    cents = int(number * 100)
    assert Decimal(cents) == number * 100, number
    return cents


def _theirs(entries: list[Any]) -> dict[str, dict[Any, int]]:
    """beancount's sums of the postings, in cents: per account code, per (code, party) and
    per (accounting date, code); the code read from each ``open``'s metadata."""
    codes = {e.account: e.meta["code"] for e in entries if isinstance(e, data.Open)}
    sums: dict[str, dict[Any, int]] = {"account": defaultdict(int), "party": defaultdict(int),
                                       "day": defaultdict(int)}
    for entry in entries:
        if not isinstance(entry, data.Transaction):
            continue
        for posting in entry.postings:
            assert posting.units is not None and posting.units.number is not None
            code, cents = codes[posting.account], _cents(posting.units.number)
            sums["account"][code] += cents
            sums["day"][entry.date.isoformat(), code] += cents
            party = (posting.meta or {}).get("party")
            if party:
                sums["party"][code, party] += cents
    return {k: {key: n for key, n in v.items() if n} for k, v in sums.items()}


def _ours(store: EventStore) -> dict[str, dict[Any, int]]:
    """erpsim's: the trial balance per account, and the GL per party and per date."""
    accounts = {r.account: r.debit - r.credit for r in q.trial_balance(store)}
    with store.engine.connect() as conn:
        parties = conn.exec_driver_sql("SELECT account, party, SUM(amount) FROM gl_lines WHERE "
                                       "party IS NOT NULL GROUP BY account, party").all()
        days = conn.exec_driver_sql("SELECT entry_date, account, SUM(amount) FROM gl_lines "
                                    "GROUP BY entry_date, account").all()
    return {"account": accounts,
            "party": {(a, p): int(n) for a, p, n in parties if int(n)},
            "day": {(d, a): int(n) for d, a, n in days if int(n)}}


def _agrees(store: EventStore, tmp_path: Path) -> tuple[Exported, list[Any], dict[str, Any]]:
    exported, entries, options = _exported(store, tmp_path)
    assert _theirs(entries) == _ours(store)
    assert {a: n for a, n in exported.balances.items() if n} == _ours(store)["account"]
    return exported, entries, options


# --- account names ----------------------------------------------------------------------

def _code_of(name: str) -> str:
    """The erpsim code an account name was made from (the inverse of ``account_name``)."""
    component = name.split(":", 1)[1]
    if not component.startswith("X--"):
        return component.split("-", 1)[0]
    escaped = component[3:].split("--", 1)[0]
    return re.sub(r"-([DH])", lambda m: {"D": ".", "H": "-"}[m.group(1)], escaped)


CODES = st.from_regex(r"[A-Za-z0-9.-]{1,16}", fullmatch=True)
"""Every code ``erp.commands.Code`` accepts."""


@settings(max_examples=300)
@given(st.lists(st.tuples(CODES, st.text(max_size=200),
                          st.sampled_from(sorted(ROOTS))), max_size=30,
                unique_by=lambda x: x[0]))
def test_every_code_the_books_accept_is_a_valid_beancount_account_of_its_own(
        accounts: list[tuple[str, str, str]]) -> None:
    names = {code: account_name(code, title, kind) for code, title, kind in accounts}
    for code, _title, kind in accounts:
        assert bc_account.is_valid(names[code]), (code, names[code])
        assert names[code].startswith(ROOTS[kind] + ":")
        assert _code_of(names[code]) == code, names[code]
    assert len(set(names.values())) == len(names)


def test_codes_that_were_names_already_keep_their_names() -> None:
    assert account_name("1200", "Accounts receivable", "asset") == (
        "Assets:1200-Accounts-receivable")
    assert account_name("3000", "Owner's equity", "equity") == "Equity:3000-Owner-s-equity"
    assert account_name("1000.10", "Petty cash", "asset") == "Assets:X--1000-D10--Petty-cash"
    assert account_name("a-1", "", "expense") == "Expenses:X--a-H1"


def test_every_company_posting_account_has_the_type_of_its_role() -> None:
    assert set(COMPANY_ACCOUNT_TYPES) == set(CompanyAccounts.model_fields)
    assert set(COMPANY_ACCOUNT_TYPES.values()) | {UNCHARTED_TYPE} <= set(ROOTS)


# --- whole books --------------------------------------------------------------------------

def test_adversarial_books_export_to_a_ledger_bean_check_accepts(ledger: Ledger,
                                                                 tmp_path: Path) -> None:
    build_adversarial_books(ledger)
    exported, entries, options = _agrees(ledger.store, tmp_path)
    opened = {e.meta["code"]: e for e in entries if isinstance(e, data.Open)}
    chart = q.chart(ledger.store)
    assert set(opened) == set(chart)
    assert {code: o.meta["name"] for code, o in opened.items()} == {
        code: a.name for code, a in chart.items()}
    assert len({o.account for o in opened.values()}) == len(opened)
    assert options["title"] == NAME and options["operating_currency"] == ["EUR"]
    actors = {e.meta["actor"] for e in entries if isinstance(e, data.Transaction)}
    assert ACTOR in actors
    # the last posting is dated 9999-12-31: its assertions hold before it, and say so
    assert exported.last_date == date(9999, 12, 31)
    assert exported.asserted == "before 9999-12-31 (no day follows it)"
    assert "; the trial balance before 9999-12-31 (no day follows it), to the cent" in (
        exported.text)
    balances = {e.account: e.amount.number for e in entries if isinstance(e, data.Balance)}
    abc = opened["abc"].account
    # JE-2's cent and 0001-01-01's; the cent of 9999-12-31 comes after the assertion
    assert balances[abc] == Decimal("0.02")
    assert exported.balances["abc"] == 3


def _append_as_decided(ledger: Ledger, cmds: list[c.Command]) -> None:
    """Each command's events as its own handler decides them, appended to the log without
    the chart rule ``handle`` applies since (a log an earlier erpsim wrote), then every read
    table rebuilt from that log."""
    ctx = Context("system:setup", "system", DAY)
    for cmd in cmds:
        ledger.refresh()
        events = HANDLERS[type(cmd)](cmd, ledger.books, ctx)
        ledger.store.append([NewEvent(stream=e.stream, type=e.type,
                                      payload=ev.encode_event(e).decode(),
                                      business_date=DAY.isoformat(), actor=ctx.actor,
                                      command=type(cmd).__name__) for e in events])
    ledger.refresh()
    ledger.rebuild()


def test_an_account_posted_to_before_the_chart_opens_it_or_never(ledger: Ledger,
                                                                 tmp_path: Path) -> None:
    # The books refuse such postings now (test_invariants_master); logs written before
    # hold them and still export.
    _append_as_decided(ledger, [
        c.SetUpCompany(name="Uncharted Co", accounts=CompanyAccounts(unapplied_cash="2999")),
        c.OpenAccount(code="4000", name="Service revenue", account_type="revenue"),
        c.OpenAccount(code="1000", name="Bank", account_type="asset", control="bank"),
        c.OpenPeriod(period="2026-03"),
        c.OpenBankAccount(bank_account_id="B", name="Op", number="1", gl_account="1000",
                          entry_date=DAY),
        c.RegisterCustomer(customer_id="C1", name="Acme", credit_limit=None),
        c.IssueInvoice(invoice_id="I1", customer_id="C1", entry_date=DAY,
                       lines=(c.InvoiceLineIn(description="x", unit_price="10.00"),)),
        c.RecordReceipt(receipt_id="R1", customer_id="C1", bank_account_id="B",
                        entry_date=DAY, amount="4.00"),
        c.OpenAccount(code="1200", name="Accounts receivable", account_type="asset",
                      control="ar"),
    ])
    assert ledger.verify().ok
    exported, _, _ = _agrees(ledger.store, tmp_path)
    assert exported.accounts["1200"] == "Assets:1200-Accounts-receivable"
    assert exported.accounts["2999"] == "Liabilities:2999-Not-in-the-chart"
    assert "2999" not in q.chart(ledger.store)


def test_postings_on_the_day_before_the_last_date_are_asserted_on_it(ledger: Ledger,
                                                                    tmp_path: Path) -> None:
    ledger.execute_batch([Submission(cmd, **SYS) for cmd in [
        c.SetUpCompany(name="Edge Co"), *chart_commands("standard-services"),
        c.OpenPeriod(period="last", start=date(9999, 12, 1), end=date(9999, 12, 31))]])
    ledger.execute(c.PostJournalEntry(entry_date=date(9999, 12, 30), memo="edge", lines=(
        c.JournalLineIn(account="6000", debit=1), c.JournalLineIn(account="3000", credit=1))),
        **CONTROLLER)
    exported, entries, _ = _agrees(ledger.store, tmp_path)
    assert exported.asserted == "after 9999-12-30"
    balances = {e.account: (e.date, e.amount.number) for e in entries
                if isinstance(e, data.Balance)}
    assert balances[exported.accounts["6000"]] == (date(9999, 12, 31), Decimal("0.01"))


def test_an_empty_store_and_one_of_opening_balances_only(store: EventStore,
                                                        tmp_path: Path) -> None:
    exported, entries, _ = _agrees(store, tmp_path)
    assert (exported.transactions, exported.accounts, exported.asserted) == (0, {}, "")
    assert entries == []
    led = Ledger(store)
    led.execute_batch([Submission(cmd, **SYS) for cmd in [
        c.SetUpCompany(name="Opening Co"), *chart_commands("standard-services"),
        c.OpenPeriod(period="2026-03"),
        c.PostOpeningBalances(entry_date=DAY, lines=(
            c.JournalLineIn(account="1500", debit=1), c.JournalLineIn(account="3900",
                                                                      credit=1)))]])
    exported, _, _ = _agrees(store, tmp_path)
    assert exported.transactions == 1 and exported.asserted == "after 2026-03-02"

"""The company's own processes (actors ``system:*``), run by the engine.

- ``set_up_books``: the company, its chart, periods, bank account, customers,
  vendors and opening balances, before the first day.
- order intake and shipping: customers' orders are shipped at ``COMPANY``; with
  auto-invoicing each shipped order is invoiced at once, without it the day's
  shipped orders reach the inbox as a CSV for the clerk to invoice.
- dispatch: every invoice in the books that the customer has not been sent is sent
  (the customer's own books receive it) at ``COMPANY``.
- the bank feed: the day's bank lines are imported into the books at ``BANK_FEED``;
  with auto-receipts, each deposit becomes an unapplied receipt matched to its line,
  its customer named when the payer's name is exactly a customer's.
- the controller approves pending vendor bank-detail changes at ``DAY_END``.
- month-end statements: on the month's last business day each customer with open
  invoices is sent a statement of them.

Which of these run is the scenario's choice (``Options``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import date, timedelta

from pydantic import BaseModel, ConfigDict

from erp import commands as c
from erp.charts import chart_commands
from erp.events import BankDetails, CompanyAccounts, Policies
from erp.money import format_cents
from sim.calendar import BusinessCalendar
from sim.documents import deliver, render_csv
from sim.engine import Engine, Phase
from sim.world_events import (
    Allocation,
    BankLinePosted,
    InvoiceReceived,
    OrderLine,
    OrderPlaced,
    OrderShipped,
    StatementSent,
)

SETUP = "system:setup"
BANK_ACCOUNT = "B-OPER"
BANK_GL = "1000"


class Options(BaseModel):
    """Which company processes run (a scenario's ``company.automation``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    order_intake: bool = True
    auto_invoicing: bool = True
    dispatch_invoices: bool = True
    bank_feed: bool = True
    auto_receipts: bool = True
    controller_approves_bank_changes: bool = True
    month_end_statements: bool = True


@dataclass(frozen=True)
class CustomerMaster:
    """A customer as the company registers it."""

    customer_id: str
    name: str
    terms_days: int = 30
    credit_limit: int | None = None


@dataclass(frozen=True)
class VendorMaster:
    """A vendor as the company registers it."""

    vendor_id: str
    name: str
    terms_days: int = 30
    bank: BankDetails | None = None


@dataclass(frozen=True)
class OpeningInvoice:
    """An invoice already open when the scenario starts."""

    invoice_id: str
    customer_id: str
    issued_on: date
    amount: int
    description: str = "Services (prior period)"
    send: bool = True


@dataclass(frozen=True)
class OpeningBill:
    """A vendor bill already entered when the scenario starts."""

    bill_id: str
    vendor_id: str
    number: str
    issued_on: date
    amount: int


@dataclass
class CompanySetup:
    """Everything the books hold before the first day."""

    name: str
    chart: str
    policies: Policies
    opening_bank_balance: int
    customers: list[CustomerMaster]
    vendors: list[VendorMaster]
    opening_invoices: list[OpeningInvoice] = field(default_factory=list)
    opening_bills: list[OpeningBill] = field(default_factory=list)
    accounts: CompanyAccounts = field(default_factory=CompanyAccounts)


def _months_back(day: date, n: int) -> date:
    d = day.replace(day=1)
    for _ in range(n):
        d = (d - timedelta(days=1)).replace(day=1)
    return d


def set_up_books(engine: Engine, setup: CompanySetup) -> None:
    """Write the company's starting books (dated before the calendar's start)."""
    cal: BusinessCalendar = engine.calendar
    first = _months_back(cal.start, 3)
    periods, d = [], first
    while d <= cal.end:
        periods.append(cal.period_of(d))
        d = (cal.month_end(d) + timedelta(days=1))
    opening_day = cal.start - timedelta(days=1)
    cmds: list[c.Command] = [c.SetUpCompany(name=setup.name, accounts=setup.accounts,
                                            policies=setup.policies)]
    cmds += chart_commands(setup.chart)
    cmds += [c.OpenPeriod(period=p) for p in periods]
    cmds.append(c.OpenBankAccount(bank_account_id=BANK_ACCOUNT, name="Operating account",
                                  number="000123456789", gl_account=BANK_GL,
                                  entry_date=opening_day,
                                  opening_balance=setup.opening_bank_balance))
    cmds += [c.RegisterCustomer(customer_id=m.customer_id, name=m.name, terms_days=m.terms_days,
                                credit_limit=m.credit_limit) for m in setup.customers]
    cmds += [c.RegisterVendor(vendor_id=m.vendor_id, name=m.name, terms_days=m.terms_days,
                              bank=m.bank) for m in setup.vendors]
    terms = {m.customer_id: m.terms_days for m in setup.customers}
    for inv in setup.opening_invoices:
        cmds.append(c.IssueInvoice(
            invoice_id=inv.invoice_id, customer_id=inv.customer_id, entry_date=inv.issued_on,
            due_on=inv.issued_on + timedelta(days=terms[inv.customer_id]),
            lines=(c.InvoiceLineIn(description=inv.description, unit_price=inv.amount),)))
    for bill in setup.opening_bills:
        cmds.append(c.EnterBill(bill_id=bill.bill_id, vendor_id=bill.vendor_id,
                                vendor_invoice_number=bill.number, entry_date=bill.issued_on,
                                lines=(c.BillLineIn(description="Services (prior period)",
                                                    amount=bill.amount),)))
        cmds.append(c.ApproveBill(bill_id=bill.bill_id))
    result = engine.world.execute_batch(cmds, actor=SETUP)
    if not isinstance(result, list):
        raise RuntimeError(f"the scenario's starting books were refused: {result.message}")


class Automation:
    """The company's automated processes, registered on an engine."""

    def __init__(self, engine: Engine, options: Options, *,
                 unsent_invoices: set[str] | None = None) -> None:
        self.engine = engine
        self.world = engine.world
        self.options = options
        self.unsent = unsent_invoices if unsent_invoices is not None else set()
        """Invoice ids dispatch must skip (shared: an injection may add to it later)."""
        self._orders: list[OrderPlaced] = []
        self._lines: list[BankLinePosted] = []
        self._dispatched = 0
        self._customer_names: dict[str, str] = {}
        w = self.world
        w.subscribe(OrderPlaced, lambda e, _: self._orders.append(e))
        w.subscribe(BankLinePosted, lambda e, _: self._lines.append(e))
        if options.order_intake:
            engine.daily(Phase.COMPANY, self.ship_orders)
        if options.dispatch_invoices:
            engine.daily(Phase.COMPANY, self.dispatch_invoices)
        if options.bank_feed:
            engine.daily(Phase.BANK_FEED, self.import_bank_lines, business_days_only=False)
        if options.controller_approves_bank_changes:
            engine.daily(Phase.DAY_END, self.approve_bank_changes)
        if options.month_end_statements:
            engine.daily(Phase.DAY_END, self.send_statements)

    def ship_orders(self, day: date) -> None:
        """Ship the orders placed since the last run; invoice them or list them for the clerk."""
        orders, self._orders = self._orders, []
        if not orders:
            return
        for o in orders:
            self.world.emit(OrderShipped(customer_id=o.customer_id, order_id=o.order_id),
                            "system:shipping")
        if self.options.auto_invoicing:
            self.invoice_orders(day, orders)
            return
        rows = [(o.order_id, o.customer_id, x.description, x.quantity, format_cents(x.unit_price))
                for o in orders for x in o.lines]
        deliver(self.engine, actor="system:shipping", kind="other",
                filename=f"shipped-orders-{day.isoformat()}.csv", sender="shipping@company",
                subject=f"Orders shipped on {day.isoformat()}: to invoice",
                content=render_csv(("order_id", "customer_id", "description", "quantity",
                                    "unit_price"), rows))

    def send_statements(self, day: date) -> None:
        """On the month's last business day, send each customer its open invoices."""
        if not self.engine.calendar.is_last_business_day_of_month(day):
            return
        books = self.world.ledger.books
        open_by_customer: dict[str, list[tuple[str, int]]] = {}
        for inv in books.invoices.values():
            if inv.open > 0:
                open_by_customer.setdefault(inv.customer_id, []).append((inv.invoice_id,
                                                                         inv.open))
        for cid in sorted(open_by_customer):
            items = open_by_customer[cid]
            self.world.emit(StatementSent(
                customer_id=cid, as_of=day, balance=sum(a for _, a in items),
                items=tuple(Allocation(doc_id=i, amount=a) for i, a in items)),
                "system:statements")

    def invoice_orders(self, day: date, orders: list[OrderPlaced]) -> None:
        """Invoice shipped orders (one invoice per order)."""
        cmds: list[c.Command] = [
            c.IssueInvoice(invoice_id=self.world.next_id("INV"), customer_id=o.customer_id,
                           entry_date=day, reference=o.order_id,
                           lines=tuple(_invoice_line(x) for x in o.lines))
            for o in orders]
        if not cmds:
            return
        if isinstance(self.world.execute_batch(cmds, actor="system:invoicing"), list):
            return
        for cmd in cmds:  # one was refused (a credit limit): invoice the others one by one
            self.world.execute(cmd, actor="system:invoicing")

    def dispatch_invoices(self, day: date) -> None:
        """Send every invoice in the books that has not been sent (and may be)."""
        invoices = self.world.ledger.books.invoices  # in the order they were issued
        for inv in itertools.islice(invoices.values(), self._dispatched, None):
            self._dispatched += 1
            if inv.invoice_id in self.unsent:
                continue
            self.world.emit(InvoiceReceived(customer_id=inv.customer_id,
                                            invoice_id=inv.invoice_id, amount=inv.total,
                                            due_on=inv.due_on), "system:dispatch")

    def import_bank_lines(self, day: date) -> None:
        """Import the bank's lines of the day; record deposits as unapplied receipts."""
        lines, self._lines = self._lines, []
        if not lines:
            return
        books = self.world.ledger.books
        if not self._customer_names or len(self._customer_names) != len(books.customers):
            self._customer_names = {}
            seen: dict[str, int] = {}
            for cust in books.customers.values():
                seen[cust.name.casefold()] = seen.get(cust.name.casefold(), 0) + 1
                self._customer_names[cust.name.casefold()] = cust.customer_id
            for name, n in seen.items():
                if n > 1:  # an ambiguous name names nobody
                    del self._customer_names[name]
        by_account: dict[str, list[BankLinePosted]] = {}
        for line in lines:
            by_account.setdefault(line.bank_account_id, []).append(line)
        for account, acc_lines in by_account.items():
            if account not in books.bank_accounts:
                continue
            new = [x for x in acc_lines if x.line_id not in books.statement_lines]
            if not new:
                continue
            cmds: list[c.Command] = [c.ImportStatementLines(bank_account_id=account, lines=tuple(
                c.StatementLineIn(line_id=x.line_id, entry_date=x.posted_on, amount=x.amount,
                                  description=x.description, reference=x.reference,
                                  counterparty=x.counterparty, bank_ref=x.line_id)
                for x in new))]
            if self.options.auto_receipts:
                for x in new:
                    if x.amount <= 0 or x.kind not in ("deposit", "other"):
                        continue
                    rid = f"RCT-{x.line_id}"
                    cmds.append(c.RecordReceipt(
                        receipt_id=rid,
                        customer_id=self._customer_names.get(x.counterparty.casefold()),
                        bank_account_id=account, entry_date=x.posted_on, amount=x.amount,
                        method=x.description.split(" ")[0].lower(), reference=x.reference,
                        payer=x.counterparty))
                    cmds.append(c.MatchStatementLine(
                        line_id=x.line_id, targets=(c.MatchRef(kind="receipt", doc_id=rid),)))
            self.world.execute_batch(cmds, actor="system:bank-feed")

    def approve_bank_changes(self, day: date) -> None:
        """The controller approves every pending bank-detail change (trusting the clerk)."""
        books = self.world.ledger.books
        pending = [r.request_id for r in books.bank_changes.values() if r.status == "pending"]
        for rid in pending:
            self.world.execute(c.ApproveVendorBankChange(request_id=rid),
                               actor="system:controller", role="controller")


def _invoice_line(line: OrderLine) -> c.InvoiceLineIn:
    return c.InvoiceLineIn(description=line.description, quantity=line.quantity,
                           unit_price=line.unit_price)

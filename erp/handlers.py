"""Command handlers: read the books, decide, return events.

A handler is a plain function named with a verb. It does no I/O and appends
nothing; it raises ``CommandRejected`` when a command breaks an invariant, before
anything is written. ``handle`` dispatches a command to its handler.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal, TypeVar

from erp import commands as c
from erp import events as ev
from erp.books import (
    AssetState,
    BankChangeState,
    BankDocState,
    Books,
    InvoiceState,
    PeriodState,
    PrepaidState,
    TakenIds,
    document_number_key,
)
from erp.errors import CommandRejected, UnknownEntity
from erp.money import display_cents, pct_of
from erp.postings import post

MANAGERS = ("controller", "system")


@dataclass(frozen=True, slots=True)
class Context:
    """Who asks, in which role, on which business date."""

    actor: str
    role: ev.Role
    business_date: date


Handler = Callable[[Any, Books, Context], list[ev.Event]]
"""A command handler: ``(command, books, ctx) -> events`` (the command of its own type)."""
HANDLERS: dict[type[c.Command], Handler] = {}

_C = TypeVar("_C", bound=c.Command)


def handles(command_type: type[_C]) -> Callable[[Callable[[_C, Books, Context], list[ev.Event]]],
                                               Callable[[_C, Books, Context], list[ev.Event]]]:
    """Register a handler for a command type (refusing a second one)."""

    def register(fn: Callable[[_C, Books, Context], list[ev.Event]],
                 ) -> Callable[[_C, Books, Context], list[ev.Event]]:
        if command_type in HANDLERS:
            raise ValueError(f"a handler for {command_type.__name__} is already registered")
        HANDLERS[command_type] = fn
        return fn

    return register


def handle(command: c.Command, books: Books, ctx: Context) -> list[ev.Event]:
    """Decide a command against the books: its events, or ``CommandRejected``."""
    fn = HANDLERS.get(type(command))
    if fn is None:
        raise TypeError(f"no handler for command {type(command).__name__}")
    events = fn(command, books, ctx)
    require_posting_accounts(command, events, books)
    return events


_CONTROL_ROLES = (("ar_account", "ar"), ("ap_account", "ap"),
                  ("unapplied_account", "unapplied_cash"), ("bank_gl_account", "bank"))
"""Event fields naming the control account a document posts to, and the control kind
that account must have in the chart (the subledger of its documents ties to it)."""


def require_posting_accounts(command: c.Command, events: Iterable[ev.Event],
                             books: Books) -> None:
    """Reject events that post to an account missing from the chart, or that carry a
    document to a control account of another kind (``unknown_account``,
    ``invalid_control_account``).

    One rule for every handler: whichever account a posting takes (the command's, a
    line's, or one of the company's posting accounts set up before the chart), the
    general ledger only ever holds accounts of the chart, and a document's subledger
    entries only ever sit under a control account of their own kind.
    """
    accounts = books.accounts
    company = books.company
    for e in events:
        for line in post(e):
            if line.account not in accounts:
                raise CommandRejected(
                    "unknown_account",
                    f"{type(command).__name__} would post to account {line.account!r}"
                    f"{_company_role(company, line.account)}, which is not in the chart of "
                    "accounts (a controller must open it first)",
                    _field_naming(command, line.account))
        for attr, kind in _control_roles(type(e)):
            code = getattr(e, attr)
            acct = accounts.get(code)
            if acct is not None and acct.control != kind:
                raise CommandRejected(
                    "invalid_control_account",
                    f"{type(command).__name__} would carry {e.type} to account {code!r} "
                    f"({acct.name}){_company_role(company, code)}, which is not a control "
                    f"account of kind {kind} (its control: {acct.control or 'none'})",
                    _field_naming(command, code))


_ROLES_OF: dict[type[ev.Event], tuple[tuple[str, str], ...]] = {}


def _control_roles(event_type: type[ev.Event]) -> tuple[tuple[str, str], ...]:
    """The :data:`_CONTROL_ROLES` an event type has (looked up once per type: asking a
    model for a field it lacks raises and catches an ``AttributeError`` each time)."""
    roles = _ROLES_OF.get(event_type)
    if roles is None:
        fields = event_type.model_fields
        roles = _ROLES_OF[event_type] = tuple(r for r in _CONTROL_ROLES if r[0] in fields)
    return roles


def _company_role(company: ev.CompanySetUp | None, code: str) -> str:
    """`` (the company's X account)`` when ``code`` is one of the company's posting
    accounts, else nothing."""
    if company is None:
        return ""
    roles = [name for name, value in company.accounts if value == code]
    return f" (the company's {' and '.join(roles)} account)" if roles else ""


def _field_naming(command: c.Command, code: str) -> str | None:
    """The command's top-level field holding ``code``, if one does."""
    for name, value in command:
        if value == code:
            return name
    return None


# --- shared rules ----------------------------------------------------------------


def _fmt(cents: int) -> str:
    return display_cents(cents)


def require_role(ctx: Context, allowed: Iterable[str], action: str) -> None:
    """Reject unless the caller's role is one of ``allowed``."""
    allowed = tuple(allowed)
    if ctx.role not in allowed:
        raise CommandRejected(
            "forbidden_for_role",
            f"{ctx.actor} (role {ctx.role}) may not {action}; needs role "
            + " or ".join(allowed),
        )


def require_positive(amount: int, field: str = "amount") -> None:
    """Reject an amount that is zero or negative."""
    if amount <= 0:
        raise CommandRejected("non_positive_amount",
                              f"{field} must be greater than zero (got {_fmt(amount)})", field)


def require_open_period(books: Books, day: date, field: str = "entry_date") -> None:
    """Reject a posting dated outside an open accounting period."""
    period = books.period_of(day)
    if period is None:
        raise CommandRejected("no_open_period",
                              f"{field} {day.isoformat()} falls in no accounting period "
                              "(a controller must open one first)", field)
    if period.closed:
        raise CommandRejected("period_closed",
                              f"{field} {day.isoformat()} falls in period {period.period}, "
                              "which is closed; post in an open period or ask a controller "
                              "to reopen it", field)


def new_id(given: str | None, taken: TakenIds, prefix: str, kind: str, books: Books,
           field: str) -> str:
    """The caller's id if it is new (else ``duplicate_id``), or the next free one."""
    if given is None:
        return books.next_id(prefix, taken)
    if given in taken:
        raise CommandRejected("duplicate_id", f"{kind} {given!r} already exists", field)
    return given


class _Taken:
    """Ids already in the books plus ids this command has just assigned (no copying)."""

    def __init__(self, existing: TakenIds) -> None:
        self.existing = existing
        self.new: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self.new or key in self.existing

    def __len__(self) -> int:
        return len(self.new) + len(self.existing)

    def add(self, key: str) -> None:
        self.new.add(key)


def require_account(books: Books, code: str, field: str) -> ev.AccountOpened:
    """The account, or ``unknown_account``."""
    return books.account(code, field)


def require_non_control_account(books: Books, code: str, field: str) -> ev.AccountOpened:
    """The account, unless it is a control account (``control_account_restricted``).

    A document's counter-account must not be a control account: the GL would move
    without its subledger, and "GL control balance = subledger total" would break.
    """
    acct = books.account(code, field)
    if acct.control is not None:
        raise CommandRejected("control_account_restricted",
                              f"{field} {code} is the {acct.control} control account; a "
                              "document's counter-account cannot be a control account", field)
    return acct


def _due(entry_date: date, terms_days: int, due_on: date | None) -> date:
    due = due_on if due_on is not None else entry_date + timedelta(days=terms_days)
    if due < entry_date:
        raise CommandRejected("invalid_due_date",
                              f"due_on {due.isoformat()} is before the document date "
                              f"{entry_date.isoformat()}", "due_on")
    return due


# --- master data -----------------------------------------------------------------


@handles(c.SetUpCompany)
def set_up_company(cmd: c.SetUpCompany, books: Books, ctx: Context) -> list[ev.Event]:
    """Set up the company once."""
    require_role(ctx, MANAGERS, "set up the company")
    if books.company is not None:
        raise CommandRejected("already_set_up", "the company is already set up; "
                              "use ChangePolicies to change its policies")
    return [ev.CompanySetUp(name=cmd.name, currency=cmd.currency, accounts=cmd.accounts,
                            policies=cmd.policies)]


@handles(c.ChangePolicies)
def change_policies(cmd: c.ChangePolicies, books: Books, ctx: Context) -> list[ev.Event]:
    """Replace the company's policies."""
    require_role(ctx, MANAGERS, "change company policies")
    books.require_company()
    return [ev.PoliciesChanged(policies=cmd.policies)]


_NORMAL: dict[str, ev.Side] = {"asset": "debit", "expense": "debit", "liability": "credit",
                              "equity": "credit", "revenue": "credit"}


@handles(c.OpenAccount)
def open_account(cmd: c.OpenAccount, books: Books, ctx: Context) -> list[ev.Event]:
    """Add an account to the chart."""
    require_role(ctx, MANAGERS, "change the chart of accounts")
    if cmd.code in books.accounts:
        raise CommandRejected("duplicate_id", f"account {cmd.code!r} already exists", "code")
    expected_type = {"ar": "asset", "bank": "asset", "ap": "liability",
                     "unapplied_cash": "liability"}
    if cmd.control == "bank" and cmd.account_type == "liability":
        expected_type["bank"] = "liability"  # a company card: a bank account owed
    if cmd.control is not None and expected_type[cmd.control] != cmd.account_type:
        raise CommandRejected("invalid_control_account",
                              f"a {cmd.control} control account must be of type "
                              f"{expected_type[cmd.control]} (got {cmd.account_type})", "control")
    return [ev.AccountOpened(code=cmd.code, name=cmd.name, account_type=cmd.account_type,
                             normal_side=cmd.normal_side or _NORMAL[cmd.account_type],
                             control=cmd.control)]


def _month_bounds(period: str) -> tuple[date, date]:
    try:
        year, month = (int(x) for x in period.split("-"))
        return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])
    except (ValueError, TypeError):
        raise CommandRejected("invalid_period",
                              f"period {period!r} is not YYYY-MM; give start and end for "
                              "other periods", "period") from None


@handles(c.OpenPeriod)
def open_period(cmd: c.OpenPeriod, books: Books, ctx: Context) -> list[ev.Event]:
    """Open an accounting period that overlaps no other."""
    require_role(ctx, MANAGERS, "open an accounting period")
    if cmd.period in books.periods:
        raise CommandRejected("duplicate_id", f"period {cmd.period!r} already exists", "period")
    if (cmd.start is None) != (cmd.end is None):
        raise CommandRejected("invalid_period", "give both start and end, or neither", "start")
    start, end = (cmd.start, cmd.end) if cmd.start and cmd.end else _month_bounds(cmd.period)
    if end < start:
        raise CommandRejected("invalid_period", f"period end {end} is before its start {start}",
                              "end")
    for p in books.periods.values():
        if p.start <= end and start <= p.end:
            raise CommandRejected("overlapping_period",
                                  f"period {cmd.period} ({start}..{end}) overlaps {p.period} "
                                  f"({p.start}..{p.end})", "period")
    return [ev.PeriodOpened(period=cmd.period, start=start, end=end)]


def _period(books: Books, period: str) -> PeriodState:
    p = books.periods.get(period)
    if p is None:
        raise CommandRejected("unknown_period", f"no accounting period {period!r}", "period")
    return p


@handles(c.ClosePeriod)
def close_period(cmd: c.ClosePeriod, books: Books, ctx: Context) -> list[ev.Event]:
    """Close an open period."""
    require_role(ctx, MANAGERS, "close an accounting period")
    p = _period(books, cmd.period)
    if p.closed:
        raise CommandRejected("period_closed", f"period {cmd.period} is already closed", "period")
    return [ev.PeriodClosed(period=cmd.period)]


@handles(c.ReopenPeriod)
def reopen_period(cmd: c.ReopenPeriod, books: Books, ctx: Context) -> list[ev.Event]:
    """Reopen a closed period."""
    require_role(ctx, MANAGERS, "reopen an accounting period")
    p = _period(books, cmd.period)
    require_year_open(books, p)
    if not p.closed:
        raise CommandRejected("period_not_closed", f"period {cmd.period} is not closed", "period")
    return [ev.PeriodReopened(period=cmd.period, reason=cmd.reason)]


@handles(c.RegisterCustomer)
def register_customer(cmd: c.RegisterCustomer, books: Books, ctx: Context) -> list[ev.Event]:
    """Add a customer."""
    require_role(ctx, (*MANAGERS, "clerk"), "register customers")
    cid = new_id(cmd.customer_id, books.customers, "C", "customer", books, "customer_id")
    if cmd.credit_limit is not None and cmd.credit_limit < 0:
        raise CommandRejected("non_positive_amount", "credit_limit cannot be negative (got "
                              f"{_fmt(cmd.credit_limit)})",
                              "credit_limit")
    return [ev.CustomerRegistered(customer_id=cid, name=cmd.name, terms_days=cmd.terms_days,
                                  credit_limit=cmd.credit_limit)]


@handles(c.RegisterVendor)
def register_vendor(cmd: c.RegisterVendor, books: Books, ctx: Context) -> list[ev.Event]:
    """Add a vendor."""
    vid = new_id(cmd.vendor_id, books.vendors, "V", "vendor", books, "vendor_id")
    return [ev.VendorRegistered(vendor_id=vid, name=cmd.name, terms_days=cmd.terms_days,
                                bank=cmd.bank)]


@handles(c.RequestVendorBankChange)
def request_vendor_bank_change(cmd: c.RequestVendorBankChange, books: Books,
                               ctx: Context) -> list[ev.Event]:
    """Record a request to change a vendor's bank details (not in effect yet)."""
    books.vendor(cmd.vendor_id)
    rid = new_id(cmd.request_id, books.bank_changes, "BCR", "bank-change request", books,
                 "request_id")
    return [ev.VendorBankChangeRequested(request_id=rid, vendor_id=cmd.vendor_id,
                                         new_bank=cmd.new_bank, reason=cmd.reason,
                                         requested_by_role=ctx.role)]


def _pending_change(books: Books, request_id: str) -> BankChangeState:
    req = books.bank_changes.get(request_id)
    if req is None:
        raise CommandRejected("unknown_bank_change", f"no bank-change request {request_id!r}",
                              "request_id")
    if req.status != "pending":
        raise CommandRejected("not_pending",
                              f"bank-change request {request_id} is already {req.status}",
                              "request_id")
    return req


@handles(c.ApproveVendorBankChange)
def approve_vendor_bank_change(cmd: c.ApproveVendorBankChange, books: Books,
                               ctx: Context) -> list[ev.Event]:
    """Approve a pending change; the approver's role must differ from the requester's."""
    require_role(ctx, MANAGERS, "approve a vendor bank-detail change")
    req = _pending_change(books, cmd.request_id)
    if req.requested_by_role == ctx.role:
        raise CommandRejected(
            "same_role_approval",
            f"bank-change request {cmd.request_id} was requested by role {ctx.role}; "
            "a different role must approve it", "request_id")
    return [ev.VendorBankChangeApproved(request_id=cmd.request_id,
                                        vendor_id=req.vendor_id,
                                        new_bank=req.new_bank,
                                        approved_by_role=ctx.role)]


@handles(c.RejectVendorBankChange)
def reject_vendor_bank_change(cmd: c.RejectVendorBankChange, books: Books,
                              ctx: Context) -> list[ev.Event]:
    """Refuse a pending change."""
    require_role(ctx, MANAGERS, "reject a vendor bank-detail change")
    req = _pending_change(books, cmd.request_id)
    return [ev.VendorBankChangeRejected(request_id=cmd.request_id,
                                        vendor_id=req.vendor_id,
                                        reason=cmd.reason)]


@handles(c.OpenBankAccount)
def open_bank_account(cmd: c.OpenBankAccount, books: Books, ctx: Context) -> list[ev.Event]:
    """Add a bank account tied to a bank control account."""
    require_role(ctx, MANAGERS, "open a bank account")
    company = books.require_company()
    if cmd.bank_account_id in books.bank_accounts:
        raise CommandRejected("duplicate_id", f"bank account {cmd.bank_account_id!r} already "
                              "exists", "bank_account_id")
    acct = require_account(books, cmd.gl_account, "gl_account")
    if acct.control != "bank":
        raise CommandRejected("not_a_bank_account",
                              f"account {acct.code} ({acct.name}) is not a bank control "
                              "account", "gl_account")
    if any(b.gl_account == cmd.gl_account for b in books.bank_accounts.values()):
        raise CommandRejected("duplicate_id", f"account {cmd.gl_account} already belongs to "
                              "another bank account", "gl_account")
    if cmd.opening_balance:
        require_open_period(books, cmd.entry_date)
    return [ev.BankAccountOpened(bank_account_id=cmd.bank_account_id, name=cmd.name,
                                 number=cmd.number, gl_account=cmd.gl_account,
                                 entry_date=cmd.entry_date, opening_balance=cmd.opening_balance,
                                 equity_account=company.accounts.opening_equity)]


# --- receivables -----------------------------------------------------------------


@handles(c.IssueInvoice)
def issue_invoice(cmd: c.IssueInvoice, books: Books, ctx: Context) -> list[ev.Event]:
    """Issue a customer invoice within the customer's credit limit."""
    company = books.require_company()
    cust = books.customer(cmd.customer_id)
    require_open_period(books, cmd.entry_date)
    iid = new_id(cmd.invoice_id, books.invoices, "INV", "invoice", books, "invoice_id")
    lines = []
    for n, line in enumerate(cmd.lines):
        account = line.account or company.accounts.revenue
        acct = require_account(books, account, f"lines[{n}].account")
        if acct.control is not None:
            raise CommandRejected("control_account_restricted",
                                  f"lines[{n}].account {account} is a control account",
                                  f"lines[{n}].account")
        require_positive(line.unit_price, f"lines[{n}].unit_price")
        lines.append(ev.InvoiceLine(description=line.description, quantity=line.quantity,
                                    unit_price=line.unit_price,
                                    amount=line.quantity * line.unit_price, account=account))
    subtotal = sum(line.amount for line in lines)
    tax = pct_of(subtotal, cmd.tax_rate_bp)
    total = subtotal + tax
    if (books.policies.enforce_credit_limits and cust.credit_limit is not None
            and cust.open_ar + total > cust.credit_limit):
        raise CommandRejected(
            "credit_limit_exceeded",
            f"customer {cust.customer_id} owes {_fmt(cust.open_ar)}; this invoice of "
            f"{_fmt(total)} would exceed its credit limit of {_fmt(cust.credit_limit)}",
            "customer_id")
    require_within_credit_hold(books, cust.customer_id, total)
    return [ev.InvoiceIssued(invoice_id=iid, customer_id=cmd.customer_id,
                             entry_date=cmd.entry_date,
                             due_on=_due(cmd.entry_date, cust.terms_days, cmd.due_on),
                             lines=tuple(lines), subtotal=subtotal, tax=tax, total=total,
                             ar_account=company.accounts.ar,
                             tax_account=company.accounts.tax_payable,
                             reference=cmd.reference)]


def _reduce_open_invoice(books: Books, invoice_id: str, amount: int) -> InvoiceState:
    inv = books.invoice(invoice_id)
    require_positive(amount)
    if amount > inv.open:
        raise CommandRejected("exceeds_open_balance",
                              f"invoice {invoice_id} has {_fmt(inv.open)} open, cannot reduce "
                              f"it by {_fmt(amount)}", "amount")
    return inv


@handles(c.IssueCreditMemo)
def issue_credit_memo(cmd: c.IssueCreditMemo, books: Books, ctx: Context) -> list[ev.Event]:
    """Credit part of an open invoice."""
    company = books.require_company()
    inv = _reduce_open_invoice(books, cmd.invoice_id, cmd.amount)
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    account = cmd.account or company.accounts.sales_returns
    require_non_control_account(books, account, "account")
    mid = new_id(cmd.credit_memo_id, books.credit_memos, "CM", "credit memo", books,
                 "credit_memo_id")
    return [ev.CreditMemoIssued(credit_memo_id=mid, invoice_id=cmd.invoice_id,
                                customer_id=inv.customer_id,
                                entry_date=day, amount=cmd.amount, account=account,
                                ar_account=inv.ar_account,
                                reason=cmd.reason)]


@handles(c.RecordReceipt)
def record_receipt(cmd: c.RecordReceipt, books: Books, ctx: Context) -> list[ev.Event]:
    """Record cash received into a bank account as unapplied cash."""
    company = books.require_company()
    bank = books.bank_account(cmd.bank_account_id)
    if cmd.customer_id is not None:
        books.customer(cmd.customer_id)
    require_positive(cmd.amount)
    require_open_period(books, cmd.entry_date)
    rid = new_id(cmd.receipt_id, books.receipts, "RCT", "receipt", books, "receipt_id")
    return [ev.ReceiptRecorded(receipt_id=rid, customer_id=cmd.customer_id,
                               bank_account_id=cmd.bank_account_id, entry_date=cmd.entry_date,
                               amount=cmd.amount, bank_gl_account=bank.gl_account,
                               unapplied_account=company.accounts.unapplied_cash,
                               method=cmd.method, reference=cmd.reference, payer=cmd.payer)]


@handles(c.AssignReceiptCustomer)
def assign_receipt_customer(cmd: c.AssignReceiptCustomer, books: Books,
                            ctx: Context) -> list[ev.Event]:
    """Name the customer of a receipt recorded without one."""
    r = books.receipt(cmd.receipt_id)
    books.customer(cmd.customer_id)
    if r.customer_id is not None:
        raise CommandRejected("customer_already_assigned",
                              f"receipt {r.receipt_id} already belongs to customer "
                              f"{r.customer_id}", "customer_id")
    return [ev.ReceiptCustomerAssigned(receipt_id=cmd.receipt_id, customer_id=cmd.customer_id)]


@handles(c.ApplyReceipt)
def apply_receipt(cmd: c.ApplyReceipt, books: Books, ctx: Context) -> list[ev.Event]:
    """Apply part of a receipt to an open invoice of the same customer."""
    company = books.require_company()
    receipt = books.receipt(cmd.receipt_id)
    inv = books.invoice(cmd.invoice_id)
    require_positive(cmd.amount)
    if receipt.customer_id is None:
        raise CommandRejected("receipt_unassigned",
                              f"receipt {receipt.receipt_id} has no customer; assign one with "
                              "AssignReceiptCustomer first", "receipt_id")
    if receipt.customer_id != inv.customer_id:
        raise CommandRejected("customer_mismatch",
                              f"receipt {receipt.receipt_id} is from customer "
                              f"{receipt.customer_id}, invoice {inv.invoice_id} belongs to "
                              f"{inv.customer_id}", "invoice_id")
    if cmd.amount > receipt.unapplied:
        raise CommandRejected("over_application",
                              f"receipt {receipt.receipt_id} has {_fmt(receipt.unapplied)} "
                              f"unapplied, cannot apply {_fmt(cmd.amount)}", "amount")
    if cmd.amount > inv.open:
        raise CommandRejected("exceeds_open_balance",
                              f"invoice {inv.invoice_id} has {_fmt(inv.open)} open, cannot "
                              f"apply {_fmt(cmd.amount)}", "amount")
    # Undated, it takes the business date, or the later document's date if that is later.
    day = cmd.entry_date or max(ctx.business_date, receipt.entry_date, inv.entry_date)
    for what, dated in (("receipt", receipt.entry_date), ("invoice", inv.entry_date)):
        if day < dated:
            raise CommandRejected("dated_before_document",
                                  f"the application is dated {day.isoformat()}, before the "
                                  f"{what} it applies ({dated.isoformat()})", "entry_date")
    require_open_period(books, day)
    return [ev.ReceiptApplied(receipt_id=cmd.receipt_id, invoice_id=cmd.invoice_id,
                              customer_id=inv.customer_id, entry_date=day, amount=cmd.amount,
                              unapplied_account=company.accounts.unapplied_cash,
                              ar_account=inv.ar_account)]


@handles(c.ReverseApplication)
def reverse_application(cmd: c.ReverseApplication, books: Books, ctx: Context) -> list[ev.Event]:
    """Undo (part of) an application."""
    company = books.require_company()
    receipt = books.receipt(cmd.receipt_id)
    inv = books.invoice(cmd.invoice_id)
    require_positive(cmd.amount)
    applied = receipt.applied.get(cmd.invoice_id, 0)
    if cmd.amount > applied:
        raise CommandRejected("exceeds_applied",
                              f"receipt {receipt.receipt_id} has {_fmt(applied)} applied to "
                              f"invoice {cmd.invoice_id}, cannot reverse {_fmt(cmd.amount)}",
                              "amount")
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    return [ev.ApplicationReversed(receipt_id=cmd.receipt_id, invoice_id=cmd.invoice_id,
                                   customer_id=inv.customer_id, entry_date=day,
                                   amount=cmd.amount,
                                   unapplied_account=company.accounts.unapplied_cash,
                                   ar_account=inv.ar_account)]


@handles(c.WriteOffInvoice)
def write_off_invoice(cmd: c.WriteOffInvoice, books: Books, ctx: Context) -> list[ev.Event]:
    """Write off part of an invoice; clerks only up to the policy's limit."""
    company = books.require_company()
    inv = _reduce_open_invoice(books, cmd.invoice_id, cmd.amount)
    limit = books.policies.clerk_write_off_limit
    done = inv.written_off
    if ctx.role == "clerk" and done + cmd.amount > limit:
        raise CommandRejected("write_off_limit",
                              f"a clerk may write off at most {_fmt(limit)} of an invoice; "
                              f"{cmd.invoice_id} has {_fmt(done)} written off already, asked "
                              f"{_fmt(cmd.amount)} more; a controller must approve more",
                              "amount")
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    account = cmd.account or company.accounts.bad_debt
    require_non_control_account(books, account, "account")
    return [ev.InvoiceWrittenOff(invoice_id=cmd.invoice_id,
                                 customer_id=inv.customer_id,
                                 entry_date=day, amount=cmd.amount, account=account,
                                 ar_account=inv.ar_account,
                                 reason=cmd.reason)]


@handles(c.GrantFeeAllowance)
def grant_fee_allowance(cmd: c.GrantFeeAllowance, books: Books, ctx: Context) -> list[ev.Event]:
    """Accept a processor's fee as paid on an invoice; clerks only within the policy."""
    company = books.require_company()
    inv = _reduce_open_invoice(books, cmd.invoice_id, cmd.amount)
    p = books.policies
    limit = pct_of(inv.total, p.clerk_fee_allowance_bp) + p.clerk_fee_allowance_fixed
    done = inv.allowed
    if ctx.role == "clerk" and done + cmd.amount > limit:
        raise CommandRejected("fee_allowance_limit",
                              f"a clerk may accept at most {_fmt(limit)} of fees on invoice "
                              f"{cmd.invoice_id} ({p.clerk_fee_allowance_bp / 100:g}% of "
                              f"{_fmt(inv.total)} + {_fmt(p.clerk_fee_allowance_fixed)}); "
                              f"{_fmt(done)} already, asked {_fmt(cmd.amount)} more; a "
                              "controller must approve more", "amount")
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    account = cmd.account or company.accounts.card_fees
    require_non_control_account(books, account, "account")
    return [ev.FeeAllowanceGranted(invoice_id=cmd.invoice_id,
                                   customer_id=inv.customer_id,
                                   entry_date=day, amount=cmd.amount, account=account,
                                   ar_account=inv.ar_account,
                                   reason=cmd.reason)]


@handles(c.RefundCustomer)
def refund_customer(cmd: c.RefundCustomer, books: Books, ctx: Context) -> list[ev.Event]:
    """Pay unapplied cash back to the receipt's customer."""
    company = books.require_company()
    receipt = books.receipt(cmd.receipt_id)
    require_positive(cmd.amount)
    if receipt.customer_id is None:
        raise CommandRejected("receipt_unassigned",
                              f"receipt {receipt.receipt_id} has no customer to refund",
                              "receipt_id")
    if cmd.amount > receipt.unapplied:
        raise CommandRejected("over_application",
                              f"receipt {receipt.receipt_id} has {_fmt(receipt.unapplied)} "
                              f"unapplied, cannot refund {_fmt(cmd.amount)}", "amount")
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    taken = books.bank_docs["refund"]
    fid = new_id(cmd.refund_id, taken, "RF", "refund", books, "refund_id")
    bank = books.bank_accounts[receipt.bank_account_id]
    return [ev.CustomerRefunded(refund_id=fid, receipt_id=cmd.receipt_id,
                                customer_id=receipt.customer_id,
                                bank_account_id=receipt.bank_account_id, entry_date=day,
                                amount=cmd.amount, bank_gl_account=bank.gl_account,
                                unapplied_account=company.accounts.unapplied_cash)]


@handles(c.RecordReturnedDeposit)
def record_returned_deposit(cmd: c.RecordReturnedDeposit, books: Books,
                            ctx: Context) -> list[ev.Event]:
    """Record a deposit the bank returned unpaid: re-open every invoice its receipt paid
    (one ``ApplicationReversed`` each), then post the bank's reversal of the whole receipt,
    matched to the returned item's statement line when one is named."""
    company = books.require_company()
    receipt = books.receipt(cmd.receipt_id)
    if receipt.returned:
        raise CommandRejected("already_returned",
                              f"receipt {receipt.receipt_id} is already recorded as returned",
                              "receipt_id")
    if receipt.refunded:
        raise CommandRejected("receipt_refunded",
                              f"receipt {receipt.receipt_id} has {_fmt(receipt.refunded)} "
                              "refunded; a deposit paid out again cannot be returned whole",
                              "receipt_id")
    day = cmd.entry_date or max(ctx.business_date, receipt.entry_date)
    if day < receipt.entry_date:
        raise CommandRejected("dated_before_document",
                              f"the return is dated {day.isoformat()}, before the receipt "
                              f"({receipt.entry_date.isoformat()})", "entry_date")
    require_open_period(books, day)
    return_id = new_id(cmd.return_id, books.bank_docs["return"], "RET", "returned deposit",
                       books, "return_id")
    out: list[ev.Event] = []
    for invoice_id, amount in sorted(receipt.applied.items()):
        inv = books.invoices[invoice_id]
        out.append(ev.ApplicationReversed(
            receipt_id=receipt.receipt_id, invoice_id=invoice_id, customer_id=inv.customer_id,
            entry_date=day, amount=amount, unapplied_account=company.accounts.unapplied_cash,
            ar_account=inv.ar_account))
    bank = books.bank_accounts[receipt.bank_account_id]
    returned = ev.DepositReturned(
        return_id=return_id, receipt_id=receipt.receipt_id, customer_id=receipt.customer_id,
        bank_account_id=receipt.bank_account_id, entry_date=day, amount=receipt.amount,
        bank_gl_account=bank.gl_account, unapplied_account=company.accounts.unapplied_cash,
        reason=cmd.reason)
    if cmd.line_id is not None:
        line = books.statement_lines.get(cmd.line_id)
        if line is None:
            raise CommandRejected("unknown_statement_line", f"no statement line "
                                  f"{cmd.line_id!r}", "line_id")
        if line.amount != -receipt.amount:
            raise CommandRejected("match_amount_mismatch",
                                  f"statement line {cmd.line_id} is {_fmt(line.amount)}; the "
                                  f"return of receipt {receipt.receipt_id} is "
                                  f"{_fmt(-receipt.amount)}", "line_id")
    return out + _with_match(books, returned, "return", return_id, receipt.bank_account_id,
                             -receipt.amount, cmd.line_id)


# --- collections: dunning letters, disputes, promises to pay, credit holds ---------

DUNNING_LEVEL_DAYS: dict[int, int] = {1: 1, 2: 31, 3: 61}
"""The fewest days past due at which a letter of each level may be sent."""
PROMISE_MAX_DAYS = 30
"""How far ahead a promise to pay may be dated."""


def require_within_credit_hold(books: Books, customer_id: str, total: int) -> None:
    """Reject an invoice that would take a customer on credit hold above the hold's limit."""
    hid = books.collections.on_hold.get(customer_id)
    if hid is None:
        return
    hold = books.collections.holds[hid]
    owed = books.customers[customer_id].open_ar
    if owed + total > hold.credit_limit:
        raise CommandRejected(
            "customer_on_credit_hold",
            f"customer {customer_id} is on credit hold {hid} (placed "
            f"{hold.placed_on.isoformat()}, limit {_fmt(hold.credit_limit)}): it owes "
            f"{_fmt(owed)} and this invoice of {_fmt(total)} would take it above the limit; "
            "release the hold first (erp credit-holds release)", "customer_id")


def _open_invoice(books: Books, invoice_id: str) -> InvoiceState:
    inv = books.invoice(invoice_id)
    if inv.open <= 0:
        raise CommandRejected("invoice_closed",
                              f"invoice {invoice_id} has nothing open (fully paid or "
                              "credited)", "invoice_id")
    return inv


def _not_disputed(books: Books, inv: InvoiceState, action: str) -> None:
    did = books.collections.open_disputes.get(inv.invoice_id)
    if did is not None:
        raise CommandRejected("invoice_disputed",
                              f"invoice {inv.invoice_id} is under dispute {did}; cannot "
                              f"{action} until the dispute is resolved", "invoice_id")


def _no_pending_promise(books: Books, inv: InvoiceState, day: date, action: str) -> None:
    p = books.collections.promise_pending(inv, day)
    if p is not None:
        raise CommandRejected("promise_pending",
                              f"invoice {inv.invoice_id} has promise to pay {p.promise_id} "
                              f"of {_fmt(p.amount)} by {p.pay_by.isoformat()}, not yet due; "
                              f"cannot {action} before that day has passed", "invoice_id")


def overdue_invoices(books: Books, customer_id: str, day: date) -> list[InvoiceState]:
    """A customer's open invoices past due on ``day`` and not under dispute."""
    return [inv for inv in books.invoices.values()
            if inv.customer_id == customer_id and inv.open > 0 and inv.due_on < day
            and inv.invoice_id not in books.collections.open_disputes]


@handles(c.SendDunningLetter)
def send_dunning_letter(cmd: c.SendDunningLetter, books: Books,
                        ctx: Context) -> list[ev.Event]:
    """Send a letter of a level for an overdue, undisputed invoice without a running
    promise, once per level and never below a level already sent."""
    books.require_company()
    inv = _open_invoice(books, cmd.invoice_id)
    day = ctx.business_date
    days = (day - inv.due_on).days
    need = DUNNING_LEVEL_DAYS[cmd.level]
    if days < need:
        raise CommandRejected("not_due_for_level",
                              f"invoice {inv.invoice_id} is {days} days past due on "
                              f"{day.isoformat()} (due {inv.due_on.isoformat()}); a level "
                              f"{cmd.level} letter needs {need} or more", "level")
    _not_disputed(books, inv, "send it a dunning letter")
    _no_pending_promise(books, inv, day, "send it a dunning letter")
    sent = books.collections.levels.get(inv.invoice_id, 0)
    if sent >= cmd.level:
        raise CommandRejected("already_dunned",
                              f"invoice {inv.invoice_id} already had a level {sent} letter; "
                              f"a level {cmd.level} letter would not escalate", "level")
    lid = new_id(cmd.letter_id, books.collections.letters, "DUN", "dunning letter", books,
                 "letter_id")
    return [ev.DunningLetterSent(letter_id=lid, invoice_id=inv.invoice_id,
                                 customer_id=inv.customer_id, level=cmd.level, sent_on=day,
                                 days_past_due=days, amount=inv.open)]


@handles(c.RecordDispute)
def record_dispute(cmd: c.RecordDispute, books: Books, ctx: Context) -> list[ev.Event]:
    """Record a dispute of an open invoice not already under dispute."""
    books.require_company()
    inv = _open_invoice(books, cmd.invoice_id)
    _not_disputed(books, inv, "record another dispute")
    amount = inv.open if cmd.amount is None else cmd.amount
    require_positive(amount)
    if amount > inv.open:
        raise CommandRejected("exceeds_open_balance",
                              f"invoice {inv.invoice_id} has {_fmt(inv.open)} open; cannot "
                              f"dispute {_fmt(amount)}", "amount")
    did = new_id(cmd.dispute_id, books.collections.disputes, "DSP", "dispute", books,
                 "dispute_id")
    return [ev.InvoiceDisputed(dispute_id=did, invoice_id=inv.invoice_id,
                               customer_id=inv.customer_id, opened_on=ctx.business_date,
                               amount=amount, reason=cmd.reason)]


@handles(c.ResolveDispute)
def resolve_dispute(cmd: c.ResolveDispute, books: Books, ctx: Context) -> list[ev.Event]:
    """Resolve an open dispute by a credit memo (at most the disputed amount) or reject it."""
    company = books.require_company()
    d = books.collections.disputes.get(cmd.dispute_id)
    if d is None:
        raise UnknownEntity("dispute", cmd.dispute_id, "dispute_id")
    if d.outcome is not None:
        raise CommandRejected("dispute_resolved",
                              f"dispute {d.dispute_id} was already resolved ({d.outcome})",
                              "dispute_id")
    day = ctx.business_date
    if cmd.resolution == "rejected":
        if cmd.amount is not None or cmd.credit_memo_id is not None:
            raise CommandRejected("amount_not_allowed",
                                  "a rejected dispute credits nothing: leave out amount and "
                                  "credit_memo_id", "amount")
        return [ev.DisputeResolved(dispute_id=d.dispute_id, invoice_id=d.invoice_id,
                                   customer_id=d.customer_id, resolved_on=day,
                                   outcome="rejected", amount=0, credit_memo_id="",
                                   reason=cmd.reason)]
    if cmd.amount is None:
        raise CommandRejected("amount_required",
                              "a dispute resolved by credit memo needs the amount to credit",
                              "amount")
    if cmd.amount > d.amount:
        raise CommandRejected("exceeds_disputed_amount",
                              f"dispute {d.dispute_id} disputes {_fmt(d.amount)}; cannot "
                              f"credit {_fmt(cmd.amount)}", "amount")
    inv = _reduce_open_invoice(books, d.invoice_id, cmd.amount)
    require_open_period(books, day, "business_date")
    account = cmd.account or company.accounts.sales_returns
    require_non_control_account(books, account, "account")
    mid = new_id(cmd.credit_memo_id, books.credit_memos, "CM", "credit memo", books,
                 "credit_memo_id")
    return [ev.CreditMemoIssued(credit_memo_id=mid, invoice_id=d.invoice_id,
                                customer_id=d.customer_id, entry_date=day, amount=cmd.amount,
                                account=account, ar_account=inv.ar_account,
                                reason=f"dispute {d.dispute_id}: {cmd.reason}"),
            ev.DisputeResolved(dispute_id=d.dispute_id, invoice_id=d.invoice_id,
                               customer_id=d.customer_id, resolved_on=day, outcome="credited",
                               amount=cmd.amount, credit_memo_id=mid, reason=cmd.reason)]


@handles(c.RecordPromiseToPay)
def record_promise_to_pay(cmd: c.RecordPromiseToPay, books: Books,
                          ctx: Context) -> list[ev.Event]:
    """Record a promise to pay part or all of an open, undisputed invoice by a day within
    ``PROMISE_MAX_DAYS``, one running promise per invoice."""
    books.require_company()
    inv = _open_invoice(books, cmd.invoice_id)
    day = ctx.business_date
    _not_disputed(books, inv, "record a promise to pay")
    _no_pending_promise(books, inv, day, "record another promise")
    require_positive(cmd.amount)
    if cmd.amount > inv.open:
        raise CommandRejected("exceeds_open_balance",
                              f"invoice {inv.invoice_id} has {_fmt(inv.open)} open; a promise "
                              f"of {_fmt(cmd.amount)} is more than is owed", "amount")
    if cmd.pay_by < day or cmd.pay_by > day + timedelta(days=PROMISE_MAX_DAYS):
        raise CommandRejected("invalid_promise_date",
                              f"pay_by {cmd.pay_by.isoformat()} must be from today "
                              f"({day.isoformat()}) to {PROMISE_MAX_DAYS} days ahead",
                              "pay_by")
    pid = new_id(cmd.promise_id, books.collections.promises, "PTP", "promise to pay", books,
                 "promise_id")
    return [ev.PromiseToPayRecorded(promise_id=pid, invoice_id=inv.invoice_id,
                                    customer_id=inv.customer_id, recorded_on=day,
                                    pay_by=cmd.pay_by, amount=cmd.amount, balance=inv.open,
                                    note=cmd.note)]


@handles(c.PlaceCreditHold)
def place_credit_hold(cmd: c.PlaceCreditHold, books: Books, ctx: Context) -> list[ev.Event]:
    """Put a customer not already on hold on credit hold."""
    books.require_company()
    cust = books.customer(cmd.customer_id)
    held = books.collections.on_hold.get(cust.customer_id)
    if held is not None:
        raise CommandRejected("already_on_hold",
                              f"customer {cust.customer_id} is already on credit hold {held}",
                              "customer_id")
    if cmd.credit_limit < 0:
        raise CommandRejected("non_positive_amount",
                              f"credit_limit cannot be negative (got {_fmt(cmd.credit_limit)})",
                              "credit_limit")
    hid = new_id(cmd.hold_id, books.collections.holds, "HOLD", "credit hold", books, "hold_id")
    return [ev.CreditHoldPlaced(hold_id=hid, customer_id=cust.customer_id,
                                placed_on=ctx.business_date, credit_limit=cmd.credit_limit,
                                reason=cmd.reason)]


@handles(c.ReleaseCreditHold)
def release_credit_hold(cmd: c.ReleaseCreditHold, books: Books,
                        ctx: Context) -> list[ev.Event]:
    """Release a customer's hold: a clerk only once no undisputed invoice is overdue, a
    controller at any time."""
    books.require_company()
    cust = books.customer(cmd.customer_id)
    hid = books.collections.on_hold.get(cust.customer_id)
    if hid is None:
        raise CommandRejected("not_on_hold",
                              f"customer {cust.customer_id} is not on credit hold",
                              "customer_id")
    overdue = overdue_invoices(books, cust.customer_id, ctx.business_date)
    if overdue and ctx.role not in MANAGERS:
        listed = ", ".join(f"{i.invoice_id} ({_fmt(i.open)})" for i in overdue[:5])
        raise CommandRejected("overdue_balance_open",
                              f"customer {cust.customer_id} still has {len(overdue)} "
                              f"overdue undisputed invoice(s): {listed}; a clerk releases a "
                              "hold once they are paid (a controller may release it anyway)",
                              "customer_id")
    return [ev.CreditHoldReleased(hold_id=hid, customer_id=cust.customer_id,
                                  released_on=ctx.business_date, reason=cmd.reason,
                                  released_by_role=ctx.role)]


# --- payables --------------------------------------------------------------------


@handles(c.EnterBill)
def enter_bill(cmd: c.EnterBill, books: Books, ctx: Context) -> list[ev.Event]:
    """Enter a vendor invoice; its number must be new for that vendor."""
    company = books.require_company()
    vendor = books.vendor(cmd.vendor_id)
    require_open_period(books, cmd.entry_date)
    number = cmd.vendor_invoice_number.strip()
    if document_number_key(number) in vendor.invoice_numbers:
        raise CommandRejected("duplicate_vendor_invoice",
                              f"vendor {vendor.vendor_id} invoice {number!r} is already "
                              "entered", "vendor_invoice_number")
    bid = new_id(cmd.bill_id, books.bills, "BILL", "bill", books, "bill_id")
    lines = []
    for n, line in enumerate(cmd.lines):
        account = line.account or company.accounts.expense
        acct = require_account(books, account, f"lines[{n}].account")
        if acct.control is not None:
            raise CommandRejected("control_account_restricted",
                                  f"lines[{n}].account {account} is a control account",
                                  f"lines[{n}].account")
        require_positive(line.amount, f"lines[{n}].amount")
        lines.append(ev.BillLine(description=line.description, amount=line.amount,
                                 account=account))
    if cmd.tax < 0:
        raise CommandRejected("non_positive_amount",
                              f"tax cannot be negative (got {_fmt(cmd.tax)})", "tax")
    total = sum(line.amount for line in lines) + cmd.tax
    due_on = _due(cmd.entry_date, vendor.terms_days, cmd.due_on)
    entered: list[ev.Event] = [ev.BillEntered(
        bill_id=bid, vendor_id=cmd.vendor_id, vendor_invoice_number=number,
        entry_date=cmd.entry_date, due_on=due_on, lines=tuple(lines), tax=cmd.tax, total=total,
        ap_account=company.accounts.ap, tax_account=company.accounts.tax_payable)]
    terms = _discount_terms(cmd, total, due_on)
    if terms is not None:
        entered.append(ev.BillTermsSet(bill_id=bid, vendor_id=cmd.vendor_id,
                                       discount=terms[0], discount_until=terms[1]))
    return entered


def _discount_terms(cmd: c.EnterBill, total: int, due_on: date) -> tuple[int, date] | None:
    """A bill's early-payment discount and its last day, checked; None when it has none."""
    if cmd.discount == 0 and cmd.discount_until is None:
        return None
    if cmd.discount_until is None:
        raise CommandRejected("invalid_terms", f"discount {_fmt(cmd.discount)} needs "
                              "discount_until, the last day a payment may take it",
                              "discount_until")
    if not 0 < cmd.discount < total:
        raise CommandRejected("invalid_terms", f"discount {_fmt(cmd.discount)} must be more "
                              f"than 0.00 and less than the bill's total {_fmt(total)}",
                              "discount")
    if not cmd.entry_date <= cmd.discount_until <= due_on:
        raise CommandRejected("invalid_terms", f"discount_until "
                              f"{cmd.discount_until.isoformat()} must fall from the bill's date "
                              f"{cmd.entry_date.isoformat()} to its due date "
                              f"{due_on.isoformat()}", "discount_until")
    return cmd.discount, cmd.discount_until


@handles(c.ApproveBill)
def approve_bill(cmd: c.ApproveBill, books: Books, ctx: Context) -> list[ev.Event]:
    """Approve a bill for payment."""
    if ctx.role == "clerk" and not books.policies.clerk_may_approve_bills:
        raise CommandRejected("forbidden_for_role",
                              f"{ctx.actor} (role clerk) may not approve bills under the "
                              "company's policy; needs role controller")
    bill = books.bill(cmd.bill_id)
    if bill.approved:
        raise CommandRejected("already_approved", f"bill {bill.bill_id} is already approved",
                              "bill_id")
    return [ev.BillApproved(bill_id=bill.bill_id, vendor_id=bill.vendor_id)]


@handles(c.RecordVendorCredit)
def record_vendor_credit(cmd: c.RecordVendorCredit, books: Books,
                         ctx: Context) -> list[ev.Event]:
    """Record a vendor credit note."""
    company = books.require_company()
    vendor = books.vendor(cmd.vendor_id)
    require_positive(cmd.amount)
    require_open_period(books, cmd.entry_date)
    number = cmd.vendor_credit_number.strip()
    if document_number_key(number) in vendor.credit_numbers:
        raise CommandRejected("duplicate_vendor_invoice",
                              f"vendor {vendor.vendor_id} credit note {number!r} is already "
                              "recorded", "vendor_credit_number")
    account = cmd.account or company.accounts.expense
    acct = require_account(books, account, "account")
    if acct.control is not None:
        raise CommandRejected("control_account_restricted",
                              f"account {account} is a control account", "account")
    cid = new_id(cmd.credit_id, books.vendor_credits, "VC", "vendor credit", books, "credit_id")
    return [ev.VendorCreditRecorded(credit_id=cid, vendor_id=cmd.vendor_id,
                                    vendor_credit_number=number, entry_date=cmd.entry_date,
                                    amount=cmd.amount, account=account,
                                    ap_account=company.accounts.ap)]


@handles(c.ApplyVendorCredit)
def apply_vendor_credit(cmd: c.ApplyVendorCredit, books: Books, ctx: Context) -> list[ev.Event]:
    """Apply a vendor credit to a bill of the same vendor."""
    credit = books.vendor_credits.get(cmd.credit_id)
    if credit is None:
        raise CommandRejected("unknown_vendor_credit", f"no vendor credit {cmd.credit_id!r}",
                              "credit_id")
    bill = books.bill(cmd.bill_id)
    require_positive(cmd.amount)
    if bill.vendor_id != credit.vendor_id:
        raise CommandRejected("vendor_mismatch",
                              f"credit {credit.credit_id} is from vendor {credit.vendor_id}, "
                              f"bill {bill.bill_id} from {bill.vendor_id}", "bill_id")
    if cmd.amount > credit.open:
        raise CommandRejected("over_application",
                              f"credit {credit.credit_id} has {_fmt(credit.open)} left, cannot "
                              f"apply {_fmt(cmd.amount)}", "amount")
    if cmd.amount > bill.open:
        raise CommandRejected("exceeds_open_balance",
                              f"bill {bill.bill_id} has {_fmt(bill.open)} open, cannot apply "
                              f"{_fmt(cmd.amount)}", "amount")
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    return [ev.VendorCreditApplied(credit_id=credit.credit_id, bill_id=bill.bill_id,
                                   vendor_id=bill.vendor_id, entry_date=day, amount=cmd.amount,
                                   ap_account=credit.ap_account)]


def _payment_events(books: Books, *, payment_id: str, vendor_id: str, bank_account_id: str,
                    day: date, applications: list[tuple[str, int]], run_id: str | None,
                    ) -> ev.VendorPaid:
    company = books.require_company()
    vendor = books.vendor(vendor_id)
    bank = books.bank_account(bank_account_id)
    if vendor.bank is None:
        raise CommandRejected("no_bank_details",
                              f"vendor {vendor_id} has no approved bank details to pay to",
                              "vendor_id")
    seen: dict[str, int] = {}
    for n, (bill_id, amount) in enumerate(applications):
        field = f"applications[{n}]"
        bill = books.bill(bill_id, f"{field}.bill_id")
        require_positive(amount, f"{field}.amount")
        if bill.vendor_id != vendor_id:
            raise CommandRejected("vendor_mismatch", f"bill {bill_id} belongs to vendor "
                                  f"{bill.vendor_id}, not {vendor_id}", f"{field}.bill_id")
        if not bill.approved:
            raise CommandRejected("bill_not_approved",
                                  f"bill {bill_id} is not approved; approve it before paying",
                                  f"{field}.bill_id")
        require_not_on_hold(books, bill_id, f"{field}.bill_id")
        twice = bill_id in seen
        seen[bill_id] = seen.get(bill_id, 0) + amount
        if seen[bill_id] > bill.open:
            raise CommandRejected("exceeds_open_balance",
                                  f"bill {bill_id} has {_fmt(bill.open)} open, cannot pay "
                                  f"{_fmt(seen[bill_id])}", f"{field}.amount")
        if twice:  # one payment touches a bill's document once (its history is per event)
            raise CommandRejected("duplicate_id",
                                  f"applications list bill {bill_id} twice; pay "
                                  f"{_fmt(seen[bill_id])} in one application",
                                  f"{field}.bill_id")
    total = sum(a for _, a in applications)
    return ev.VendorPaid(payment_id=payment_id, vendor_id=vendor_id, run_id=run_id,
                         bank_account_id=bank_account_id, entry_date=day, amount=total,
                         paid_to=vendor.bank,
                         applications=tuple(ev.BillApplication(bill_id=b, amount=a)
                                            for b, a in applications),
                         bank_gl_account=bank.gl_account, ap_account=company.accounts.ap)


def require_cash_policy(books: Books, bank_account_id: str, paying: int, what: str) -> None:
    """Reject a payment that would take the bank account's book balance below the
    company's minimum (``Policies.minimum_bank_balance``; none set: no limit)."""
    floor = books.policies.minimum_bank_balance
    if floor is None:
        return
    bank = books.bank_account(bank_account_id)
    after = bank.balance - paying
    if after < floor:
        raise CommandRejected(
            "cash_policy",
            f"{what} of {_fmt(paying)} would take bank account {bank_account_id} from "
            f"{_fmt(bank.balance)} to {_fmt(after)}, below the cash policy's minimum balance "
            f"of {_fmt(floor)}; pay fewer bills (those due first) or fund the account first",
            "bank_account_id")


def _payment_ids(books: Books) -> dict[str, BankDocState]:
    return books.bank_docs["payment"]


@handles(c.PayVendor)
def pay_vendor(cmd: c.PayVendor, books: Books, ctx: Context) -> list[ev.Event]:
    """Pay approved bills of one vendor to its approved bank details."""
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    taken = _payment_ids(books)
    pid = new_id(cmd.payment_id, taken, "PAY", "payment", books, "payment_id")
    paid = _payment_events(books, payment_id=pid, vendor_id=cmd.vendor_id,
                           bank_account_id=cmd.bank_account_id, day=day,
                           applications=[(a.bill_id, a.amount) for a in cmd.applications],
                           run_id=None)
    require_cash_policy(books, cmd.bank_account_id, paid.amount, f"payment {pid}")
    return [paid]


PURCHASE_DISCOUNTS = "4950"
"""The purchase-discounts account of the ``services-with-terms`` chart (the default)."""


@handles(c.PayBillWithDiscount)
def pay_bill_with_discount(cmd: c.PayBillWithDiscount, books: Books,
                           ctx: Context) -> list[ev.Event]:
    """Pay a bill in full less its early-payment discount, on or before its discount date.

    The ledger enforces the terms: a discount is taken only on a bill that has one, only
    as its terms give it, only by its date, and only with the payment that settles the
    whole bill (a discount lost is not takeable).
    """
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    bill = books.bill(cmd.bill_id)
    require_positive(cmd.discount, "discount")
    if bill.discount_until is None:
        raise CommandRejected("no_discount_terms",
                              f"bill {bill.bill_id} has no early-payment discount terms; pay "
                              "it in full (PayVendor or RunPayments)", "bill_id")
    if max(day, ctx.business_date) > bill.discount_until:
        # The day the payment is made counts, not only the date it is given: a payment made
        # after the discount's last day and dated back into it does not earn the discount.
        made = ("" if ctx.business_date <= day else
                f" made on {ctx.business_date.isoformat()} and")
        raise CommandRejected("discount_lost",
                              f"bill {bill.bill_id}'s early-payment discount of "
                              f"{_fmt(bill.discount)} could be taken until "
                              f"{bill.discount_until.isoformat()}; a payment{made} dated "
                              f"{day.isoformat()} cannot claim it (the discount is lost: pay "
                              f"the full {_fmt(bill.open)})", "entry_date")
    if cmd.discount != bill.discount:
        raise CommandRejected("discount_mismatch",
                              f"bill {bill.bill_id}'s terms give a discount of "
                              f"{_fmt(bill.discount)}, not {_fmt(cmd.discount)}", "discount")
    if bill.open != bill.total:
        raise CommandRejected("partly_settled",
                              f"bill {bill.bill_id} has {_fmt(bill.open)} of "
                              f"{_fmt(bill.total)} open; a discount is taken only with the "
                              "payment that settles the whole bill", "bill_id")
    account = cmd.account or PURCHASE_DISCOUNTS
    require_non_control_account(books, account, "account")
    pid = new_id(cmd.payment_id, _payment_ids(books), "PAY", "payment", books, "payment_id")
    paid = _payment_events(books, payment_id=pid, vendor_id=bill.vendor_id,
                           bank_account_id=cmd.bank_account_id, day=day,
                           applications=[(bill.bill_id, bill.open - cmd.discount)],
                           run_id=None)
    require_cash_policy(books, cmd.bank_account_id, paid.amount, f"payment {pid}")
    return [ev.PurchaseDiscountTaken(bill_id=bill.bill_id, vendor_id=bill.vendor_id,
                                     payment_id=pid, entry_date=day, amount=cmd.discount,
                                     ap_account=bill.ap_account, discount_account=account),
            paid]


@handles(c.RunPayments)
def run_payments(cmd: c.RunPayments, books: Books, ctx: Context) -> list[ev.Event]:
    """Pay approved open bills (listed, or due by a date), one payment per vendor."""
    day = cmd.entry_date or ctx.business_date
    require_open_period(books, day)
    books.bank_account(cmd.bank_account_id)
    if cmd.bill_ids is not None:
        bills = [books.bill(b, "bill_ids") for b in cmd.bill_ids]
        if len(set(cmd.bill_ids)) != len(cmd.bill_ids):
            twice = sorted({b for b in cmd.bill_ids if cmd.bill_ids.count(b) > 1})
            raise CommandRejected("duplicate_id", f"bill_ids lists {', '.join(twice)} twice",
                                  "bill_ids")
    else:
        due_by = cmd.due_by or day
        bills = sorted((b for b in books.bills.values()
                        if b.approved and b.open > 0 and b.due_on <= due_by
                        and books.purchasing.on_hold(b.bill_id) is None),
                       key=lambda b: (b.vendor_id, b.bill_id))
    if not bills:
        raise CommandRejected("nothing_to_pay", "no approved open bill "
                              + ("is listed in bill_ids" if cmd.bill_ids is not None
                                 else f"is due by {(cmd.due_by or day).isoformat()}"),
                              "bill_ids")
    run_id = new_id(cmd.run_id, books.payment_runs, "RUN", "payment run", books, "run_id")
    by_vendor: dict[str, list[tuple[str, int]]] = {}
    for b in bills:
        if b.open <= 0:
            raise CommandRejected("exceeds_open_balance", f"bill {b.bill_id} is already paid",
                                  "bill_ids")
        by_vendor.setdefault(b.vendor_id, []).append((b.bill_id, b.open))
    taken = _Taken(_payment_ids(books))
    payments: list[ev.VendorPaid] = []
    for vendor_id in sorted(by_vendor):
        pid = books.next_id("PAY", taken)
        taken.add(pid)
        payments.append(_payment_events(books, payment_id=pid, vendor_id=vendor_id,
                                        bank_account_id=cmd.bank_account_id, day=day,
                                        applications=by_vendor[vendor_id], run_id=run_id))
    refs = tuple(ev.PaymentRef(payment_id=p.payment_id, vendor_id=p.vendor_id,
                               amount=p.amount) for p in payments)
    vendors = f"{len(refs)} vendor{'' if len(refs) == 1 else 's'}"
    require_cash_policy(books, cmd.bank_account_id, sum(r.amount for r in refs),
                        f"payment run {run_id} to {vendors}")
    run = ev.PaymentRunCreated(run_id=run_id, bank_account_id=cmd.bank_account_id,
                               entry_date=day, payments=refs, total=sum(r.amount for r in refs))
    return [run, *payments]


# --- bank ------------------------------------------------------------------------


@handles(c.ImportStatementLines)
def import_statement_lines(cmd: c.ImportStatementLines, books: Books,
                           ctx: Context) -> list[ev.Event]:
    """Import bank statement lines (ids must be new)."""
    books.bank_account(cmd.bank_account_id)
    out: list[ev.Event] = []
    taken = _Taken(books.statement_lines)
    for n, line in enumerate(cmd.lines):
        if line.amount == 0:
            raise CommandRejected("non_positive_amount", f"lines[{n}].amount is zero",
                                  f"lines[{n}].amount")
        lid = new_id(line.line_id, taken, "SL", "statement line", books, f"lines[{n}].line_id")
        taken.add(lid)
        out.append(ev.StatementLineImported(
            line_id=lid, bank_account_id=cmd.bank_account_id, entry_date=line.entry_date,
            amount=line.amount, description=line.description, reference=line.reference,
            counterparty=line.counterparty, bank_ref=line.bank_ref))
    return out


def _match_target(books: Books, ref: c.MatchRef, bank_account_id: str,
                  field: str) -> ev.MatchTarget:
    if ref.kind == "receipt":
        r = books.receipt(ref.doc_id, field)
        bank_id, amount, matched = r.bank_account_id, r.amount, r.matched_line
    else:
        doc = books.bank_docs[ref.kind].get(ref.doc_id)
        if doc is None:
            raise CommandRejected(f"unknown_{ref.kind}", f"no {ref.kind} {ref.doc_id!r}", field)
        bank_id, amount, matched = doc.bank_account_id, doc.amount, doc.matched_line
    if bank_id != bank_account_id:
        raise CommandRejected("bank_account_mismatch",
                              f"{ref.kind} {ref.doc_id} moved bank account {bank_id}, the line "
                              f"is on {bank_account_id}", field)
    if matched is not None:
        raise CommandRejected("target_already_matched",
                              f"{ref.kind} {ref.doc_id} is already matched to statement line "
                              f"{matched}", field)
    return ev.MatchTarget(kind=ref.kind, doc_id=ref.doc_id, amount=amount)


def _match(books: Books, line_id: str, refs: Iterable[c.MatchRef]) -> ev.StatementLineMatched:
    line = books.statement_lines.get(line_id)
    if line is None:
        raise CommandRejected("unknown_statement_line", f"no statement line {line_id!r}",
                              "line_id")
    if line.targets:
        raise CommandRejected("already_matched", f"statement line {line_id} is already matched "
                              f"to {', '.join(t.doc_id for t in line.targets)}", "line_id")
    require_not_bank_error(books, line_id)
    refs = list(refs)
    if len({(r.kind, r.doc_id) for r in refs}) != len(refs):
        keys = [(r.kind, r.doc_id) for r in refs]
        twice = sorted({f"{k} {d}" for k, d in keys if keys.count((k, d)) > 1})
        raise CommandRejected("duplicate_id", f"targets lists {', '.join(twice)} twice",
                              "targets")
    targets = tuple(_match_target(books, r, line.bank_account_id, f"targets[{n}]")
                    for n, r in enumerate(refs))
    total = sum(t.amount for t in targets)
    if total != line.amount:
        raise CommandRejected("match_amount_mismatch",
                              f"statement line {line_id} is {_fmt(line.amount)}, the documents "
                              f"total {_fmt(total)}", "targets")
    return ev.StatementLineMatched(line_id=line_id, bank_account_id=line.bank_account_id,
                                   targets=targets)


@handles(c.MatchStatementLine)
def match_statement_line(cmd: c.MatchStatementLine, books: Books, ctx: Context) -> list[ev.Event]:
    """Match a statement line to book documents of the same amount."""
    return [_match(books, cmd.line_id, cmd.targets)]


@handles(c.UnmatchStatementLine)
def unmatch_statement_line(cmd: c.UnmatchStatementLine, books: Books,
                           ctx: Context) -> list[ev.Event]:
    """Undo a statement line's match."""
    line = books.statement_lines.get(cmd.line_id)
    if line is None:
        raise CommandRejected("unknown_statement_line", f"no statement line {cmd.line_id!r}",
                              "line_id")
    if not line.targets:
        raise CommandRejected("not_matched", f"statement line {cmd.line_id} is not matched",
                              "line_id")
    return [ev.StatementLineUnmatched(line_id=line.line_id, bank_account_id=line.bank_account_id,
                                      targets=line.targets)]


def _bank_entry(books: Books, kind: str, given: str | None, prefix: str, bank_account_id: str,
                day: date, amount: int, account: str | None, default_account: str,
                line_id: str | None) -> tuple[str, str, str]:
    books.require_company()
    bank = books.bank_account(bank_account_id)
    require_positive(amount)
    require_open_period(books, day)
    acct = require_account(books, account or default_account, "account")
    if acct.control is not None:
        raise CommandRejected("control_account_restricted",
                              f"account {acct.code} is a control account", "account")
    taken = books.bank_docs[kind]
    doc_id = new_id(given, taken, prefix, kind, books, f"{kind}_id")
    if line_id is not None and line_id not in books.statement_lines:
        raise CommandRejected("unknown_statement_line", f"no statement line {line_id!r}",
                              "line_id")
    return doc_id, bank.gl_account, acct.code


def _with_match(books: Books, e: ev.Event, kind: ev.MatchKind, doc_id: str, bank_account_id: str,
                amount: int, line_id: str | None) -> list[ev.Event]:
    if line_id is None:
        return [e]
    line = books.statement_lines[line_id]
    if line.targets:
        raise CommandRejected("already_matched", f"statement line {line_id} is already matched",
                              "line_id")
    require_not_bank_error(books, line_id)
    if line.bank_account_id != bank_account_id:
        raise CommandRejected("bank_account_mismatch", f"statement line {line_id} is on bank "
                              f"account {line.bank_account_id}", "line_id")
    if line.amount != amount:
        raise CommandRejected("match_amount_mismatch", f"statement line {line_id} is "
                              f"{_fmt(line.amount)}, the {kind} is {_fmt(amount)}", "amount")
    target = ev.MatchTarget(kind=kind, doc_id=doc_id, amount=amount)
    return [e, ev.StatementLineMatched(line_id=line_id, bank_account_id=bank_account_id,
                                       targets=(target,))]


@handles(c.RecordBankFee)
def record_bank_fee(cmd: c.RecordBankFee, books: Books, ctx: Context) -> list[ev.Event]:
    """Record a bank fee (and match its statement line when given)."""
    company = books.require_company()
    fid, bank_gl, account = _bank_entry(books, "fee", cmd.fee_id, "FEE", cmd.bank_account_id,
                                        cmd.entry_date, cmd.amount, cmd.account,
                                        company.accounts.bank_fees, cmd.line_id)
    e = ev.BankFeeRecorded(fee_id=fid, bank_account_id=cmd.bank_account_id,
                           entry_date=cmd.entry_date, amount=cmd.amount, account=account,
                           bank_gl_account=bank_gl, memo=cmd.memo)
    return _with_match(books, e, "fee", fid, cmd.bank_account_id, -cmd.amount, cmd.line_id)


@handles(c.RecordInterest)
def record_interest(cmd: c.RecordInterest, books: Books, ctx: Context) -> list[ev.Event]:
    """Record bank interest (and match its statement line when given)."""
    company = books.require_company()
    iid, bank_gl, account = _bank_entry(books, "interest", cmd.interest_id, "INT",
                                        cmd.bank_account_id, cmd.entry_date, cmd.amount,
                                        cmd.account, company.accounts.interest_income,
                                        cmd.line_id)
    e = ev.InterestRecorded(interest_id=iid, bank_account_id=cmd.bank_account_id,
                            entry_date=cmd.entry_date, amount=cmd.amount, account=account,
                            bank_gl_account=bank_gl, memo=cmd.memo)
    return _with_match(books, e, "interest", iid, cmd.bank_account_id, cmd.amount, cmd.line_id)


# --- general ledger --------------------------------------------------------------


def _journal_lines(books: Books, lines: tuple[c.JournalLineIn, ...], ctx: Context, *,
                   opening: bool) -> tuple[ev.JournalLine, ...]:
    out = []
    for n, line in enumerate(lines):
        field = f"lines[{n}]"
        acct = require_account(books, line.account, f"{field}.account")
        amount = line.signed
        if amount == 0:
            raise CommandRejected("non_positive_amount", f"{field} has a zero amount",
                                  f"{field}.amount")
        if ((line.debit is not None and line.debit < 0)
                or (line.credit is not None and line.credit < 0)):
            raise CommandRejected("non_positive_amount",
                                  f"{field}: debit and credit must be positive (got "
                                  f"{_fmt(-amount if line.credit is not None else amount)})",
                                  field)
        if acct.control is not None:
            if opening:
                raise CommandRejected(
                    "control_account_restricted",
                    f"{field}.account {acct.code} is the {acct.control} control account; its "
                    "opening balance comes from its documents (invoices, bills, bank account)",
                    f"{field}.account")
            if ctx.role == "clerk" and not books.policies.clerk_may_post_to_control_accounts:
                raise CommandRejected(
                    "control_account_restricted",
                    f"{field}.account {acct.code} is the {acct.control} control account; the "
                    "company's policy does not let a clerk post journal entries to it (use "
                    "the documents of its subledger instead)", f"{field}.account")
        out.append(ev.JournalLine(account=acct.code, amount=amount, party=line.party,
                                  memo=line.memo))
    total = sum(line.amount for line in out)
    if total != 0:
        debits = sum(line.amount for line in out if line.amount > 0)
        raise CommandRejected("unbalanced_entry",
                              f"debits {_fmt(debits)} != credits {_fmt(debits - total)} "
                              f"(difference {_fmt(total)})", "lines")
    return tuple(out)


@handles(c.PostJournalEntry)
def post_journal_entry(cmd: c.PostJournalEntry, books: Books, ctx: Context) -> list[ev.Event]:
    """Post a balanced manual journal entry."""
    books.require_company()
    require_open_period(books, cmd.entry_date)
    lines = _journal_lines(books, cmd.lines, ctx, opening=False)
    jid = new_id(cmd.entry_id, books.journal, "JE", "journal entry", books, "entry_id")
    return [ev.JournalEntryPosted(entry_id=jid, entry_date=cmd.entry_date, kind="manual",
                                  memo=cmd.memo, lines=lines)]


@handles(c.PostOpeningBalances)
def post_opening_balances(cmd: c.PostOpeningBalances, books: Books,
                          ctx: Context) -> list[ev.Event]:
    """Post opening balances of non-control accounts."""
    require_role(ctx, MANAGERS, "post opening balances")
    books.require_company()
    require_open_period(books, cmd.entry_date)
    lines = _journal_lines(books, cmd.lines, ctx, opening=True)
    jid = new_id(cmd.entry_id, books.journal, "JE", "journal entry", books, "entry_id")
    return [ev.JournalEntryPosted(entry_id=jid, entry_date=cmd.entry_date, kind="opening",
                                  memo=cmd.memo, lines=lines)]


@handles(c.ReverseJournalEntry)
def reverse_journal_entry(cmd: c.ReverseJournalEntry, books: Books,
                          ctx: Context) -> list[ev.Event]:
    """Reverse a journal entry (once) by negating every line."""
    entry = books.journal.get(cmd.entry_id)
    if entry is None:
        raise CommandRejected("unknown_journal_entry", f"no journal entry {cmd.entry_id!r}",
                              "entry_id")
    if entry.is_reversal:
        raise CommandRejected("cannot_reverse_reversal",
                              f"journal entry {cmd.entry_id} is itself a reversal; post a new "
                              "entry instead", "entry_id")
    if entry.reversed_by is not None:
        raise CommandRejected("already_reversed", f"journal entry {cmd.entry_id} was already "
                              f"reversed by {entry.reversed_by}", "entry_id")
    require_open_period(books, cmd.entry_date)
    if ctx.role == "clerk" and entry.kind == "opening":
        raise CommandRejected("forbidden_for_role",
                              f"journal entry {cmd.entry_id} holds opening balances; only a "
                              "controller may reverse it", "entry_id")
    if ctx.role == "clerk" and not books.policies.clerk_may_post_to_control_accounts:
        for line in entry.lines:
            if books.accounts[line.account].control is not None:
                raise CommandRejected("control_account_restricted",
                                      f"journal entry {cmd.entry_id} touches control account "
                                      f"{line.account}; a clerk may not reverse it",
                                      "entry_id")
    rid = new_id(cmd.reversal_id, books.journal, "JE", "journal entry", books, "reversal_id")
    lines = tuple(ev.JournalLine(account=x.account, amount=-x.amount, party=x.party,
                                 memo=x.memo) for x in entry.lines)
    return [ev.JournalEntryReversed(entry_id=cmd.entry_id, reversal_id=rid,
                                    entry_date=cmd.entry_date,
                                    memo=cmd.memo or f"reversal of {cmd.entry_id}", lines=lines)]



# --- purchasing: purchase orders, goods receipts, three-way match, holds -------------

GRNI_ACCOUNT = "2050"
"""Goods received not invoiced: the accrual a goods receipt credits and its bill clears
(the ``services-with-purchasing`` chart)."""
PRICE_VARIANCE_ACCOUNT = "5900"
"""Purchase price variance: what a matched bill bills above (or below) the PO's price."""


def _purchasing_account(books: Books, code: str, what: str) -> str:
    """A purchasing posting account, or ``unknown_account`` naming the chart it needs."""
    if code not in books.accounts:
        raise CommandRejected("unknown_account",
                              f"the books have no account {code} ({what}); purchase orders "
                              "need the services-with-purchasing chart", "po_id")
    return code


def require_not_on_hold(books: Books, bill_id: str, field: str = "bill_id") -> None:
    """Reject paying a bill whose matching hold stands (``bill_on_hold``)."""
    hold = books.purchasing.on_hold(bill_id)
    if hold is not None:
        why = "; ".join(r.detail for r in hold.reasons)
        raise CommandRejected("bill_on_hold",
                              f"bill {bill_id} is on hold ({why}); it cannot be paid until an "
                              "approver releases the hold (ReleaseBillHold)", field)


def _lines_once(lines: Iterable[c.GoodsReceiptLineIn | c.MatchedBillLineIn]) -> None:
    seen: set[int] = set()
    for n, x in enumerate(lines):
        if x.line in seen:
            raise CommandRejected("duplicate_line", f"lines[{n}] names PO line {x.line} "
                                  "again; give each line once", f"lines[{n}].line")
        seen.add(x.line)


@handles(c.IssuePurchaseOrder)
def issue_purchase_order(cmd: c.IssuePurchaseOrder, books: Books,
                         ctx: Context) -> list[ev.Event]:
    """Issue a purchase order: a commitment to a vendor at agreed prices (no posting)."""
    company = books.require_company()
    books.vendor(cmd.vendor_id)
    if cmd.expected_on is not None and cmd.expected_on < cmd.order_date:
        raise CommandRejected("invalid_date", f"expected_on {cmd.expected_on.isoformat()} is "
                              f"before the order date {cmd.order_date.isoformat()}",
                              "expected_on")
    po_id = new_id(cmd.po_id, books.purchasing.orders, "PO", "purchase order", books, "po_id")
    lines = []
    for n, x in enumerate(cmd.lines, start=1):
        require_positive(x.unit_price, f"lines[{n - 1}].unit_price")
        account = x.account or company.accounts.expense
        acct = require_account(books, account, f"lines[{n - 1}].account")
        if acct.control is not None:
            raise CommandRejected("control_account_restricted",
                                  f"lines[{n - 1}].account {account} is a control account",
                                  f"lines[{n - 1}].account")
        lines.append(ev.PurchaseOrderLine(line=n, item=x.item.strip(),
                                          description=x.description.strip(),
                                          quantity=x.quantity, unit_price=x.unit_price,
                                          amount=x.quantity * x.unit_price, account=account))
    return [ev.PurchaseOrderIssued(po_id=po_id, vendor_id=cmd.vendor_id,
                                   order_date=cmd.order_date, expected_on=cmd.expected_on,
                                   lines=tuple(lines), total=sum(x.amount for x in lines))]


@handles(c.RecordGoodsReceipt)
def record_goods_receipt(cmd: c.RecordGoodsReceipt, books: Books,
                         ctx: Context) -> list[ev.Event]:
    """Record goods received against PO lines: Dr the lines' accounts, Cr GRNI."""
    order = books.purchasing.order(cmd.po_id)
    require_open_period(books, cmd.entry_date)
    if cmd.entry_date < order.order_date:
        raise CommandRejected("before_order", f"entry_date {cmd.entry_date.isoformat()} is "
                              f"before purchase order {order.po_id}'s date "
                              f"{order.order_date.isoformat()}", "entry_date")
    grni = _purchasing_account(books, GRNI_ACCOUNT, "goods received not invoiced")
    _lines_once(cmd.lines)
    rid = new_id(cmd.receipt_id, books.purchasing.receipts, "GR", "goods receipt", books,
                 "receipt_id")
    received = []
    for n, x in enumerate(cmd.lines):
        line = order.lines.get(x.line)
        if line is None:
            raise CommandRejected("unknown_po_line", f"purchase order {order.po_id} has no "
                                  f"line {x.line} (lines 1 to {len(order.lines)})",
                                  f"lines[{n}].line")
        left = line.quantity - line.received
        if x.quantity > left:
            raise CommandRejected("over_receipt",
                                  f"purchase order {order.po_id} line {x.line} ({line.item}) "
                                  f"ordered {line.quantity}, {line.received} received; cannot "
                                  f"receive {x.quantity} more (at most {left})",
                                  f"lines[{n}].quantity")
        received.append(ev.ReceivedLine(line=x.line, item=line.item, quantity=x.quantity,
                                        unit_price=line.unit_price,
                                        amount=x.quantity * line.unit_price,
                                        account=line.account))
    return [ev.GoodsReceived(receipt_id=rid, po_id=order.po_id, vendor_id=order.vendor_id,
                             entry_date=cmd.entry_date, reference=cmd.reference.strip(),
                             lines=tuple(received), total=sum(x.amount for x in received),
                             grni_account=grni)]


def _exceeds(actual: int, allowed: int, tolerance_bp: int | None) -> bool:
    """Whether ``actual`` is above ``allowed`` plus its tolerance (basis points of it)."""
    return actual * 10_000 > allowed * (10_000 + (tolerance_bp or 0))


@handles(c.EnterMatchedBill)
def enter_matched_bill(cmd: c.EnterMatchedBill, books: Books, ctx: Context) -> list[ev.Event]:
    """Enter a vendor invoice against its PO and receipts (three-way match).

    The bill posts Dr GRNI at the PO's price for every unit billed, Dr (or Cr) purchase
    price variance for the difference of price, Cr AP. A line billing a unit above the PO
    price beyond the price tolerance, or billing more of a PO line than was received beyond
    the quantity tolerance, puts the bill on hold: it stays in payables but cannot be paid.
    """
    company = books.require_company()
    order = books.purchasing.order(cmd.po_id)
    vendor = books.vendor(order.vendor_id)
    require_open_period(books, cmd.entry_date)
    number = cmd.vendor_invoice_number.strip()
    if document_number_key(number) in vendor.invoice_numbers:
        raise CommandRejected("duplicate_vendor_invoice",
                              f"vendor {vendor.vendor_id} invoice {number!r} is already "
                              "entered", "vendor_invoice_number")
    grni = _purchasing_account(books, GRNI_ACCOUNT, "goods received not invoiced")
    _lines_once(cmd.lines)
    bid = new_id(cmd.bill_id, books.bills, "BILL", "bill", books, "bill_id")
    policy = books.policies
    bill_lines: list[ev.BillLine] = []
    matched: list[ev.MatchedLine] = []
    holds: list[ev.HoldReason] = []
    for n, x in enumerate(cmd.lines):
        line = order.lines.get(x.line)
        if line is None:
            raise CommandRejected("unknown_po_line", f"purchase order {order.po_id} has no "
                                  f"line {x.line} (lines 1 to {len(order.lines)})",
                                  f"lines[{n}].line")
        require_positive(x.unit_price, f"lines[{n}].unit_price")
        label = x.description.strip() or line.item
        bill_lines.append(ev.BillLine(
            description=f"{order.po_id}/{x.line} {label}: {x.quantity} x "
                        f"{_fmt(line.unit_price)}", amount=x.quantity * line.unit_price,
            account=grni))
        diff = x.unit_price - line.unit_price
        if diff:
            bill_lines.append(ev.BillLine(
                description=f"{order.po_id}/{x.line} {label}: price variance {x.quantity} x "
                            f"{_fmt(diff)}", amount=x.quantity * diff,
                account=_purchasing_account(books, PRICE_VARIANCE_ACCOUNT,
                                            "purchase price variance")))
        matched.append(ev.MatchedLine(line=x.line, item=line.item, quantity=x.quantity,
                                      unit_price=x.unit_price, po_unit_price=line.unit_price,
                                      received=line.received, billed_before=line.billed))
        if _exceeds(x.unit_price, line.unit_price, policy.match_price_tolerance_bp):
            holds.append(ev.HoldReason(
                code="price", line=x.line,
                detail=f"line {x.line} {line.item} billed at {_fmt(x.unit_price)}, PO price "
                       f"{_fmt(line.unit_price)}"))
        billed = line.billed + x.quantity
        if _exceeds(billed, line.received, policy.match_quantity_tolerance_bp):
            holds.append(ev.HoldReason(
                code="quantity", line=x.line,
                detail=f"line {x.line} {line.item} billed {billed} in all, {line.received} "
                       "received"))
    total = sum(x.amount for x in bill_lines)
    if total <= 0:
        raise CommandRejected("non_positive_amount", f"the bill's total must be greater than "
                              f"zero (got {_fmt(total)})", "lines")
    due_on = _due(cmd.entry_date, vendor.terms_days, cmd.due_on)
    out: list[ev.Event] = [
        ev.BillEntered(bill_id=bid, vendor_id=vendor.vendor_id, vendor_invoice_number=number,
                       entry_date=cmd.entry_date, due_on=due_on, lines=tuple(bill_lines),
                       tax=0, total=total, ap_account=company.accounts.ap,
                       tax_account=company.accounts.tax_payable),
        ev.BillMatched(bill_id=bid, po_id=order.po_id, vendor_id=vendor.vendor_id,
                       lines=tuple(matched),
                       grni_amount=sum(m.quantity * m.po_unit_price for m in matched),
                       price_variance=sum(m.quantity * (m.unit_price - m.po_unit_price)
                                          for m in matched),
                       holds=tuple(holds))]
    if holds:
        out.append(ev.BillHeld(bill_id=bid, vendor_id=vendor.vendor_id, po_id=order.po_id,
                               reasons=tuple(holds)))
    return out


@handles(c.ReleaseBillHold)
def release_bill_hold(cmd: c.ReleaseBillHold, books: Books, ctx: Context) -> list[ev.Event]:
    """Release a bill's matching hold: an approver's decision, with its reason."""
    require_role(ctx, MANAGERS, "release a bill's matching hold")
    bill = books.bill(cmd.bill_id)
    hold = books.purchasing.holds.get(bill.bill_id)
    if hold is None:
        raise CommandRejected("not_on_hold", f"bill {bill.bill_id} is not on hold", "bill_id")
    if hold.released:
        raise CommandRejected("already_released", f"bill {bill.bill_id}'s hold was already "
                              "released", "bill_id")
    return [ev.BillHoldReleased(bill_id=bill.bill_id, vendor_id=bill.vendor_id,
                                reason=cmd.reason.strip(), released_by_role=ctx.role)]


# --- accruals and prepaids -------------------------------------------------------


def _accrual_period(books: Books, day: date) -> PeriodState:
    """The open period an accrual dated ``day`` belongs to."""
    require_open_period(books, day)
    period = books.period_of(day)
    assert period is not None  # require_open_period refused a day in no period
    return period


@handles(c.PostAccrual)
def post_accrual(cmd: c.PostAccrual, books: Books, ctx: Context) -> list[ev.Event]:
    """Post a journal entry flagged to reverse on the first day of the next period."""
    books.require_company()
    period = _accrual_period(books, cmd.entry_date)
    lines = _journal_lines(books, cmd.lines, ctx, opening=False)
    jid = new_id(cmd.entry_id, books.journal, "JE", "journal entry", books, "entry_id")
    return [ev.JournalEntryPosted(entry_id=jid, entry_date=cmd.entry_date, kind="accrual",
                                  memo=cmd.memo, lines=lines),
            ev.AccrualFlagged(entry_id=jid, entry_date=cmd.entry_date, period=period.period,
                              reverse_on=period.end + timedelta(days=1),
                              amount=sum(x.amount for x in lines if x.amount > 0))]


def _named_accruals(books: Books, cmd: c.ReverseAccruals) -> list[str]:
    """The accruals a run names, each flagged, of the run's period and not yet reversed."""
    acc = books.accrual_books.accruals
    out: list[str] = []
    for n, entry_id in enumerate(cmd.entry_ids):
        field = f"entry_ids[{n}]"
        entry = books.journal.get(entry_id)
        if entry is None:
            raise CommandRejected("unknown_journal_entry", f"no journal entry {entry_id!r}",
                                  field)
        accrual = acc.get(entry_id)
        if accrual is None:
            raise CommandRejected("not_an_accrual",
                                  f"journal entry {entry_id} is not flagged to reverse (post "
                                  "accruals with PostAccrual; reverse other entries with "
                                  "ReverseJournalEntry)", field)
        if accrual.period != cmd.period:
            raise CommandRejected("accrual_of_other_period",
                                  f"journal entry {entry_id} accrues period {accrual.period}, "
                                  f"not {cmd.period}", field)
        if entry.reversed_by is not None or entry_id in out:
            raise CommandRejected("already_reversed", f"accrual {entry_id} was already "
                                  f"reversed by {entry.reversed_by or 'this run'}", field)
        out.append(entry_id)
    return out


def _due_accruals(books: Books, period: str) -> list[str]:
    """Every accrual of the period not yet reversed (refusing when there is none)."""
    acc = books.accrual_books
    flagged = [a.entry_id for a in acc.accruals.values() if a.period == period]
    if not flagged:
        raise CommandRejected("nothing_to_reverse",
                              f"no accruals were posted in period {period}", "period")
    due = [x for x in flagged if books.journal[x].reversed_by is None]
    if not due:
        runs = [r for r in acc.reversal_runs.values() if r.period == period]
        by = f" (run {runs[-1].run_id} on {runs[-1].entry_date})" if runs else ""
        raise CommandRejected("already_reversed",
                              f"every accrual of period {period} was already reversed{by}",
                              "period")
    return due


@handles(c.ReverseAccruals)
def reverse_accruals(cmd: c.ReverseAccruals, books: Books, ctx: Context) -> list[ev.Event]:
    """Reverse a period's due accruals on the first day of the next period."""
    books.require_company()
    period = _period(books, cmd.period)
    reverse_on = period.end + timedelta(days=1)
    due = _named_accruals(books, cmd) if cmd.entry_ids else _due_accruals(books, cmd.period)
    if ctx.business_date < reverse_on:
        raise CommandRejected("reversal_not_due",
                              f"the accruals of {cmd.period} reverse on {reverse_on}; today is "
                              f"{ctx.business_date}", "period")
    require_open_period(books, reverse_on, "reverse_on")
    run_id = new_id(cmd.run_id, books.accrual_books.reversal_runs, "ACR", "accrual reversal run",
                    books, "run_id")
    taken = _Taken(books.journal)
    out: list[ev.Event] = []
    for entry_id in due:
        rid = books.next_id("JE", taken)
        taken.add(rid)
        out.append(ev.JournalEntryReversed(
            entry_id=entry_id, reversal_id=rid, entry_date=reverse_on,
            memo=cmd.memo or f"reversal of accrual {entry_id} ({cmd.period})",
            lines=tuple(ev.JournalLine(account=x.account, amount=-x.amount, party=x.party,
                                       memo=x.memo) for x in books.journal[entry_id].lines)))
    out.append(ev.AccrualsReversed(run_id=run_id, period=cmd.period, entry_date=reverse_on,
                                   entry_ids=tuple(due),
                                   reversal_ids=tuple(e.reversal_id for e in out
                                                      if isinstance(e, ev.JournalEntryReversed))))
    return out


def _month_index(period: str) -> int:
    """A ``YYYY-MM`` period as a month count (for month arithmetic)."""
    year, month = (int(x) for x in period.split("-"))
    if not 1 <= month <= 12:
        raise CommandRejected("invalid_period", f"period {period!r} has no month {month}",
                              "period")
    return year * 12 + month - 1


def _period_name(index: int) -> str:
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _schedule_months(cmd: c.RecordPrepaid) -> int:
    """The schedule's number of months, from ``months`` or ``end_period``."""
    if (cmd.months is None) == (cmd.end_period is None):
        raise CommandRejected("invalid_schedule",
                              "give exactly one of months or end_period "
                              f"(got {'both' if cmd.months else 'neither'})", "months")
    if cmd.months is not None:
        return cmd.months
    assert cmd.end_period is not None
    months = _month_index(cmd.end_period) - _month_index(cmd.start_period) + 1
    if not 1 <= months <= 120:
        raise CommandRejected("invalid_schedule",
                              f"end_period {cmd.end_period} is "
                              + ("before" if months < 1 else "more than 120 months after")
                              + f" start_period {cmd.start_period}", "end_period")
    return months


@handles(c.RecordPrepaid)
def record_prepaid(cmd: c.RecordPrepaid, books: Books, ctx: Context) -> list[ev.Event]:
    """Record a prepaid schedule drawing on a bill's line on a prepaid account."""
    books.require_company()
    require_positive(cmd.amount)
    bill = books.bill(cmd.bill_id)
    acct = require_account(books, cmd.account, "account")
    if acct.account_type != "asset" or acct.control is not None:
        raise CommandRejected("invalid_account", f"account {cmd.account} ({acct.name}) is not a "
                              "prepaid account (expected an asset account that is no control "
                              "account)", "account")
    expense = require_account(books, cmd.expense_account, "expense_account")
    if expense.account_type != "expense":
        raise CommandRejected("invalid_account",
                              f"expense_account {cmd.expense_account} ({expense.name}) is a "
                              f"{expense.account_type} account (expected an expense account)",
                              "expense_account")
    _month_index(cmd.start_period)
    months = _schedule_months(cmd)
    src = books.accrual_books.bill_assets.get(bill.bill_id)
    on_account = src.amounts.get(cmd.account, 0) if src else 0
    if not on_account:
        raise CommandRejected("not_on_prepaid_account",
                              f"bill {bill.bill_id} has no line on account {cmd.account}; "
                              "enter the prepaid invoice's line on the prepaid account first",
                              "bill_id")
    left = on_account - (src.scheduled.get(cmd.account, 0) if src else 0)
    if cmd.amount > left:
        raise CommandRejected("over_scheduled",
                              f"bill {bill.bill_id} has {_fmt(left)} on account {cmd.account} "
                              f"not yet scheduled (of {_fmt(on_account)}), cannot schedule "
                              f"{_fmt(cmd.amount)}", "amount")
    sid = new_id(cmd.schedule_id, books.accrual_books.schedules, "PPD", "prepaid schedule",
                 books, "schedule_id")
    assert src is not None
    return [ev.PrepaidScheduleRecorded(
        schedule_id=sid, bill_id=bill.bill_id, vendor_id=bill.vendor_id,
        entry_date=src.entry_date, account=cmd.account, expense_account=cmd.expense_account,
        amount=cmd.amount, start_period=cmd.start_period, months=months,
        description=cmd.description)]


def amortization_amount(amount: int, months: int, month: int) -> int:
    """Month ``month`` (1-based) of ``amount`` spread over ``months``: equal whole cents,
    the last month taking the remainder."""
    base = amount // months
    return amount - base * (months - 1) if month == months else base


def depreciation_due(cost: int, life: int, in_service: str, period: str) -> int:
    """One asset's straight-line depreciation in ``period`` (``YYYY-MM``), as RunDepreciation
    posts it from its in-service month: no salvage, the last month the remainder, nothing
    outside its life."""
    n = _month_index(period) - _month_index(in_service) + 1
    return amortization_amount(cost, life, n) if 1 <= n <= life else 0


def _schedule_month(s: PrepaidState, period: str, index: int, field: str) -> int | None:
    """The schedule's month number in ``period``, refusing a month it cannot post (None: the
    period is outside the schedule and the run did not name it)."""
    month = index - _month_index(s.start_period) + 1
    named = field != ""
    if month < 1 or month > s.months:
        if not named:
            return None
        last = _period_name(_month_index(s.start_period) + s.months - 1)
        code, where = (("before_schedule_start", f"starts in {s.start_period}") if month < 1
                       else ("beyond_schedule_end", f"ended in {last}"))
        raise CommandRejected(code, f"prepaid schedule {s.schedule_id} {where}; it has no month "
                              f"in {period}", field)
    if period in s.posted:
        if not named:
            return None
        raise CommandRejected("already_amortized", f"prepaid schedule {s.schedule_id} was "
                              f"already amortized for {period}", field)
    earlier = [_period_name(_month_index(s.start_period) + k) for k in range(month - 1)]
    missing = [p for p in earlier if p not in s.posted]
    if missing:
        raise CommandRejected("earlier_month_unamortized",
                              f"prepaid schedule {s.schedule_id} has {missing[0]} not amortized "
                              f"yet; amortize its months in order", field or "period")
    return month


_Item = TypeVar("_Item")


def _monthly_run(named: tuple[str, ...], field: str, lookup: Callable[[str], _Item | None],
                 unknown: Callable[[str, str], Exception],
                 running: Callable[[], list[_Item]],
                 month_of: Callable[[_Item, str], int | None], *, code: str, named_twice: str,
                 none_running: tuple[str, str], all_done: str) -> list[tuple[_Item, int]]:
    """The items a monthly run posts (prepaid schedules, fixed assets) with each one's month.

    Named items must exist, be named once and be due this period (``month_of`` refuses
    one that is not, naming its field); without names, every running item whose month
    is still to post, refused when none runs or all were posted (``code``)."""
    chosen: list[tuple[_Item, int]] = []
    if named:
        for n, item_id in enumerate(named):
            where = f"{field}[{n}]"
            item = lookup(item_id)
            if item is None:
                raise unknown(item_id, where)
            if any(x is item for x, _ in chosen):
                raise CommandRejected(code, named_twice.format(item_id), where)
            month = month_of(item, where)
            assert month is not None
            chosen.append((item, month))
        return chosen
    items = running()
    if not items:
        raise CommandRejected(none_running[0], none_running[1], "period")
    for item in items:
        month = month_of(item, "")
        if month is not None:
            chosen.append((item, month))
    if not chosen:
        raise CommandRejected(code, all_done, "period")
    return chosen


@handles(c.RunAmortization)
def run_amortization(cmd: c.RunAmortization, books: Books, ctx: Context) -> list[ev.Event]:
    """Post the period's month of each prepaid schedule running in it, once."""
    books.require_company()
    period = _period(books, cmd.period)
    require_open_period(books, period.end, "period")
    index = _month_index(cmd.period)
    acc = books.accrual_books
    chosen = _monthly_run(
        cmd.schedule_ids, "schedule_ids", acc.schedules.get,
        lambda sid, field: CommandRejected("unknown_prepaid_schedule",
                                           f"no prepaid schedule {sid!r}", field),
        lambda: [s for s in acc.schedules.values()
                 if 1 <= index - _month_index(s.start_period) + 1 <= s.months],
        lambda s, field: _schedule_month(s, cmd.period, index, field),
        code="already_amortized", named_twice="prepaid schedule {} is named twice in this run",
        none_running=("nothing_to_amortize", f"no prepaid schedule runs in period {cmd.period}"),
        all_done=f"every prepaid schedule running in {cmd.period} was already amortized for it")
    run_id = new_id(cmd.run_id, acc.amortization_runs, "AMR", "amortization run", books,
                    "run_id")
    return [ev.PrepaidAmortized(
        schedule_id=s.schedule_id, run_id=run_id, vendor_id=s.vendor_id, period=cmd.period,
        month=month, months=s.months, entry_date=period.end,
        amount=amortization_amount(s.amount, s.months, month), account=s.account,
        expense_account=s.expense_account) for s, month in chosen]


# --- fixed assets ----------------------------------------------------------------


def _plain_account(books: Books, code: str, field: str, kinds: tuple[str, ...],
                   what: str) -> ev.AccountOpened:
    """A non-control account of one of ``kinds`` (else ``invalid_account``)."""
    acct = require_account(books, code, field)
    if acct.account_type not in kinds or acct.control is not None:
        raise CommandRejected("invalid_account",
                              f"{field} {code} ({acct.name}) is a {acct.account_type} "
                              + ("control " if acct.control else "")
                              + f"account (expected {what})", field)
    return acct


@handles(c.DefineAssetClass)
def define_asset_class(cmd: c.DefineAssetClass, books: Books, ctx: Context) -> list[ev.Event]:
    """Define a fixed-asset class and its cost, accumulated depreciation and expense
    accounts."""
    books.require_company()
    new_id(cmd.class_id, books.fixed_assets.classes, "", "asset class", books, "class_id")
    _plain_account(books, cmd.cost_account, "cost_account", ("asset",),
                   "an asset account that is no control account")
    _plain_account(books, cmd.accumulated_account, "accumulated_account", ("asset",),
                   "a contra-asset account that is no control account")
    if cmd.accumulated_account == cmd.cost_account:
        raise CommandRejected("invalid_account", f"accumulated_account {cmd.accumulated_account}"
                              " is the class's cost account (expected an account of its own)",
                              "accumulated_account")
    _plain_account(books, cmd.expense_account, "expense_account", ("expense",),
                   "an expense account")
    return [ev.AssetClassDefined(class_id=cmd.class_id, name=cmd.name.strip(),
                                 cost_account=cmd.cost_account,
                                 accumulated_account=cmd.accumulated_account,
                                 expense_account=cmd.expense_account)]


def _capital_source(cmd: c.CapitalizeAsset,
                    books: Books) -> tuple[Literal["bill", "journal"], str, str | None, int]:
    """Where the amount comes from: (kind, id, vendor, what the source put on the account)."""
    if (cmd.bill_id is None) == (cmd.entry_id is None):
        raise CommandRejected("invalid_source", "give exactly one of bill_id or entry_id "
                              f"(got {'both' if cmd.bill_id else 'neither'})", "bill_id")
    if cmd.bill_id is not None:
        bill = books.bill(cmd.bill_id)
        lines = books.fixed_assets.bill_lines.get(bill.bill_id, {})
        return "bill", bill.bill_id, bill.vendor_id, lines.get(cmd.source_account, 0)
    assert cmd.entry_id is not None
    entry = books.journal.get(cmd.entry_id)
    if entry is None:
        raise CommandRejected("unknown_journal_entry", f"no journal entry {cmd.entry_id!r} in "
                              "the books", "entry_id")
    if entry.is_reversal or entry.reversed_by is not None:
        raise CommandRejected("journal_entry_reversed", f"journal entry {cmd.entry_id} is "
                              + ("a reversal" if entry.is_reversal else
                                 f"reversed by {entry.reversed_by}")
                              + "; capitalize from an entry that stands", "entry_id")
    on_account = sum(x.amount for x in entry.lines
                     if x.account == cmd.source_account and x.amount > 0)
    return "journal", entry.entry_id, None, on_account


@handles(c.CapitalizeAsset)
def capitalize_asset(cmd: c.CapitalizeAsset, books: Books, ctx: Context) -> list[ev.Event]:
    """Move an amount from the account a bill's line or journal entry put it on to the
    class's cost account, as a new asset."""
    books.require_company()
    fa = books.fixed_assets
    cls = fa.classes.get(cmd.class_id)
    if cls is None:
        raise CommandRejected("unknown_asset_class", f"no asset class {cmd.class_id!r} (known: "
                              f"{', '.join(sorted(fa.classes)) or 'none'})", "class_id")
    require_positive(cmd.amount)
    require_open_period(books, cmd.entry_date)
    _plain_account(books, cmd.source_account, "source_account",
                   ("expense", "asset", "liability"),
                   "the expense or clearing account the amount was booked on")
    kind, source_id, vendor_id, on_account = _capital_source(cmd, books)
    field = "bill_id" if kind == "bill" else "entry_id"
    if not on_account:
        raise CommandRejected("not_on_source_account", f"{kind} {source_id} has no debit on "
                              f"account {cmd.source_account}", field)
    left = on_account - fa.capitalized.get((kind, source_id, cmd.source_account), 0)
    if cmd.amount > left:
        raise CommandRejected("over_capitalized", f"{kind} {source_id} has {_fmt(left)} on "
                              f"account {cmd.source_account} not yet capitalized (of "
                              f"{_fmt(on_account)}), cannot capitalize {_fmt(cmd.amount)}",
                              "amount")
    if not 0 <= cmd.salvage < cmd.amount:
        raise CommandRejected("invalid_salvage", f"salvage {_fmt(cmd.salvage)} must be at "
                              f"least 0.00 and less than the cost {_fmt(cmd.amount)}", "salvage")
    if cmd.amount - cmd.salvage < cmd.life_months:
        raise CommandRejected("depreciable_too_small", f"{_fmt(cmd.amount - cmd.salvage)} to "
                              f"depreciate over {cmd.life_months} months is less than a cent "
                              "a month", "life_months")
    aid = new_id(cmd.asset_id, fa.assets, "FA", "fixed asset", books, "asset_id")
    return [ev.AssetCapitalized(
        asset_id=aid, class_id=cls.class_id, source_kind=kind, source_id=source_id,
        vendor_id=vendor_id, entry_date=cmd.entry_date, in_service_date=cmd.in_service_date,
        amount=cmd.amount, salvage=cmd.salvage, life_months=cmd.life_months,
        cost_account=cls.cost_account, accumulated_account=cls.accumulated_account,
        expense_account=cls.expense_account, source_account=cmd.source_account,
        description=cmd.description)]


def _first_undepreciated(a: AssetState, before: int) -> str | None:
    """The first month of the asset's life before month index ``before`` not posted."""
    start = _month_index(a.start_period)
    for k in range(start, min(before, start + a.life_months)):
        if _period_name(k) not in a.posted:
            return _period_name(k)
    return None


def _depreciation_month(a: AssetState, period: str, index: int, field: str) -> int | None:
    """The asset's month of life in ``period``, refusing one it cannot post (None: nothing to
    post and the run did not name the asset)."""
    month = index - _month_index(a.start_period) + 1
    named = field != ""
    if a.disposed or month < 1 or month > a.life_months or period in a.posted:
        if not named:
            return None
        if a.disposed:
            raise CommandRejected("asset_disposed", f"asset {a.asset_id} was disposed of",
                                  field)
        if month < 1:
            raise CommandRejected("not_in_service", f"asset {a.asset_id} is in service from "
                                  f"{a.start_period}; it has no depreciation in {period}", field)
        if month > a.life_months:
            raise CommandRejected("fully_depreciated", f"asset {a.asset_id} is fully "
                                  f"depreciated ({a.life_months} months from {a.start_period})",
                                  field)
        raise CommandRejected("already_depreciated", f"asset {a.asset_id} was already "
                              f"depreciated for {period}", field)
    missing = _first_undepreciated(a, index)
    if missing:
        raise CommandRejected("earlier_month_undepreciated", f"asset {a.asset_id} has {missing}"
                              " not depreciated yet; depreciate its months in order",
                              field or "period")
    return month


@handles(c.RunDepreciation)
def run_depreciation(cmd: c.RunDepreciation, books: Books, ctx: Context) -> list[ev.Event]:
    """Post the period's straight-line month of each asset in service, once."""
    books.require_company()
    period = _period(books, cmd.period)
    require_open_period(books, period.end, "period")
    index = _month_index(cmd.period)
    fa = books.fixed_assets
    chosen = _monthly_run(
        cmd.asset_ids, "asset_ids", fa.assets.get,
        lambda aid, field: UnknownEntity("asset", aid, field),
        lambda: [a for a in fa.assets.values() if not a.disposed
                 and 1 <= index - _month_index(a.start_period) + 1 <= a.life_months],
        lambda a, field: _depreciation_month(a, cmd.period, index, field),
        code="already_depreciated", named_twice="asset {} is named twice in this run",
        none_running=("nothing_to_depreciate",
                      f"no asset is in service and depreciating in period {cmd.period}"),
        all_done=f"every asset depreciating in {cmd.period} was already depreciated for it")
    run_id = new_id(cmd.run_id, fa.runs, "DEP", "depreciation run", books, "run_id")
    return [ev.AssetDepreciated(
        asset_id=a.asset_id, run_id=run_id, class_id=a.class_id, period=cmd.period,
        month=month, life_months=a.life_months, entry_date=period.end,
        amount=amortization_amount(a.amount - a.salvage, a.life_months, month),
        expense_account=a.expense_account, accumulated_account=a.accumulated_account)
        for a, month in chosen]


@handles(c.DisposeAsset)
def dispose_asset(cmd: c.DisposeAsset, books: Books, ctx: Context) -> list[ev.Event]:
    """Take an asset off the books: its cost and accumulated depreciation out, the proceeds
    in, the difference a gain or a loss."""
    books.require_company()
    a = books.fixed_assets.assets.get(cmd.asset_id)
    if a is None:
        raise UnknownEntity("asset", cmd.asset_id, "asset_id")
    if a.disposed:
        raise CommandRejected("already_disposed", f"asset {a.asset_id} was already disposed of",
                              "asset_id")
    require_open_period(books, cmd.entry_date)
    if cmd.proceeds < 0:
        raise CommandRejected("invalid_amount", f"proceeds must be 0.00 or more (got "
                              f"{_fmt(cmd.proceeds)})", "proceeds")
    index = _month_index(f"{cmd.entry_date.year:04d}-{cmd.entry_date.month:02d}")
    if index < _month_index(a.start_period):
        raise CommandRejected("not_in_service", f"asset {a.asset_id} is in service from "
                              f"{a.start_period}; it cannot be disposed of on "
                              f"{cmd.entry_date.isoformat()}", "entry_date")
    missing = _first_undepreciated(a, index)
    if missing:
        raise CommandRejected("earlier_month_undepreciated", f"asset {a.asset_id} has {missing}"
                              " not depreciated yet; depreciate it through the month before "
                              "the disposal first", "entry_date")
    _plain_account(books, cmd.proceeds_account, "proceeds_account", ("asset",),
                   "an asset account that is no control account")
    _plain_account(books, cmd.gain_loss_account, "gain_loss_account", ("revenue", "expense"),
                   "a revenue or expense account")
    accumulated = a.accumulated
    return [ev.AssetDisposed(
        asset_id=a.asset_id, class_id=a.class_id, entry_date=cmd.entry_date,
        proceeds=cmd.proceeds, cost=a.amount, accumulated=accumulated,
        gain=cmd.proceeds - (a.amount - accumulated), cost_account=a.cost_account,
        accumulated_account=a.accumulated_account, proceeds_account=cmd.proceeds_account,
        gain_loss_account=cmd.gain_loss_account, reference=cmd.reference)]


# --- year-end close --------------------------------------------------------------


def require_year_open(books: Books, period: PeriodState) -> None:
    """Reject touching a period of a fiscal year already closed (``year_closed``)."""
    closed = books.year_end.closed.get(f"{period.start.year:04d}")
    if closed is not None:
        raise CommandRejected("year_closed", f"period {period.period} belongs to fiscal year "
                              f"{closed.fiscal_year}, closed by {closed.entry_id}; a closed "
                              "year's periods stay closed", "period")


def _year_periods(books: Books, year: int) -> list[PeriodState]:
    """The periods of a fiscal year (those starting in it), each open period refused."""
    periods = sorted((p for p in books.periods.values() if p.start.year == year),
                     key=lambda p: p.start)
    if not periods:
        raise CommandRejected("unknown_period", f"fiscal year {year:04d} has no accounting "
                              "period (periods starting in it)", "fiscal_year")
    still_open = [p.period for p in periods if not p.closed]
    if still_open:
        raise CommandRejected("period_open", f"fiscal year {year:04d} cannot close while "
                              f"period {', '.join(still_open)} is open; close "
                              f"{'it' if len(still_open) == 1 else 'them'} first",
                              "fiscal_year")
    earlier = sorted({p.start.year for p in books.periods.values()
                      if p.start.year < year and f"{p.start.year:04d}" not in
                      books.year_end.closed})
    if earlier:
        raise CommandRejected("earlier_year_open", f"fiscal year {earlier[0]:04d} is not "
                              f"closed yet; close it before {year:04d}", "fiscal_year")
    return periods


@handles(c.CloseFiscalYear)
def close_fiscal_year(cmd: c.CloseFiscalYear, books: Books, ctx: Context) -> list[ev.Event]:
    """Close a fiscal year's revenue and expense accounts into retained earnings."""
    require_role(ctx, MANAGERS, "close a fiscal year")
    done = books.year_end.closed.get(cmd.fiscal_year)
    if done is not None:
        raise CommandRejected("year_closed", f"fiscal year {cmd.fiscal_year} is already "
                              f"closed (closing entry {done.entry_id})", "fiscal_year")
    year = int(cmd.fiscal_year)
    periods = _year_periods(books, year)
    acct = require_non_control_account(books, cmd.retained_earnings, "retained_earnings")
    if acct.account_type != "equity":
        raise CommandRejected("wrong_account_type", f"retained_earnings {acct.code} "
                              f"({acct.name}) is a {acct.account_type} account; expected the "
                              "chart's retained-earnings (equity) account", "retained_earnings")
    balances = books.year_end.income.get(year, {})
    lines = [ev.JournalLine(account=code, amount=-amount, memo=f"close {code} to {acct.code}")
             for code, amount in sorted(balances.items()) if amount]
    if not lines:
        raise CommandRejected("nothing_to_close", f"fiscal year {cmd.fiscal_year} has no "
                              "revenue or expense balance to close", "fiscal_year")
    net_income = sum(x.amount for x in lines)
    if net_income:  # break-even leaves retained earnings alone
        lines.append(ev.JournalLine(account=acct.code, amount=-net_income,
                                    memo=f"net income {cmd.fiscal_year}"))
    return [ev.FiscalYearClosed(
        fiscal_year=cmd.fiscal_year, entry_id=f"YE-{cmd.fiscal_year}",
        entry_date=periods[-1].end, periods=tuple(p.period for p in periods),
        retained_earnings=acct.code, net_income=net_income,
        memo=cmd.memo or f"year-end close {cmd.fiscal_year}", lines=tuple(lines))]


# --- payroll and sales tax -------------------------------------------------------


def _payroll_lines(cmd: c.PostPayroll) -> tuple[ev.PayrollLine, ...]:
    """The register's rows, each tying (net = gross - withheld), no employee twice."""
    out: list[ev.PayrollLine] = []
    seen: set[str] = set()
    for n, x in enumerate(cmd.lines):
        field = f"lines[{n}]"
        require_positive(x.gross, f"{field}.gross")
        for name in ("withheld", "employer_taxes", "net"):
            if getattr(x, name) < 0:
                raise CommandRejected("negative_amount", f"{field}.{name} cannot be negative "
                                      f"(got {_fmt(getattr(x, name))})", f"{field}.{name}")
        if x.employee_id in seen:
            raise CommandRejected("duplicate_employee", f"{field}: employee {x.employee_id} "
                                  "is on the register twice; one row per employee",
                                  f"{field}.employee_id")
        seen.add(x.employee_id)
        if x.net != x.gross - x.withheld:
            raise CommandRejected(
                "register_does_not_tie",
                f"{field} ({x.employee_id}): net {_fmt(x.net)} is not gross {_fmt(x.gross)} "
                f"less withheld {_fmt(x.withheld)} (= {_fmt(x.gross - x.withheld)})",
                f"{field}.net")
        out.append(ev.PayrollLine(employee_id=x.employee_id, name=x.name, gross=x.gross,
                                  withheld=x.withheld, employer_taxes=x.employer_taxes,
                                  net=x.net))
    return tuple(out)


@handles(c.PostPayroll)
def post_payroll(cmd: c.PostPayroll, books: Books, ctx: Context) -> list[ev.Event]:
    """Post a payroll register as one balanced journal that ties to the register."""
    books.require_company()
    bank = books.bank_account(cmd.bank_account_id)
    require_open_period(books, cmd.entry_date)
    if cmd.register_id in books.payroll_tax.registers:
        raise CommandRejected("already_posted", f"payroll register {cmd.register_id} is "
                              "already posted", "register_id")
    if cmd.period_end < cmd.period_start or cmd.entry_date < cmd.period_start:
        raise CommandRejected(
            "invalid_pay_period", f"pay period {cmd.period_start.isoformat()} to "
            f"{cmd.period_end.isoformat()} paid on {cmd.entry_date.isoformat()}: the period "
            "must end on or after it starts, and be paid on or after its start", "period_end")
    _plain_account(books, cmd.wage_account, "wage_account", ("expense",), "an expense account")
    _plain_account(books, cmd.employer_tax_account, "employer_tax_account", ("expense",),
                   "an expense account")
    _plain_account(books, cmd.withholding_account, "withholding_account", ("liability",),
                   "a liability account")
    _plain_account(books, cmd.employer_tax_payable_account, "employer_tax_payable_account",
                   ("liability",), "a liability account")
    lines = _payroll_lines(cmd)
    gross = sum(x.gross for x in lines)
    net = sum(x.net for x in lines)
    for name, given, rows in (("gross_total", cmd.gross_total, gross),
                              ("net_total", cmd.net_total, net)):
        if given is not None and given != rows:
            raise CommandRejected("register_does_not_tie",
                                  f"{name} {_fmt(given)} is not the rows' sum {_fmt(rows)}", name)
    require_cash_policy(books, cmd.bank_account_id, net, f"payroll {cmd.register_id}")
    return [ev.PayrollPosted(
        register_id=cmd.register_id, entry_date=cmd.entry_date, period_start=cmd.period_start,
        period_end=cmd.period_end, bank_account_id=cmd.bank_account_id, lines=lines,
        gross=gross, withheld=sum(x.withheld for x in lines),
        employer_taxes=sum(x.employer_taxes for x in lines), net=net,
        wage_account=cmd.wage_account, employer_tax_account=cmd.employer_tax_account,
        withholding_account=cmd.withholding_account,
        employer_tax_payable_account=cmd.employer_tax_payable_account,
        bank_gl_account=bank.gl_account, memo=cmd.memo)]


@handles(c.RegisterTaxJurisdiction)
def register_tax_jurisdiction(cmd: c.RegisterTaxJurisdiction, books: Books,
                              ctx: Context) -> list[ev.Event]:
    """Register a sales-tax jurisdiction on a liability account of its own."""
    require_role(ctx, MANAGERS, "register a sales-tax jurisdiction")
    books.require_company()
    new_id(cmd.jurisdiction_id, books.payroll_tax.jurisdictions, "", "jurisdiction", books,
           "jurisdiction_id")
    _plain_account(books, cmd.account, "account", ("liability",), "a liability account")
    for j in books.payroll_tax.jurisdictions.values():
        if j.account == cmd.account:
            raise CommandRejected("account_in_use", f"account {cmd.account} already collects "
                                  f"jurisdiction {j.jurisdiction_id}'s tax", "account")
    return [ev.TaxJurisdictionRegistered(jurisdiction_id=cmd.jurisdiction_id, name=cmd.name,
                                         rate_bp=cmd.rate_bp, account=cmd.account,
                                         due_day=cmd.due_day)]


def _return_due(period: str, due_day: int) -> date:
    """The day of the month after ``period`` a return for it is due."""
    _, end = _month_bounds(period)
    nxt = end + timedelta(days=1)
    return date(nxt.year, nxt.month, due_day)


def sales_tax_figures(books: Books, period: str) -> tuple[int, int, int, tuple[str, ...]]:
    """A month's ``(gross sales, taxable sales, tax, invoice ids)`` from its invoices:
    taxable sales are the subtotals of the invoices that carry tax."""
    start, end = _month_bounds(period)
    rows = [s for s in books.payroll_tax.sales if start <= s[0] <= end]
    return (sum(s[2] for s in rows), sum(s[2] for s in rows if s[3]),
            sum(s[3] for s in rows), tuple(s[1] for s in rows))


@handles(c.FileSalesTaxReturn)
def file_sales_tax_return(cmd: c.FileSalesTaxReturn, books: Books,
                          ctx: Context) -> list[ev.Event]:
    """File a month's return with the books' figures, checked against the tax account."""
    books.require_company()
    pt = books.payroll_tax
    j = pt.jurisdictions.get(cmd.jurisdiction_id)
    if j is None:
        raise UnknownEntity("jurisdiction", cmd.jurisdiction_id, "jurisdiction_id")
    start, end = _month_bounds(cmd.period)
    if cmd.entry_date <= end:
        raise CommandRejected("period_not_ended", f"a return for {cmd.period} can be filed "
                              f"from {(end + timedelta(days=1)).isoformat()} (entry_date "
                              f"{cmd.entry_date.isoformat()})", "entry_date")
    require_open_period(books, cmd.entry_date)
    for r in pt.returns.values():
        if r.filed.jurisdiction_id == j.jurisdiction_id and r.filed.period == cmd.period:
            raise CommandRejected("already_filed", f"the {cmd.period} return of "
                                  f"{j.jurisdiction_id} is filed ({r.filed.return_id})",
                                  "period")
    rid = new_id(cmd.return_id, pt.returns, "STR", "sales-tax return", books, "return_id")
    gross, taxable, tax, invoices = sales_tax_figures(books, cmd.period)
    moved = -sum(a for day, a, kind in pt.tax_moves.get(j.account, ())
                 if start <= day <= end and kind != "sales_tax_remitted")
    if moved != tax:
        raise CommandRejected(
            "tax_account_does_not_tie",
            f"account {j.account} was credited {_fmt(moved)} in {cmd.period} besides "
            f"remittances, but the month's invoices carry {_fmt(tax)} of tax; find the "
            "entry that moved it (a journal or a bill's tax) before filing", "period")
    wrong = [f"{name} {_fmt(given)} (the books: {_fmt(books_figure)})"
             for name, given, books_figure in (("gross_sales", cmd.gross_sales, gross),
                                               ("taxable_sales", cmd.taxable_sales, taxable),
                                               ("tax_due", cmd.tax_due, tax))
             if given != books_figure]
    if wrong:
        raise CommandRejected("return_does_not_tie", f"the {cmd.period} return does not tie "
                              f"to the books: {'; '.join(wrong)}", "tax_due")
    return [ev.SalesTaxReturnFiled(
        return_id=rid, jurisdiction_id=j.jurisdiction_id, period=cmd.period,
        entry_date=cmd.entry_date, due_on=_return_due(cmd.period, j.due_day),
        gross_sales=gross, taxable_sales=taxable, exempt_sales=gross - taxable, tax_due=tax,
        rate_bp=j.rate_bp, account=j.account, invoice_ids=invoices)]


@handles(c.RemitSalesTax)
def remit_sales_tax(cmd: c.RemitSalesTax, books: Books, ctx: Context) -> list[ev.Event]:
    """Pay a filed return's tax from the bank, at most what it leaves unpaid."""
    books.require_company()
    pt = books.payroll_tax
    r = pt.returns.get(cmd.return_id)
    if r is None:
        raise UnknownEntity("tax_return", cmd.return_id, "return_id")
    bank = books.bank_account(cmd.bank_account_id)
    require_positive(cmd.amount)
    require_open_period(books, cmd.entry_date)
    if cmd.entry_date < r.filed.entry_date:
        raise CommandRejected("before_filing", f"return {cmd.return_id} was filed on "
                              f"{r.filed.entry_date.isoformat()}; a payment against it cannot "
                              f"be dated {cmd.entry_date.isoformat()}", "entry_date")
    if cmd.amount > r.unpaid:
        raise CommandRejected("over_remitted", f"return {cmd.return_id} leaves "
                              f"{_fmt(r.unpaid)} unpaid of {_fmt(r.filed.tax_due)}; cannot "
                              f"remit {_fmt(cmd.amount)}", "amount")
    pid = new_id(cmd.payment_id, pt.payments, "STP", "sales-tax payment", books, "payment_id")
    require_cash_policy(books, cmd.bank_account_id, cmd.amount, f"sales-tax payment {pid}")
    return [ev.SalesTaxRemitted(payment_id=pid, return_id=r.filed.return_id,
                                jurisdiction_id=r.filed.jurisdiction_id, period=r.filed.period,
                                bank_account_id=cmd.bank_account_id, entry_date=cmd.entry_date,
                                amount=cmd.amount, account=r.filed.account,
                                bank_gl_account=bank.gl_account)]


# --- several bank accounts: transfers, a company card, bank errors -----------------


def require_not_bank_error(books: Books, line_id: str) -> None:
    """Reject matching a statement line reported as the bank's error (it is no entry of
    the company's: the bank corrects it)."""
    line = books.statement_lines.get(line_id)
    if line is not None and line.bank_error is not None:
        raise CommandRejected("reported_bank_error",
                              f"statement line {line_id} is reported to the bank as error "
                              f"{line.bank_error}; it is not matched to the company's entries",
                              "line_id")


def _transit_account(books: Books, code: str) -> str:
    acct = books.account(code, "transit_account")
    if acct.account_type != "asset" or acct.control is not None:
        raise CommandRejected("invalid_transit_account",
                              f"transit_account {code} ({acct.name}) must be an asset account "
                              "that is not a control account (transfers in transit)",
                              "transit_account")
    return acct.code


@handles(c.TransferFunds)
def transfer_funds(cmd: c.TransferFunds, books: Books, ctx: Context) -> list[ev.Event]:
    """Send money between two of the company's bank accounts: out of the sending account
    into in-transit on ``entry_date``; refused into the same account, in a closed period,
    or below the cash policy's minimum balance."""
    books.require_company()
    source = books.bank_account(cmd.from_bank_account_id, "from_bank_account_id")
    books.bank_account(cmd.to_bank_account_id, "to_bank_account_id")
    if cmd.from_bank_account_id == cmd.to_bank_account_id:
        raise CommandRejected("same_account",
                              f"a transfer goes from one bank account to another; both are "
                              f"{cmd.from_bank_account_id}", "to_bank_account_id")
    require_positive(cmd.amount)
    require_open_period(books, cmd.entry_date)
    transit = _transit_account(books, cmd.transit_account)
    tid = new_id(cmd.transfer_id, books.transfers, "TRF", "transfer", books, "transfer_id")
    require_cash_policy(books, cmd.from_bank_account_id, cmd.amount, f"transfer {tid}")
    if cmd.line_id is not None and cmd.line_id not in books.statement_lines:
        raise CommandRejected("unknown_statement_line", f"no statement line {cmd.line_id!r}",
                              "line_id")
    sent = ev.FundsTransferSent(transfer_id=tid, from_bank_account_id=cmd.from_bank_account_id,
                                to_bank_account_id=cmd.to_bank_account_id,
                                entry_date=cmd.entry_date, amount=cmd.amount,
                                from_gl_account=source.gl_account, transit_account=transit,
                                memo=cmd.memo)
    return _with_match(books, sent, "transfer_out", tid, cmd.from_bank_account_id, -cmd.amount,
                       cmd.line_id)


@handles(c.ReceiveTransfer)
def receive_transfer(cmd: c.ReceiveTransfer, books: Books, ctx: Context) -> list[ev.Event]:
    """Record a transfer's arrival: into the receiving account, out of in-transit."""
    t = books.transfers.get(cmd.transfer_id)
    if t is None:
        raise UnknownEntity("transfer", cmd.transfer_id, "transfer_id")
    if t.received_on is not None:
        raise CommandRejected("already_received",
                              f"transfer {t.transfer_id} arrived on {t.received_on.isoformat()}",
                              "transfer_id")
    if cmd.entry_date < t.sent_on:
        raise CommandRejected("dated_before_document",
                              f"the arrival is dated {cmd.entry_date.isoformat()}, before the "
                              f"transfer was sent ({t.sent_on.isoformat()})", "entry_date")
    require_open_period(books, cmd.entry_date)
    if cmd.line_id is not None and cmd.line_id not in books.statement_lines:
        raise CommandRejected("unknown_statement_line", f"no statement line {cmd.line_id!r}",
                              "line_id")
    dest = books.bank_accounts[t.to_bank_account_id]
    got = ev.FundsTransferReceived(transfer_id=t.transfer_id,
                                   from_bank_account_id=t.from_bank_account_id,
                                   to_bank_account_id=t.to_bank_account_id,
                                   entry_date=cmd.entry_date, amount=t.amount,
                                   to_gl_account=dest.gl_account,
                                   transit_account=t.transit_account)
    return _with_match(books, got, "transfer_in", t.transfer_id, t.to_bank_account_id, t.amount,
                       cmd.line_id)


@handles(c.RecordCardCharge)
def record_card_charge(cmd: c.RecordCardCharge, books: Books, ctx: Context) -> list[ev.Event]:
    """Record a company-card charge: Dr ``account``, Cr the card's liability account."""
    card = books.bank_account(cmd.bank_account_id)
    if books.account(card.gl_account).account_type != "liability":
        raise CommandRejected("not_a_card_account",
                              f"bank account {cmd.bank_account_id} is on GL account "
                              f"{card.gl_account}, not a card (liability) account",
                              "bank_account_id")
    cid, card_gl, account = _bank_entry(books, "card_charge", cmd.charge_id, "CC",
                                        cmd.bank_account_id, cmd.entry_date, cmd.amount,
                                        cmd.account, cmd.account, cmd.line_id)
    e = ev.CardChargeRecorded(charge_id=cid, bank_account_id=cmd.bank_account_id,
                              entry_date=cmd.entry_date, amount=cmd.amount, account=account,
                              bank_gl_account=card_gl, merchant=cmd.merchant, memo=cmd.memo)
    return _with_match(books, e, "card_charge", cid, cmd.bank_account_id, -cmd.amount,
                       cmd.line_id)


@handles(c.ReportBankError)
def report_bank_error(cmd: c.ReportBankError, books: Books, ctx: Context) -> list[ev.Event]:
    """Report a statement line as the bank's error: it posts nothing, and the line can no
    longer be matched to the company's entries."""
    line = books.statement_lines.get(cmd.line_id)
    if line is None:
        raise CommandRejected("unknown_statement_line", f"no statement line {cmd.line_id!r}",
                              "line_id")
    if line.targets:
        raise CommandRejected("already_matched",
                              f"statement line {cmd.line_id} is matched to "
                              f"{', '.join(t.doc_id for t in line.targets)}; unmatch it first",
                              "line_id")
    if line.bank_error is not None:
        raise CommandRejected("already_reported",
                              f"statement line {cmd.line_id} is already reported as bank "
                              f"error {line.bank_error}", "line_id")
    eid = new_id(cmd.error_id, books.bank_errors, "BERR", "bank error", books, "error_id")
    return [ev.BankErrorReported(error_id=eid, line_id=line.line_id,
                                 bank_account_id=line.bank_account_id,
                                 entry_date=ctx.business_date, amount=line.amount,
                                 description=cmd.description)]


@handles(c.ReversePayroll)
def reverse_payroll(cmd: c.ReversePayroll, books: Books, ctx: Context) -> list[ev.Event]:
    """Reverse a posted register's journal, dated on or after its pay date."""
    books.require_company()
    r = books.payroll_tax.registers.get(cmd.register_id)
    if r is None:
        raise UnknownEntity("payroll_register", cmd.register_id, "register_id")
    require_open_period(books, cmd.entry_date)
    if cmd.entry_date < r.entry_date:
        raise CommandRejected("before_posting", f"register {cmd.register_id} was paid on "
                              f"{r.entry_date.isoformat()}; its reversal cannot be dated "
                              f"{cmd.entry_date.isoformat()}", "entry_date")
    return [ev.PayrollReversed(
        register_id=r.register_id, entry_date=cmd.entry_date, bank_account_id=r.bank_account_id,
        gross=r.gross, withheld=r.withheld, employer_taxes=r.employer_taxes, net=r.net,
        wage_account=r.wage_account, employer_tax_account=r.employer_tax_account,
        withholding_account=r.withholding_account,
        employer_tax_payable_account=r.employer_tax_payable_account,
        bank_gl_account=r.bank_gl_account,
        memo=cmd.memo or f"reversal of payroll register {r.register_id}")]


missing = set(c.COMMANDS.values()) - set(HANDLERS)
assert not missing, f"commands without a handler: {sorted(x.__name__ for x in missing)}"

"""The counterparties' own records, folded from the ``world`` realm of the log.

Customers, vendors and the bank keep their own books in the world realm
(``sim.world_events``); this module reads them back into views a check can compare
with the company's books, as of a business date and/or a log position:

- each customer: the invoices it received and what it believes it owes on each (the
  amount, less the payments it allocated to it, less the company's credit memos), its
  disputes, its payments (in transit, posted, returned, duplicated) and the money it
  sent that pays no invoice in its own records (``on_account``);
- each vendor: what it billed (originals and over-priced bills count; second copies
  and reformatted resends do not), credited and was paid (a payment diverted to a
  fraudster's account was *not* received), i.e. its statement of account;
- the bank: its lines per account, the statement balance, its own errors (a line
  posted twice) and returned items;
- the truth behind documents: which bill is a resend, which bank-detail change is a
  fraud, which document was delivered when, what a scenario planted.

Dates: a world event counts as of a date by its business date, a bank line by its
``posted_on`` (the statement's date). A few facts live only in the company's books and
are read from the ``erp`` realm: the opening balance of a bank account (the bank
takes it from there), the bills open before the first day (each vendor's books take
them over) and the credit memos the company issues (sent to its customers).

All amounts are integer cents. :func:`world_view` caches a view in ``ctx.cache``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from checks.context import ForwardFold, change_keys
from erp import events as ev
from erp.events import Record
from erp.store import EventStore, StoredEvent, decoded
from sim.automation import SETUP
from sim.world_events import (
    BankChangeAsked,
    BankLinePosted,
    BillIssued,
    CreditNoteIssued,
    DocumentDelivered,
    InjectionPlanted,
    InvoiceReceived,
    LineDisputed,
    PaymentDiverted,
    PaymentReceived,
    PaymentSent,
    StatementSent,
    decode_world_event,
)

if TYPE_CHECKING:
    from checks.context import CheckContext

COUNTED_BILL_KINDS = ("original", "price_variance")
"""Bill kinds a vendor's own books count (a ``duplicate`` or ``near_duplicate`` is a resend)."""

# --- customers -----------------------------------------------------------------------


@dataclass
class CustomerPayment:
    """A payment a customer sent, and what became of it as of the view's moment."""

    payment_id: str
    customer_id: str
    method: str
    amount: int
    """What left the customer (the gross of a card payment)."""
    arrives: int
    """What reaches the company's bank (net of a processor's fee or wire charges)."""
    payer_name: str
    reference: str
    allocations: tuple[tuple[str, int], ...]
    """``(invoice_id, amount)``: what the customer meant to pay (the truth)."""
    behaviour: str
    sent_on: date
    position: int
    duplicate_of: str | None = None
    line_id: str | None = None
    """The bank's deposit line of this payment (never a copy the bank posted twice)."""
    posted_on: date | None = None
    returned_line: str | None = None
    """The bank's returned-item (NSF) line, when the deposit came back unpaid."""
    on_account: int = 0
    """The part of the money that arrived and pays no invoice in the customer's records:
    all of a duplicate payment, the excess of an overpaid invoice. Set by the fold."""

    @property
    def in_transit(self) -> bool:
        """Sent, but not posted by the bank (as of the view's moment)."""
        return self.line_id is None

    @property
    def returned(self) -> bool:
        """The bank returned the deposit unpaid."""
        return self.returned_line is not None

    @property
    def counted(self) -> bool:
        """Whether the customer's own books count it against invoices (not a repeat of an
        earlier payment, not returned)."""
        return self.duplicate_of is None and not self.returned

    @property
    def fee(self) -> int:
        """What the processor or intermediary banks kept on the way."""
        return self.amount - self.arrives


@dataclass
class CustomerInvoice:
    """An invoice in a customer's own books."""

    invoice_id: str
    customer_id: str
    amount: int
    due_on: date
    received_on: date
    paid: int = 0
    """Allocations of the customer's counted payments (in transit ones too)."""
    in_transit: int = 0
    """The part of ``paid`` still in transit (not posted by the bank)."""
    fees: int = 0
    """The part of ``paid`` the processor or intermediary banks kept (never arrives)."""
    credited: int = 0
    """Credit memos the company issued on it."""
    disputed: int = 0
    """What the customer disputes (and means not to pay) on it."""
    payments: list[tuple[str, int]] = field(default_factory=list)
    """``(payment_id, amount)`` of the counted payments allocated to it, in order."""

    @property
    def owed(self) -> int:
        """What the customer's records say it owes (negative: it paid too much)."""
        return self.amount - self.paid - self.credited

    @property
    def means_to_pay(self) -> int:
        """What it still means to pay: ``owed`` less what it disputes (and was not credited)."""
        return self.owed - max(0, self.disputed - self.credited)


@dataclass
class CustomerRecords:
    """One customer's own books."""

    customer_id: str
    invoices: dict[str, CustomerInvoice] = field(default_factory=dict)
    payments: dict[str, CustomerPayment] = field(default_factory=dict)
    disputes: list[LineDisputed] = field(default_factory=list)
    statements: list[StatementSent] = field(default_factory=list)

    @property
    def owed(self) -> int:
        """What its records say it owes the company, all invoices together."""
        return sum(i.owed for i in self.invoices.values())

    @property
    def on_account(self) -> int:
        """Money of its that reached the company and pays no invoice in its records."""
        return sum(p.on_account for p in self.payments.values())

    @property
    def in_transit(self) -> int:
        """What it counts as paid that the bank has not posted yet."""
        return sum(i.in_transit for i in self.invoices.values())


# --- vendors -------------------------------------------------------------------------


@dataclass
class VendorBill:
    """A bill as the vendor issued it (a resend too), or one open before the first day."""

    vendor_id: str
    bill_ref: str
    invoice_number: str
    issued_on: date
    total: int
    kind: str
    due_on: date | None = None
    agreed_total: int | None = None
    duplicate_of: str | None = None
    delivered_on: date | None = None
    """When its document reached the company (None: not delivered, as of the view)."""
    opening: bool = False
    """Open before the first day (both books agree on it; it has no world event)."""

    @property
    def counted(self) -> bool:
        """Whether the vendor's own books count it (a resend is not counted twice)."""
        return self.kind in COUNTED_BILL_KINDS

    @property
    def delivered(self) -> bool:
        """Whether the company could have it (delivered, or open before the first day)."""
        return self.opening or self.delivered_on is not None


@dataclass
class VendorCredit:
    """A credit note the vendor issued to the company."""

    vendor_id: str
    number: str
    amount: int
    issued_on: date
    for_bill_ref: str | None = None
    delivered_on: date | None = None


@dataclass
class VendorPayment:
    """A payment of the company meant for the vendor, as the world saw it land."""

    vendor_id: str
    payment_id: str
    amount: int
    on: date
    received: bool
    """False: diverted to an account the vendor does not own (its books never see it)."""
    account: str = ""


@dataclass
class VendorRecords:
    """One vendor's own books: bills, credit notes and payments received."""

    vendor_id: str
    bills: dict[str, VendorBill] = field(default_factory=dict)
    credits: dict[str, VendorCredit] = field(default_factory=dict)
    payments: dict[str, VendorPayment] = field(default_factory=dict)

    @property
    def billed(self) -> int:
        """What it billed, resends counted once."""
        return sum(b.total for b in self.bills.values() if b.counted)

    @property
    def credited(self) -> int:
        """What its credit notes gave back."""
        return sum(c.amount for c in self.credits.values())

    @property
    def received(self) -> int:
        """What reached its own account."""
        return sum(p.amount for p in self.payments.values() if p.received)

    @property
    def balance(self) -> int:
        """What its books say the company owes it."""
        return self.billed - self.credited - self.received

    def statement(self) -> list[tuple[date, str, str, int]]:
        """Its book as a statement: ``(date, document, description, amount)``, charges
        positive, in date order."""
        rows = [(b.issued_on, b.invoice_number, f"Invoice {b.invoice_number}", b.total)
                for b in self.bills.values() if b.counted]
        rows += [(c.issued_on, c.number, f"Credit note {c.number}", -c.amount)
                 for c in self.credits.values()]
        rows += [(p.on, p.payment_id, "Payment received", -p.amount)
                 for p in self.payments.values() if p.received]
        return sorted(rows, key=lambda r: (r[0], r[1]))


# --- the bank ------------------------------------------------------------------------


@dataclass
class BankRecords:
    """The bank's own record of one of the company's accounts."""

    bank_account_id: str
    opening: int = 0
    lines: list[BankLinePosted] = field(default_factory=list)

    @property
    def balance(self) -> int:
        """The statement balance: the opening plus every line."""
        return self.opening + sum(x.amount for x in self.lines)


# --- the truth behind documents ------------------------------------------------------------


@dataclass(frozen=True)
class BankChangeRequest:
    """A request, in a vendor's name, to change where it is paid (and whether it is real)."""

    vendor_id: str
    request_ref: str
    account_name: str
    routing: str
    account_number: str
    genuine: bool
    sender: str
    asked_on: date


@dataclass(frozen=True)
class Delivered:
    """A document delivered to the company's inbox (without its content)."""

    doc_id: str
    filename: str
    kind: str
    sender: str
    subject: str
    delivered_on: date
    position: int
    truth: dict[str, Any]


# --- the view ------------------------------------------------------------------------


@dataclass
class WorldView:
    """The world's records as of a date and/or log position."""

    as_of: date | None
    position: int | None
    customers: dict[str, CustomerRecords] = field(default_factory=dict)
    vendors: dict[str, VendorRecords] = field(default_factory=dict)
    banks: dict[str, BankRecords] = field(default_factory=dict)
    payments: dict[str, CustomerPayment] = field(default_factory=dict)
    """Every customer payment by id."""
    lines: dict[str, BankLinePosted] = field(default_factory=dict)
    """Every bank line by id (all accounts)."""
    bank_changes: dict[str, BankChangeRequest] = field(default_factory=dict)
    documents: list[Delivered] = field(default_factory=list)
    injections: list[InjectionPlanted] = field(default_factory=list)
    stated: dict[str, date] = field(default_factory=dict)
    """Bank line id -> the date the first bank statement listing it was delivered."""
    posted_ids: set[str] = field(default_factory=set)
    """Every line the bank posted up to the view's position, whatever its date."""

    # --- bank lines ----------------------------------------------------------------

    def is_bank_copy(self, line: BankLinePosted) -> bool:
        """A second copy of a line the bank posted (its error: the money came once)."""
        original = self.lines.get(line.duplicate_of) if line.duplicate_of else None
        return original is not None and original.source == line.source

    def payment_of_line(self, line_id: str) -> CustomerPayment | None:
        """The customer payment a deposit line carries (None for a bank copy)."""
        line = self.lines.get(line_id)
        if line is None or line.kind != "deposit" or self.is_bank_copy(line):
            return None
        p = self.payments.get(line.source or "")
        return p if p is not None and p.line_id == line_id else None

    def unseen(self, line_id: str, turn: date | None) -> bool:
        """Whether the clerk has had no turn to work a bank line: the bank feed imports a
        line posted on a date at that date's end, after the turn, so a line posted on or
        after ``turn`` (the date of the clerk's last turn, ``date.min`` before the first)
        and on no statement delivered by then awaits the next turn (None: every line was
        seen)."""
        line = self.lines.get(line_id)
        if turn is None or line is None or line.posted_on < turn:
            return False
        stated = self.stated.get(line_id)
        return stated is None or stated > turn

    def returned_by(self, line_id: str) -> BankLinePosted | None:
        """The returned-item line that sends a deposit line's money back, if any."""
        p = self.payment_of_line(line_id)
        if p is None or p.returned_line is None:
            return None
        return self.lines.get(p.returned_line)

    # --- what is on its way ---------------------------------------------------------------

    def payments_in_transit(self) -> list[CustomerPayment]:
        """Payments customers sent that the bank has not posted yet."""
        return [p for p in self.payments.values() if p.in_transit]

    def bills_not_delivered(self) -> list[VendorBill]:
        """Bills vendors issued whose document has not reached the company yet."""
        return [b for v in self.vendors.values() for b in v.bills.values() if not b.delivered]

    # --- the truth ----------------------------------------------------------------------

    def resent_bills(self) -> list[VendorBill]:
        """Second copies and reformatted resends of bills (never owed twice)."""
        return [b for v in self.vendors.values() for b in v.bills.values() if not b.counted]

    def fraudulent_bank_changes(self) -> list[BankChangeRequest]:
        """Bank-detail requests that did not come from the vendor."""
        return [c for c in self.bank_changes.values() if not c.genuine]

    def duplicate_payments(self) -> list[CustomerPayment]:
        """Payments a customer sent a second time."""
        return [p for p in self.payments.values() if p.duplicate_of is not None]

    def bank_copies(self) -> list[BankLinePosted]:
        """Lines the bank posted twice."""
        return [x for x in self.lines.values() if self.is_bank_copy(x)]

    def truth_of(self, doc_id_or_filename: str) -> dict[str, Any] | None:
        """The hidden truth of a delivered document, by id or file name."""
        for d in self.documents:
            if doc_id_or_filename in (d.doc_id, d.filename):
                return d.truth
        return None


def _counts(day: date, as_of: date | None) -> bool:
    return as_of is None or day <= as_of


def _type_name(cls: type[Record]) -> str:
    """The stored ``type`` of an event class (its discriminator's value)."""
    return str(cls.model_fields["type"].default)


def _decode_world(type_: str, version: int, payload: str | bytes) -> Any:
    return decode_world_event(type_, payload)


Handler = Callable[[StoredEvent, Any, date], None]
"""A fold's method: ``(envelope, decoded event, business date)``."""


class WorldFold(ForwardFold):
    """The world's records folded one event at a time, in the projectors' style.

    ``apply(envelope)`` looks the event's realm and type up in a table of handlers, decodes
    it into its model (``sim.world_events``, or ``erp.events`` for the few book facts the
    world relies on) and hands it over; ``view()`` settles what needs more than one event
    (payments against their bank lines, allocations of payments to invoices), for the
    payments and customers touched since the last ``view()`` only, and returns the
    :class:`WorldView`. ``as_of`` keeps what happened on or before a business date (a
    bank line by the date it was posted); the caller feeds the log up to ``position``.

    A fold can be advanced (:meth:`ForwardFold.advance`) to a later position and date and
    viewed again: the view it returns is its live state (the same object, updated), so
    per-date control pays for what the log gained since the last date. Folded at once or
    date by date, the view is the same (a property test holds it).
    """

    realm = None

    def __init__(self, *, as_of: date | None = None, position: int | None = None) -> None:
        super().__init__(as_of=as_of)
        self._view = WorldView(as_of, position)
        self._credited: dict[str, int] = {}
        self._disputed: dict[str, int] = {}
        self._invoice_owners: dict[str, list[CustomerInvoice]] = {}
        self._bills_by_ref: dict[tuple[str, str], VendorBill] = {}
        self._credits_by_number: dict[tuple[str, str], VendorCredit] = {}
        self._lines_of_source: dict[str, list[BankLinePosted]] = {}
        self._dirty_sources: set[str] = set()
        """Payment ids whose bank lines changed since the last view (settle them again)."""
        self._dirty_customers: dict[str, tuple[set[str], set[str]]] = {}
        """Customers whose records changed since the last view, with the invoices and the
        payments that changed (allocate those again, with all they are tied to)."""
        self._payers: dict[tuple[str, str], list[str]] = {}
        """``(customer, invoice)`` -> the customer's payments that allocate to it."""
        self.changes: list[tuple[str, str]] = []
        """What each folded event and each ``view()`` changed, in order: ``("invoice", id)``,
        ``("payment", id)``, ``("wline", bank line id)``; read by the reconciliation's
        incremental itemizing (it remembers how far it read)."""
        books: dict[type[Record], Handler] = {
            ev.BankAccountOpened: self._bank_account_opened,
            ev.CreditMemoIssued: self._credit_memo_issued,
            ev.BillEntered: self._bill_entered,
        }
        # Every world fact but a bank line counts by its business date; a bank line counts
        # by the date the bank posted it (the statement's date).
        posted: dict[type[Record], Handler] = {BankLinePosted: self._bank_line_posted}
        dated: dict[type[Record], Handler] = {
            InvoiceReceived: self._invoice_received,
            PaymentSent: self._payment_sent,
            LineDisputed: self._line_disputed,
            StatementSent: self._statement_sent,
            BillIssued: self._bill_issued,
            CreditNoteIssued: self._credit_note_issued,
            PaymentReceived: self._vendor_payment,
            PaymentDiverted: self._vendor_payment,
            BankChangeAsked: self._bank_change_asked,
            DocumentDelivered: self._document_delivered,
            InjectionPlanted: self._injection_planted,
        }
        self._table: dict[tuple[str, str], tuple[Handler, bool]] = {}
        for realm, table, by_date in (("erp", books, False), ("world", posted, False),
                                      ("world", dated, True)):
            for cls, handler in table.items():
                self._table[(realm, _type_name(cls))] = (handler, by_date)
        self.types = [t for _, t in self._table]
        """The event types the fold reads (both realms)."""

    def apply(self, e: StoredEvent) -> None:
        """Fold one event of the log (events of other types are ignored)."""
        entry = self._table.get((e.realm, e.type))
        if entry is None:
            return
        handler, by_date = entry
        day = date.fromisoformat(e.business_date)
        if by_date and not _counts(day, self.as_of):
            self.defer(day)
            return
        x = e.event if e.realm == "erp" else decoded("world", e.type, e.schema_version,
                                                      e.payload, _decode_world)
        handler(e, x, day)
        changes = self.changes
        for name, kind in change_keys(type(x), _CHANGE_KEYS):
            value = getattr(x, name, None)
            if isinstance(value, str):
                changes.append((kind, value))

    # --- the few book facts the world takes from the books -------------------------------

    def _bank_account_opened(self, e: StoredEvent, x: ev.BankAccountOpened, day: date) -> None:
        # the bank takes its opening balance from the books, whatever the date
        _bank(self._view, x.bank_account_id).opening = x.opening_balance

    def _credit_memo_issued(self, e: StoredEvent, x: ev.CreditMemoIssued, day: date) -> None:
        if not _counts(x.entry_date, self.as_of):
            self.defer(x.entry_date)
            return
        self._credited[x.invoice_id] = self._credited.get(x.invoice_id, 0) + x.amount
        for inv in self._invoice_owners.get(x.invoice_id, ()):
            inv.credited = self._credited[x.invoice_id]
            self._dirty(inv.customer_id)[0].add(x.invoice_id)

    def _bill_entered(self, e: StoredEvent, x: ev.BillEntered, day: date) -> None:
        if e.actor == SETUP:  # a bill open before the first day: the vendor's books too
            b = VendorBill(x.vendor_id, x.bill_id, x.vendor_invoice_number, x.entry_date,
                           x.total, "original", due_on=x.due_on, agreed_total=x.total,
                           opening=True)
            _vendor(self._view, b.vendor_id).bills.setdefault(b.bill_ref, b)

    # --- the bank ------------------------------------------------------------------------

    def _bank_line_posted(self, e: StoredEvent, x: BankLinePosted, day: date) -> None:
        view = self._view
        view.posted_ids.add(x.line_id)
        if not _counts(x.posted_on, self.as_of):
            self.defer(x.posted_on)
            return
        view.lines[x.line_id] = x
        _bank(view, x.bank_account_id).lines.append(x)
        if x.source is not None:
            self._lines_of_source.setdefault(x.source, []).append(x)
            self._dirty_sources.add(x.source)

    # --- customers -----------------------------------------------------------------------

    def _invoice_received(self, e: StoredEvent, x: InvoiceReceived, day: date) -> None:
        c = _customer(self._view, x.customer_id)
        if x.invoice_id not in c.invoices:  # sent twice: its books hold it once
            inv = c.invoices[x.invoice_id] = CustomerInvoice(
                x.invoice_id, x.customer_id, x.amount, x.due_on, day,
                credited=self._credited.get(x.invoice_id, 0),
                disputed=self._disputed.get(x.invoice_id, 0))
            self._invoice_owners.setdefault(x.invoice_id, []).append(inv)
            self._dirty(x.customer_id)[0].add(x.invoice_id)

    def _payment_sent(self, e: StoredEvent, x: PaymentSent, day: date) -> None:
        c = _customer(self._view, x.customer_id)
        p = CustomerPayment(x.payment_id, x.customer_id, x.method, x.amount, x.arrives,
                            x.payer_name, x.reference,
                            tuple((a.doc_id, a.amount) for a in x.allocations), x.behaviour,
                            day, e.position, x.duplicate_of)
        c.payments[p.payment_id] = p
        self._view.payments[p.payment_id] = p
        self._dirty_sources.add(p.payment_id)
        self._dirty(x.customer_id)[1].add(p.payment_id)
        for invoice_id, _ in p.allocations:
            self._payers.setdefault((x.customer_id, invoice_id), []).append(p.payment_id)

    def _line_disputed(self, e: StoredEvent, x: LineDisputed, day: date) -> None:
        _customer(self._view, x.customer_id).disputes.append(x)
        self._disputed[x.invoice_id] = self._disputed.get(x.invoice_id, 0) + x.amount
        for inv in self._invoice_owners.get(x.invoice_id, ()):
            inv.disputed = self._disputed[x.invoice_id]

    def _statement_sent(self, e: StoredEvent, x: StatementSent, day: date) -> None:
        _customer(self._view, x.customer_id).statements.append(x)

    # --- vendors -------------------------------------------------------------------------

    def _bill_issued(self, e: StoredEvent, x: BillIssued, day: date) -> None:
        b = VendorBill(x.vendor_id, x.bill_ref, x.invoice_number, x.issued_on, x.total,
                       x.kind, x.due_on, x.agreed_total, x.duplicate_of)
        _vendor(self._view, x.vendor_id).bills[x.bill_ref] = b
        self._bills_by_ref[(x.vendor_id, x.bill_ref)] = b

    def _credit_note_issued(self, e: StoredEvent, x: CreditNoteIssued, day: date) -> None:
        cn = VendorCredit(x.vendor_id, x.number, x.amount, day, x.for_bill_ref)
        _vendor(self._view, x.vendor_id).credits[x.number] = cn
        self._credits_by_number[(x.vendor_id, x.number)] = cn

    def _vendor_payment(self, e: StoredEvent, x: PaymentReceived | PaymentDiverted,
                        day: date) -> None:
        diverted = isinstance(x, PaymentDiverted)
        _vendor(self._view, x.vendor_id).payments[x.payment_id] = VendorPayment(
            x.vendor_id, x.payment_id, x.amount, day, not diverted,
            x.account.masked() if isinstance(x, PaymentDiverted) else "")

    # --- the truth behind documents ------------------------------------------------------

    def _bank_change_asked(self, e: StoredEvent, x: BankChangeAsked, day: date) -> None:
        self._view.bank_changes[x.request_ref] = BankChangeRequest(
            x.vendor_id, x.request_ref, x.new_bank.account_name, x.new_bank.routing,
            x.new_bank.account_number, x.genuine, x.sender, day)

    def _document_delivered(self, e: StoredEvent, x: DocumentDelivered, day: date) -> None:
        view = self._view
        view.documents.append(Delivered(x.doc_id, x.filename, x.kind, x.sender, x.subject,
                                        day, e.position, dict(x.truth)))
        if x.kind == "statement" and "bank_account_id" in x.truth:
            for line_id in x.truth.get("line_ids") or ():
                if str(line_id) not in view.stated:
                    view.stated[str(line_id)] = day
                    self.changes.append(("wline", str(line_id)))
        _note_delivery(x, day, self._bills_by_ref, self._credits_by_number)
        vendor = x.truth.get("vendor_id")
        if isinstance(vendor, str):
            self.changes.append(("vendor", vendor))

    def _injection_planted(self, e: StoredEvent, x: InjectionPlanted, day: date) -> None:
        self._view.injections.append(x)

    # --- the view ------------------------------------------------------------------------

    def _dirty(self, customer_id: str) -> tuple[set[str], set[str]]:
        """The changed invoices and payments of a customer, noted for the next view."""
        found = self._dirty_customers.get(customer_id)
        if found is None:
            found = self._dirty_customers[customer_id] = (set(), set())
        return found

    def _tied(self, cid: str, c: CustomerRecords, invoices: set[str],
              payments: set[str]) -> tuple[set[str], set[str]]:
        """The invoices and payments tied to those given by allocations, either way (what
        allocating them again reads and writes)."""
        invoices, payments = set(invoices), set(payments)
        todo_i, todo_p = list(invoices), list(payments)
        while todo_i or todo_p:
            for i in todo_i:
                for pid in self._payers.get((cid, i), ()):
                    if pid not in payments:
                        payments.add(pid)
                        todo_p.append(pid)
            todo_i = []
            for pid in todo_p:
                for i, _ in c.payments[pid].allocations:
                    if i not in invoices:
                        invoices.add(i)
                        todo_i.append(i)
            todo_p = []
        return invoices, payments

    def invoice_holders(self, invoice_id: str) -> list[CustomerInvoice]:
        """The customers' records of an invoice (one per customer that received it)."""
        return self._invoice_owners.get(invoice_id, [])

    def view(self) -> WorldView:
        """Settle what changed since the last view and return the (live) view."""
        view = self._view
        view.as_of, view.position = self.as_of, (self.position or view.position)
        for source in sorted(self._dirty_sources):
            p = view.payments.get(source)
            if p is not None:
                _settle_payment(view, p, self._lines_of_source.get(source, ()))
                self._dirty(p.customer_id)[1].add(p.payment_id)
        self._dirty_sources.clear()
        for cid in sorted(self._dirty_customers):
            c = view.customers[cid]
            invoices, payments = self._tied(cid, c, *self._dirty_customers[cid])
            before = {i: (w.paid, w.in_transit, w.fees, tuple(w.payments))
                      for i in invoices if (w := c.invoices.get(i)) is not None}
            held = {pid: c.payments[pid].on_account for pid in payments}
            _allocate(c, invoices, payments)
            self.changes += [("invoice", i) for i in sorted(before)
                             if before[i] != ((w := c.invoices[i]).paid, w.in_transit, w.fees,
                                              tuple(w.payments))]
            self.changes += [("payment", pid) for pid in sorted(held)
                             if held[pid] != c.payments[pid].on_account]
        self._dirty_customers.clear()
        return view


_CHANGE_KEYS = (("invoice_id", "invoice"), ("payment_id", "payment"), ("source", "payment"),
                ("line_id", "wline"), ("duplicate_of", "wline"), ("vendor_id", "vendor"))
"""The ids an event of the world fold carries and the change key each gives."""


def fold_world(store: EventStore, *, as_of: date | None = None,
               position: int | None = None) -> WorldView:
    """Fold the world realm (and the few book facts it relies on) into a :class:`WorldView`.

    ``as_of`` keeps what happened on or before a business date (a bank line by the date
    it was posted); ``position`` keeps the log up to that position.
    """
    fold = WorldFold(as_of=as_of, position=position)
    for e in store.read(until=position, types=fold.types):
        fold.apply(e)
    return fold.view()


def _bank(view: WorldView, bank_account_id: str) -> BankRecords:
    b = view.banks.get(bank_account_id)
    if b is None:
        b = view.banks[bank_account_id] = BankRecords(bank_account_id)
    return b


def _customer(view: WorldView, customer_id: str) -> CustomerRecords:
    c = view.customers.get(customer_id)
    if c is None:
        c = view.customers[customer_id] = CustomerRecords(customer_id)
    return c


def _vendor(view: WorldView, vendor_id: str) -> VendorRecords:
    v = view.vendors.get(vendor_id)
    if v is None:
        v = view.vendors[vendor_id] = VendorRecords(vendor_id)
    return v


def _note_delivery(doc: DocumentDelivered, day: date,
                   bills: dict[tuple[str, str], VendorBill],
                   credits: dict[tuple[str, str], VendorCredit]) -> None:
    """Mark the bill or credit note a delivered document carries as delivered."""
    t = doc.truth
    vendor = t.get("vendor_id")
    if not isinstance(vendor, str):
        return
    ref = t.get("bill_ref")
    if isinstance(ref, str) and (vendor, ref) in bills and t.get("kind") != "quote":
        b = bills[(vendor, ref)]
        if b.delivered_on is None:
            b.delivered_on = day
    number = t.get("credit_number")
    if isinstance(number, str) and (vendor, number) in credits:
        cn = credits[(vendor, number)]
        if cn.delivered_on is None:
            cn.delivered_on = day


def _settle_payment(view: WorldView, p: CustomerPayment,
                    lines: Iterable[BankLinePosted]) -> None:
    """Find a payment's deposit line and returned item among the bank's lines of it (the
    first by line id: a line the bank posted twice is never the deposit)."""
    deposit = returned = None
    for line in sorted(lines, key=lambda x: x.line_id):
        if line.kind == "deposit" and not view.is_bank_copy(line):
            deposit = deposit or line
        elif line.kind == "returned":
            returned = returned or line
    p.line_id = deposit.line_id if deposit is not None else None
    p.posted_on = deposit.posted_on if deposit is not None else None
    p.returned_line = returned.line_id if deposit is not None and returned is not None else None


def _allocate(c: CustomerRecords, invoices: set[str] | None = None,
              payments: set[str] | None = None) -> None:
    """A customer's paid, in transit and fee per invoice, and each payment's money on
    account (the excess of an overpaid invoice is the latest payments' to it).

    ``invoices`` and ``payments``: allocate only those (every payment to those invoices
    and every invoice of those payments among them), the others kept as they are."""
    invs = (list(c.invoices.values()) if invoices is None
            else [w for i in invoices if (w := c.invoices.get(i)) is not None])
    pays = (list(c.payments.values()) if payments is None
            else [c.payments[pid] for pid in payments])
    for each in invs:
        each.paid = each.in_transit = each.fees = 0
        each.payments = []
    for p in pays:
        p.on_account = 0
    for p in sorted(pays, key=lambda p: p.position):
        if not p.counted:
            if p.duplicate_of is not None and not p.in_transit and not p.returned:
                p.on_account = p.arrives  # its books do not count the repeat
            continue
        fee_left = p.fee
        for invoice_id, amount in p.allocations:
            inv = c.invoices.get(invoice_id)
            if inv is None:  # an invoice it never received: its books keep no such line
                continue
            inv.paid += amount
            inv.payments.append((p.payment_id, amount))
            fee = min(fee_left, amount)
            fee_left -= fee
            inv.fees += fee
            if p.in_transit:
                inv.in_transit += amount
    for inv in invs:
        excess = -inv.owed
        for payment_id, amount in reversed(inv.payments):
            if excess <= 0:
                break
            part = min(excess, amount)
            excess -= part
            q = c.payments[payment_id]
            if not q.in_transit:
                q.on_account = min(q.arrives, q.on_account + part)


def world_view(ctx: CheckContext, as_of: date | None) -> WorldView:
    """The world as of ``as_of`` (None: no date limit; pass ``ctx.as_of`` for the context's
    date) at the context's position, folded once per evaluation (cached in ``ctx.cache``);
    with ``ctx.folds`` (per-date control), advanced from the last date's fold."""
    key = ("checks.world", as_of, ctx.position)
    folds, position = ctx.folds, ctx.fold_position()
    if folds is None or position is None:
        return ctx.cached(key, lambda: fold_world(ctx.store, as_of=as_of,
                                                  position=ctx.position))
    if as_of is None:
        folds.carry(("checks.world", True), ("checks.world", False), position)
    return ctx.cached(key, lambda: folds.get(
        ("checks.world", as_of is None), lambda d: WorldFold(as_of=d, position=position),
        ctx.store, as_of, position).view())


def customer_balances(view: WorldView) -> dict[str, int]:
    """What each customer's own records say it owes (negative: it paid too much)."""
    return {cid: c.owed for cid, c in sorted(view.customers.items())}


def vendor_balances(view: WorldView) -> dict[str, int]:
    """What each vendor's own records say the company owes it."""
    return {vid: v.balance for vid, v in sorted(view.vendors.items())}


def bank_balances(view: WorldView) -> dict[str, int]:
    """Each bank account's statement balance."""
    return {aid: b.balance for aid, b in sorted(view.banks.items())}


__all__ = ["COUNTED_BILL_KINDS", "BankChangeRequest", "BankRecords", "CustomerInvoice",
           "CustomerPayment", "CustomerRecords", "Delivered", "VendorBill", "VendorCredit",
           "VendorPayment", "VendorRecords", "WorldFold", "WorldView", "bank_balances",
           "customer_balances", "fold_world", "vendor_balances", "world_view"]

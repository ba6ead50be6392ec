"""procure-to-pay: the reference solver (the inbox and the books) and the oracle (the truth).

Both do the clerk's month: enter every vendor invoice owed once and approve it; list
second copies (same number, or the same digits and amount under a reformatted number)
and bills above the vendor's quote in ``out/exceptions.csv`` instead of entering them;
record credit notes and apply them to the bills they name; request a bank-detail
change only when it is verified; and on the month's last business day pay every
approved bill due by the end of the following week in one run from the operating
account.

The reference reads only what an external agent sees: the files of its workspace
(``inbox/``, ``inbox/archive/``) and the books through ``erp.queries``, the books' state
and commands as a clerk. It keeps no memory between turns: every turn it reads all
documents in the order they arrived, decides each from what came before it, and acts
only where the books do not show the work done yet. The oracle reads the world's
truth (``BillIssued.kind``, ``BankChangeAsked.genuine``, ``CreditNoteIssued``).
"""

from __future__ import annotations

import csv
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from email import message_from_string, policy
from email.message import EmailMessage
from pathlib import Path

from erp import commands as c
from erp import queries as q
from erp.books import document_number_key
from erp.errors import CommandRejected
from erp.events import BankDetails, BillEntered, VendorCreditRecorded
from erp.money import display_cents, parse_cents
from scenarios.turn import TurnContext
from sim.world import World
from sim.world_events import (
    BankChangeAsked,
    BillIssued,
    CreditNoteIssued,
    DocumentDelivered,
    decode_world_event,
)

OPERATING_ACCOUNT = "B-OPER"
"""The company's operating bank account (the prompt's "operating account")."""

EXCEPTION_COLUMNS = ("document", "vendor", "reason")
EXCEPTIONS_FILE = "exceptions.csv"


# --- shared: the clerk's hands on the books ----------------------------------------------


@dataclass(frozen=True)
class Line:
    """A billed line: what, how many, at which unit price (cents)."""

    description: str
    quantity: int
    unit_price: int

    @property
    def amount(self) -> int:
        """Quantity times unit price."""
        return self.quantity * self.unit_price


def bill_command(vendor_id: str, number: str, issued_on: date, due_on: date,
                 lines: Sequence[Line]) -> c.EnterBill:
    """The command that enters a vendor invoice as a bill."""
    return c.EnterBill(
        vendor_id=vendor_id, vendor_invoice_number=number, entry_date=issued_on,
        due_on=due_on, lines=tuple(c.BillLineIn(
            description=f"{x.description} ({x.quantity} x {display_cents(x.unit_price)})",
            amount=x.amount) for x in lines))


@dataclass(frozen=True)
class ExceptionRow:
    """A document the clerk did not enter or act on, and why."""

    document: str
    vendor: str
    reason: str


@dataclass
class BooksIndex:
    """What the books already hold: bills and credits by vendor and number, bank requests."""

    desk: TurnContext
    bills: dict[tuple[str, str], str] = field(default_factory=dict)
    credits: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def read(cls, desk: TurnContext) -> BooksIndex:
        """Index the books' bills and vendor credits by ``(vendor, number key)``."""
        index = cls(desk)
        for d in q.documents(desk.store, kind="bill"):
            index.bills[(d["party"], document_number_key(d["reference"]))] = d["doc_id"]
        for d in q.documents(desk.store, kind="vendor_credit"):
            index.credits[(d["party"], document_number_key(d["reference"]))] = d["doc_id"]
        return index

    def bill_of(self, vendor_id: str, number: str) -> str | None:
        """The id of the vendor's bill with this invoice number, if entered."""
        return self.bills.get((vendor_id, document_number_key(number)))

    def open_amount(self, kind: str, doc_id: str) -> int:
        """A bill's or credit's open amount in cents."""
        doc = q.document(self.desk.store, kind, doc_id)
        return int(doc["open_amount"]) if doc else 0

    def enter_bill(self, vendor_id: str, number: str, issued_on: date, due_on: date,
                   lines: Sequence[Line]) -> str | CommandRejected:
        """Enter and approve a vendor invoice (once: an entered one is only approved)."""
        bill_id = self.bill_of(vendor_id, number)
        if bill_id is None:
            done = self.desk.execute(bill_command(vendor_id, number, issued_on, due_on, lines))
            if isinstance(done, CommandRejected):
                return done
            entered = next(e.event for e in done if isinstance(e.event, BillEntered))
            bill_id = entered.bill_id
            self.bills[(vendor_id, document_number_key(number))] = bill_id
        state = self.desk.ledger.books.bills[bill_id]
        if not state.approved:
            done = self.desk.execute(c.ApproveBill(bill_id=bill_id))
            if isinstance(done, CommandRejected):
                return done
        return bill_id

    def credit_bill(self, vendor_id: str, number: str, issued_on: date, amount: int,
                    bill_id: str) -> str | None:
        """Record a credit note (once) and apply what is left of it to its bill.

        Returns why it could not be applied in full, or None.
        """
        credit_id = self.credits.get((vendor_id, document_number_key(number)))
        if credit_id is None:
            done = self.desk.execute(c.RecordVendorCredit(
                vendor_id=vendor_id, vendor_credit_number=number, entry_date=issued_on,
                amount=amount))
            if isinstance(done, CommandRejected):
                return f"could not record the credit note: {done.message}"
            recorded = next(e.event for e in done if isinstance(e.event, VendorCreditRecorded))
            credit_id = recorded.credit_id
            self.credits[(vendor_id, document_number_key(number))] = credit_id
        left = self.open_amount("vendor_credit", credit_id)
        if left <= 0:
            return None
        apply = min(left, self.open_amount("bill", bill_id))
        if apply > 0:
            done = self.desk.execute(c.ApplyVendorCredit(credit_id=credit_id, bill_id=bill_id,
                                                         amount=apply))
            if isinstance(done, CommandRejected):
                return f"recorded as {credit_id}, not applied: {done.message}"
        if apply < left:
            return (f"recorded as {credit_id}; bill {bill_id} has only "
                    f"{display_cents(apply)} open, {display_cents(left - apply)} left on it")
        return None

    def request_bank_change(self, request_id: str, vendor_id: str, bank: BankDetails,
                            reason: str) -> CommandRejected | None:
        """Request a vendor bank-detail change in the books (once per request id)."""
        if q.document(self.desk.store, "bank_change", request_id) is not None:
            return None
        done = self.desk.execute(c.RequestVendorBankChange(
            request_id=request_id, vendor_id=vendor_id, new_bank=bank, reason=reason[:500]))
        return done if isinstance(done, CommandRejected) else None


def payment_cutoff(day: date) -> date:
    """The end (Sunday) of the week after the one ``day`` falls in."""
    return day + timedelta(days=6 - day.weekday() + 7)


def run_month_end_payments(desk: TurnContext) -> None:
    """Pay every approved open bill due by the cutoff in one run (once per day)."""
    if any(d["doc_date"] == desk.day.isoformat()
           for d in q.documents(desk.store, kind="payment_run")):
        return
    due_by = payment_cutoff(desk.day)
    if any(b.approved and b.open > 0 and b.due_on <= due_by
           for b in desk.ledger.books.bills.values()):
        desk.execute(c.RunPayments(bank_account_id=OPERATING_ACCOUNT, entry_date=desk.day,
                                   due_by=due_by))


BANK_STATEMENT = re.compile(r"bank-statement-(\d{4}-\d{2})\.csv$")


def record_bank_charges(desk: TurnContext) -> None:
    """Record the month's bank charges and interest from the bank's statement in the inbox.

    Each charge's statement line is imported first (the bank feed brings the day's lines
    only at its end) and the charge recorded against it; a line already in the books is
    left alone.
    """
    period = f"{desk.day:%Y-%m}"
    have = {x["line_id"] for x in q.statement_lines(desk.store)}
    for path in [*desk.archive(), *desk.inbox()]:
        m = BANK_STATEMENT.search(path.name)
        if m is None or m.group(1) != period:
            continue
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            line_id = (row.get("line_id") or "").strip()
            text = (row.get("description") or "").upper()
            if not line_id or line_id in have or not row.get("amount"):
                continue
            try:
                amount = parse_cents(row["amount"].strip())
                day = date.fromisoformat(row["date"].strip())
            except (ValueError, KeyError):
                continue
            is_fee = amount < 0 and ("CHARGE" in text or "FEE" in text)
            if not (is_fee or (amount > 0 and "INTEREST" in text)):
                continue  # deposits and payments come with the bank feed
            line = c.StatementLineIn(line_id=line_id, entry_date=day, amount=amount,
                                     description=row.get("description", "").strip(),
                                     reference=row.get("reference", "").strip(),
                                     counterparty=row.get("counterparty", "").strip(),
                                     bank_ref=line_id)
            if isinstance(desk.execute(c.ImportStatementLines(
                    bank_account_id=OPERATING_ACCOUNT, lines=(line,))), CommandRejected):
                continue
            have.add(line_id)
            memo = f"{line.description} {line.reference}".strip()[:200]
            if is_fee:
                desk.execute(c.RecordBankFee(bank_account_id=OPERATING_ACCOUNT,
                                             entry_date=day, amount=-amount, memo=memo,
                                             line_id=line_id))
            else:
                desk.execute(c.RecordInterest(bank_account_id=OPERATING_ACCOUNT,
                                              entry_date=day, amount=amount, memo=memo,
                                              line_id=line_id))


def write_exceptions(desk: TurnContext, rows: Iterable[ExceptionRow]) -> Path:
    """Write ``out/exceptions.csv`` (every exception so far, in the order documents came)."""
    desk.output_dir.mkdir(parents=True, exist_ok=True)
    path = desk.output_dir / EXCEPTIONS_FILE
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(EXCEPTION_COLUMNS)
        w.writerows((r.document, r.vendor, r.reason) for r in rows)
    return path


# --- the reference: reading the documents ----------------------------------------------------

_DOC_NUMBER = re.compile(r"^DOC-(\d+)-")
_PHONE = re.compile(r"\+\d{1,3}\s*\(\d{3}\)\s*\d{3}-\d{4}")
_LETTERHEAD = re.compile(r"^Phone\s+(?P<phone>.+?)\s+\|\s+(?P<email>\S+@\S+)\s*$", re.M)
_ROW = re.compile(r"^(?P<desc>\S.*?)\s+(?P<qty>\d+)\s+(?P<unit>[\d,]+\.\d{2})\s+"
                  r"(?P<amount>[\d,]+\.\d{2})\s*$", re.M)
_TOTAL = re.compile(r"^\s*Total USD\s+(?P<total>[\d,]+\.\d{2})\s*$", re.M)
_DATE = r"(\d{4}-\d{2}-\d{2})"


@dataclass(frozen=True)
class Sender:
    """Who a document says it is from: the name printed or shown, address and phone."""

    name: str
    email: str = ""
    phone: str = ""


@dataclass(frozen=True)
class _Invoice:
    """A vendor invoice as printed (in a ``.txt`` file or a copy inside an email)."""

    sender: Sender
    number: str
    issued_on: date
    due_on: date
    lines: tuple[Line, ...]
    total: int
    quote: str | None


@dataclass(frozen=True)
class Quote:
    """A vendor's quote: the prices it agreed to bill."""

    sender: Sender
    number: str
    lines: tuple[Line, ...]
    total: int


@dataclass(frozen=True)
class CreditNote:
    """A vendor's credit note against one of its invoices."""

    sender: Sender
    number: str
    issued_on: date
    against: str
    amount: int


@dataclass(frozen=True)
class BankChange:
    """An email asking to pay a vendor to other bank details."""

    sender: Sender
    bank: BankDetails
    phones: tuple[str, ...]


@dataclass(frozen=True)
class Unreadable:
    """A document the clerk could not read as any of the above."""

    what: str


Document = _Invoice | Quote | CreditNote | BankChange | Unreadable | None


def arrival_order(path: Path) -> tuple[int, str]:
    """Sort key: the delivery number in the file name (``DOC-000123-...``), then the name."""
    m = _DOC_NUMBER.match(path.name)
    return (int(m.group(1)) if m else 10**9, path.name)


def digits(number: str) -> str:
    """An invoice number's digits without leading zeros (what a reformatting keeps)."""
    return re.sub(r"\D", "", number).lstrip("0")


def phone_key(phone: str) -> str:
    """A phone number's digits."""
    return re.sub(r"\D", "", phone)


def _search(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text, re.M)
    return m.group(1).strip() if m else None


def _table(text: str) -> tuple[tuple[Line, ...], int] | None:
    lines = tuple(Line(m["desc"].strip(), int(m["qty"]), parse_cents(m["unit"]))
                  for m in _ROW.finditer(text))
    total = _TOTAL.search(text)
    if not lines or total is None:
        return None
    amounts = [parse_cents(m["amount"]) for m in _ROW.finditer(text)]
    if any(x.amount != a for x, a in zip(lines, amounts, strict=True)):
        return None
    return lines, parse_cents(total["total"])


def _letterhead(text: str, shown_as: Sender | None = None) -> Sender | None:
    m = _LETTERHEAD.search(text)
    if m is None:
        return shown_as
    head = text[:m.start()].rstrip("\n").split("\n")
    name = head[-3].strip() if len(head) >= 3 else (shown_as.name if shown_as else "")
    return Sender(name=name, email=m["email"].strip(), phone=m["phone"].strip())


def read_invoice(text: str, shown_as: Sender | None = None) -> _Invoice | None:
    """An invoice's printed facts, or None when the text is not a readable invoice."""
    sender = _letterhead(text, shown_as)
    number = _search(r"^Invoice number:\s*(.+)$", text)
    issued = _search(rf"^Invoice date:\s*{_DATE}", text)
    due = _search(rf"^Due date:\s*{_DATE}", text)
    table = _table(text)
    if sender is None or not (number and issued and due and table):
        return None
    lines, total = table
    if sum(x.amount for x in lines) != total:
        return None
    return _Invoice(sender, number, date.fromisoformat(issued), date.fromisoformat(due),
                   lines, total, _search(r"^Your quote:\s*(\S+)", text))


def read_credit_note(text: str) -> CreditNote | None:
    """A credit note's printed facts, or None."""
    sender = _letterhead(text)
    number = _search(r"^CREDIT NOTE\s+(\S+)\s*$", text)
    issued = _search(rf"^Date:\s*{_DATE}", text)
    against = _search(r"^Against invoice:\s*(.+?)\s+of\s+\d{4}-\d{2}-\d{2}\s*$", text)
    amount = _search(r"^Amount credited:\s*USD\s*([\d,]+\.\d{2})", text)
    if sender is None or not (number and issued and against and amount):
        return None
    return CreditNote(sender, number, date.fromisoformat(issued), against, parse_cents(amount))


def _email(text: str) -> tuple[Sender, str, str]:
    msg = message_from_string(text, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    shown = msg["From"]
    addresses = getattr(shown, "addresses", ()) if shown is not None else ()
    name = addresses[0].display_name if addresses else ""
    email = addresses[0].addr_spec if addresses else ""
    part = msg.get_body(preferencelist=("plain",))
    body = part.get_content() if part is not None else ""
    return Sender(name=name, email=email), str(msg["Subject"] or ""), body


def read_email(text: str) -> Document:
    """What an email is: an invoice copy, a quote, a bank-detail change, or unreadable."""
    sender, subject, body = _email(text)
    flat = " ".join(body.split())
    if "Routing number:" in body and "Account number:" in body:
        name = _search(r"^\s*Account name:\s*(.+)$", body)
        routing = _search(r"^\s*Routing number:\s*(\d+)", body)
        account = _search(r"^\s*Account number:\s*(\d+)", body)
        if not (name and routing and account):
            return Unreadable("a bank-detail email without complete bank details")
        return BankChange(sender, BankDetails(account_name=name, routing=routing,
                                              account_number=account),
                          tuple(_PHONE.findall(flat)))
    if "Invoice number:" in body:
        invoice = read_invoice(body, sender)
        if invoice is None:
            return Unreadable("an invoice copy that could not be read")
        # the copy came from the address on the email, whatever its letterhead says
        return replace(invoice, sender=replace(invoice.sender,
                                               email=sender.email or invoice.sender.email))
    quote = re.search(r"\bQuote\s+(\S+)", subject) or re.search(r"\(quote\s+([^,\s)]+)", flat)
    table = _table(body)
    if quote and table:
        return Quote(sender, quote.group(1), *table)
    return Unreadable(f"an email ({subject or 'no subject'}) that is not an invoice, quote, "
                      "credit note or bank-detail change")


def _pdf_text(path: Path) -> str | None:
    """A PDF's text as laid out on its pages, its common indent removed (None: unreadable)."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        pages = [page.extract_text(extraction_mode="layout") for page in PdfReader(path).pages]
    except (OSError, ValueError, PyPdfError):
        return None
    return textwrap.dedent("\n".join(pages)) + "\n"


def read_document(path: Path) -> Document:
    """Read one inbox file; None for files the clerk only files (statements).

    A vendor's invoice may come as a text file, a PDF of the same page (read with pypdf),
    or inside an email under a free-text request, which is never an instruction.
    """
    if path.suffix == ".pdf":
        text = _pdf_text(path)
        if text is None:
            return Unreadable("a PDF that could not be read")
        if re.search(r"^CREDIT NOTE\s", text, re.M):
            return read_credit_note(text) or Unreadable("a credit note that could not be read")
        return read_invoice(text) or Unreadable("an invoice that could not be read")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".eml":
        return read_email(text)
    if path.suffix == ".txt":
        if re.search(r"^CREDIT NOTE\s", text, re.M):
            return read_credit_note(text) or Unreadable("a credit note that could not be read")
        return read_invoice(text) or Unreadable("an invoice that could not be read")
    return None


# --- the reference: deciding, document by document ------------------------------------------


@dataclass(frozen=True)
class Seen:
    """An invoice received earlier, and what became of it."""

    document: str
    number: str
    total: int
    held: bool


@dataclass
class _Clerk:
    """The reference clerk's reading of the inbox, replayed from the first document."""

    desk: TurnContext
    books: BooksIndex
    vendors: dict[str, list[str]] = field(default_factory=dict)
    invoices: dict[str, list[Seen]] = field(default_factory=dict)
    quotes: dict[tuple[str, str], Quote] = field(default_factory=dict)
    addresses: dict[str, set[str]] = field(default_factory=dict)
    phones: dict[str, set[str]] = field(default_factory=dict)
    exceptions: list[ExceptionRow] = field(default_factory=list)

    @classmethod
    def for_desk(cls, desk: TurnContext) -> _Clerk:
        """A clerk with the books' vendors by name."""
        clerk = cls(desk, BooksIndex.read(desk))
        for v in sorted(desk.ledger.books.vendors.values(), key=lambda v: v.vendor_id):
            clerk.vendors.setdefault(v.name.casefold(), []).append(v.vendor_id)
        return clerk

    def except_(self, path: Path, vendor: str, reason: str) -> None:
        """List a document as an exception."""
        self.exceptions.append(ExceptionRow(path.name, vendor, reason))

    def vendor_of(self, path: Path, sender: Sender) -> str | None:
        """The books' vendor a document names, or None (listed as an exception)."""
        ids = self.vendors.get(sender.name.casefold().strip(), [])
        if len(ids) == 1:
            return ids[0]
        self.except_(path, sender.name, f"vendor {sender.name!r} is "
                     + ("not in the books" if not ids else
                        f"ambiguous in the books ({', '.join(ids)})"))
        return None

    def learn_contact(self, vendor_id: str, sender: Sender) -> None:
        """Remember the address and phone a vendor's invoice or credit note came with."""
        if sender.email:
            self.addresses.setdefault(vendor_id, set()).add(sender.email.casefold())
        if sender.phone:
            self.phones.setdefault(vendor_id, set()).add(phone_key(sender.phone))

    def handle(self, path: Path) -> None:
        """Decide one document from what came before it, and do what is not done yet."""
        doc = read_document(path)
        match doc:
            case None:
                return
            case Unreadable(what=what):
                self.except_(path, "", f"could not act on {what}")
            case Quote():
                vendor = self.vendor_of(path, doc.sender)
                if vendor is not None:
                    self.quotes[(vendor, document_number_key(doc.number))] = doc
            case _Invoice():
                vendor = self.vendor_of(path, doc.sender)
                if vendor is not None:
                    self.learn_contact(vendor, doc.sender)
                    self.invoice(path, vendor, doc)
            case CreditNote():
                vendor = self.vendor_of(path, doc.sender)
                if vendor is not None:
                    self.learn_contact(vendor, doc.sender)
                    self.credit_note(path, vendor, doc)
            case BankChange():
                vendor = self.vendor_of(path, doc.sender)
                if vendor is not None:
                    self.bank_change(path, vendor, doc)

    def invoice(self, path: Path, vendor: str, inv: _Invoice) -> None:
        """Enter an invoice once; list a second copy or a bill above its quote."""
        earlier = self.invoices.setdefault(vendor, [])
        key = document_number_key(inv.number)
        same = next((s for s in earlier if document_number_key(s.number) == key), None)
        if same is not None:
            self.except_(path, vendor, f"duplicate: invoice {inv.number} was already received "
                                       f"({same.document})")
            self.decline_bill(vendor, inv, "duplicate")
            return
        near = next((s for s in earlier if s.total == inv.total and digits(s.number)
                     and digits(s.number) == digits(inv.number)), None)
        if near is not None:
            self.except_(path, vendor, f"near-duplicate: invoice {inv.number} is invoice "
                                       f"{near.number} ({near.document}) renumbered, same "
                                       f"amount {display_cents(inv.total)}")
            self.decline_bill(vendor, inv, "near-duplicate")
            return
        booked = self.books.bill_of(vendor, inv.number)
        if booked is not None and self.desk.ledger.books.bills[booked].total != inv.total:
            self.except_(path, vendor, f"invoice {inv.number} is already in the books as "
                                       f"{booked} with another amount")
            return
        held = self.above_quote(vendor, inv)
        earlier.append(Seen(path.name, inv.number, inv.total, held is not None))
        if held is not None:
            self.except_(path, vendor, held)
            self.decline_bill(vendor, inv, "above its quote")
            return
        done = self.books.enter_bill(vendor, inv.number, inv.issued_on, inv.due_on, inv.lines)
        if isinstance(done, CommandRejected):
            self.except_(path, vendor, f"not entered: the books refused it ({done.message})")

    def decline_bill(self, vendor: str, inv: _Invoice, why: str) -> None:
        """Note the bill not entered (for mutation tests: what entering it would be)."""
        self.desk.decline(bill_command(vendor, inv.number, inv.issued_on, inv.due_on,
                                       inv.lines), f"bill {inv.number}: {why}")

    def above_quote(self, vendor: str, inv: _Invoice) -> str | None:
        """Why an invoice is held against its quote, or None when it matches."""
        if inv.quote is None:
            return None
        quote = self.quotes.get((vendor, document_number_key(inv.quote)))
        if quote is None:
            return (f"held: invoice {inv.number} cites quote {inv.quote}, which was not "
                    "received; price cannot be checked")
        agreed = {x.description: x.unit_price for x in quote.lines}
        over = [x for x in inv.lines if x.unit_price > agreed.get(x.description, x.unit_price)]
        if inv.total > quote.total or over:
            return (f"held: invoice {inv.number} bills {display_cents(inv.total)}, above "
                    f"quote {quote.number} ({display_cents(quote.total)} agreed)")
        return None

    def credit_note(self, path: Path, vendor: str, note: CreditNote) -> None:
        """Record a credit note and apply it to its invoice; list it if it cannot be."""
        key = document_number_key(note.against)
        original = next((s for s in self.invoices.get(vendor, [])
                         if document_number_key(s.number) == key), None)
        if original is not None and original.held:
            self.except_(path, vendor, f"credit note {note.number} is against invoice "
                                       f"{note.against}, which is held; not recorded")
            return
        bill_id = self.books.bill_of(vendor, note.against)
        if bill_id is None:
            self.except_(path, vendor, f"credit note {note.number} is against invoice "
                                       f"{note.against}, which is not in the books")
            return
        why = self.books.credit_bill(vendor, note.number, note.issued_on, note.amount, bill_id)
        if why is not None:
            self.except_(path, vendor, f"credit note {note.number}: {why}")

    def bank_change(self, path: Path, vendor: str, change: BankChange) -> None:
        """Request a change only from the usual address with the phone on file."""
        usual = sorted(self.addresses.get(vendor, set()))
        known = self.phones.get(vendor, set())
        problems = []
        if change.sender.email.casefold() not in usual:
            problems.append(f"sent from {change.sender.email or 'no address'}, not the "
                            f"vendor's usual address ({', '.join(usual) or 'none on file'})")
        offered = sorted({phone_key(p) for p in change.phones})
        if not offered:
            problems.append("gives no call-back number")
        elif not known or any(p not in known for p in offered):
            problems.append(f"call-back number {', '.join(change.phones)} is not the phone on "
                            "the vendor's earlier documents")
        m = _DOC_NUMBER.match(path.name)
        request_id = f"BCR-{m.group(1) if m else path.stem[:40]}"
        if problems:
            self.except_(path, vendor, "bank-detail change not verified, not requested: "
                                       + "; ".join(problems))
            self.desk.decline(c.RequestVendorBankChange(
                request_id=request_id, vendor_id=vendor, new_bank=change.bank,
                reason=f"{path.name}: unverified"), "bank-detail change not verified")
            return
        refused = self.books.request_bank_change(
            request_id, vendor, change.bank,
            f"{path.name}: from {change.sender.email}, call-back {change.phones[0]} matches "
            "the vendor's invoices")
        if refused is not None:
            self.except_(path, vendor, f"bank-detail change refused: {refused.message}")


def is_last_business_day(day: date) -> bool:
    """Whether the next weekday falls in another month."""
    nxt = day + timedelta(days=1)
    while nxt.weekday() >= 5:
        nxt += timedelta(days=1)
    return day.weekday() < 5 and nxt.month != day.month


def reference(desk: TurnContext) -> None:
    """The clerk's turn, from the inbox, the archive and the books."""
    clerk = _Clerk.for_desk(desk)
    for path in sorted([*desk.archive(), *desk.inbox()], key=arrival_order):
        clerk.handle(path)
    if is_last_business_day(desk.day):
        run_month_end_payments(desk)
        record_bank_charges(desk)
    write_exceptions(desk, clerk.exceptions)


# --- the oracle ------------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """The clerk's turn from the truth: originals entered, the rest held or listed."""
    books = BooksIndex.read(desk)
    bills: dict[str, BillIssued] = {}
    credits: dict[tuple[str, str], CreditNoteIssued] = {}
    asked: dict[str, BankChangeAsked] = {}
    rows: list[ExceptionRow] = []
    for e in world.ledger.store.read(realm="world", types=[
            "bill_issued", "credit_note_issued", "bank_change_asked", "document_delivered"]):
        w = decode_world_event(e.type, e.payload)
        if isinstance(w, BillIssued):
            bills[w.bill_ref] = w
        elif isinstance(w, CreditNoteIssued):
            credits[(w.vendor_id, w.number)] = w
        elif isinstance(w, BankChangeAsked):
            asked[w.request_ref] = w
        elif isinstance(w, DocumentDelivered):
            row = _oracle_document(books, w, date.fromisoformat(e.business_date), bills,
                                   credits, asked)
            if row is not None:
                rows.append(row)
    if world.calendar.is_last_business_day_of_month(desk.day):
        run_month_end_payments(desk)
        record_bank_charges(desk)
    write_exceptions(desk, rows)


def _oracle_document(books: BooksIndex, doc: DocumentDelivered, on: date,
                     bills: dict[str, BillIssued],
                     credits: dict[tuple[str, str], CreditNoteIssued],
                     asked: dict[str, BankChangeAsked]) -> ExceptionRow | None:
    """Act on one delivered document as its truth says; the exception it makes, if any."""
    truth = doc.truth
    vendor = str(truth.get("vendor_id", ""))
    if "request_ref" in truth:
        change = asked[truth["request_ref"]]
        if not change.genuine:
            return ExceptionRow(doc.filename, vendor, "bank-detail change not genuine "
                                                    f"(from {change.sender}); not requested")
        books.request_bank_change(f"BCR-{doc.doc_id.removeprefix('DOC-')}", vendor,
                                  change.new_bank, f"{doc.filename}: genuine")
        return None
    if "credit_number" in truth:
        note = credits[(vendor, truth["credit_number"])]
        billed = bills.get(note.for_bill_ref or "")
        if billed is None or billed.kind != "original":
            return ExceptionRow(doc.filename, vendor, f"credit note {note.number} is against a "
                                                    "held invoice; not recorded")
        bill_id = books.bill_of(vendor, billed.invoice_number)
        if bill_id is None:
            return ExceptionRow(doc.filename, vendor, f"credit note {note.number}: its invoice "
                                                    "is not in the books")
        why = books.credit_bill(vendor, note.number, on, note.amount, bill_id)
        return None if why is None else ExceptionRow(doc.filename, vendor, why)
    bill = bills.get(str(truth.get("bill_ref", ""))) if truth.get("kind") != "quote" else None
    if bill is None:
        return None
    if bill.kind in ("duplicate", "near_duplicate"):
        first = bills[bill.duplicate_of or ""]
        return ExceptionRow(doc.filename, vendor, f"{bill.kind.replace('_', '-')}: invoice "
                                                f"{bill.invoice_number} repeats "
                                                f"{first.invoice_number}")
    if bill.kind == "price_variance":
        return ExceptionRow(doc.filename, vendor, f"held: invoice {bill.invoice_number} bills "
                                                f"{display_cents(bill.total)}, above the "
                                                f"agreed {display_cents(bill.agreed_total)}")
    lines = [Line(x.description, x.quantity, x.unit_price) for x in bill.lines]
    done = books.enter_bill(vendor, bill.invoice_number, bill.issued_on, bill.due_on, lines)
    if isinstance(done, CommandRejected):
        return ExceptionRow(doc.filename, vendor, f"not entered: {done.message}")
    return None


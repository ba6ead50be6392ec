"""Cash application: the reference solver (the clerk's materials only) and the oracle (the truth).

The reference clerk reads what an external agent can see: the papers in ``inbox/``
and ``inbox/archive/`` (card processor payouts and remittance advices as CSV, PDF or
plain text; the policy note; emails, which it never acts on) and the books through
``erp.queries`` (statement lines, receipts, invoices) and the erp realm's customer
register. Papers and bank lines are read as a person reads them: an invoice number
however the customer wrote it (``INV 47498``, ``Inv#047511``, ``/INV/47526``, ``Payment
for invoice 47512``), a payer name however the payer's bank sent it (upper-cased, cut
short: matched to the one customer whose name it is, or begins), a wire however the
bank names it (``FEDWIRE CREDIT``, ``SWIFT MT103 CR``...). It applies the policy note
rule by rule:

1. the payer decides: a reference quoting another customer's invoice goes to the
   payer's own open invoice of that amount;
2. a card payout is assigned to the customer its remittance names, applied net and
   its fee accepted as a fee allowance;
3. a wire short of its invoice by at most 2% is applied and the shortfall allowed;
4. a partial payment is applied as it came;
5. an ACH with a remittance advice is applied line by line; a wire naming only the
   customer goes to its open invoices, oldest due first;
6. a repeat of a payment already applied (same customer, amount and reference) and
   the second copy of a bank line stay unapplied;
7. a payment naming an invoice already paid stays unapplied;
8. whatever it cannot place stays unapplied; 9. it never writes anything off.

Every turn it rewrites ``out/unapplied.csv`` with each statement line whose receipt
it leaves (partly) unapplied. The oracle reads the world's truth (which payment
each line carries and what it was meant for) and leaves the same kinds unapplied.
Only the oracle may touch the world: its imports of ``sim`` stay inside it.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected, MoneyError
from erp.money import display_cents, parse_cents, pct_of
from scenarios.turn import TurnContext

if TYPE_CHECKING:
    from sim.world import World

OUTPUT = "unapplied.csv"
WIRE_SHORTFALL_BP = 200
"""International wires may arrive short by up to 2% of the invoice (policy rule 3)."""
PAYOUT_COLUMNS = {"payout_id", "customer", "invoice", "gross", "fee", "net"}
ADVICE_COLUMNS = {"payer", "payment_id", "invoice_id", "amount"}
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_INVOICE_NUMBER = re.compile(
    r"(?i)(?<![A-Za-z])inv(?:oice)?(?:\s*no\.?)?[\s#:./-]*(\d{1,12})(?!\d)")
"""An invoice number however a customer writes it: ``INV 47498``, ``Inv#047511``,
``/INV/47526``, ``Payment for invoice 47512``, ``Invoice No. 000197``, ``INV-000123``."""
_GLUED_INVOICE = re.compile(r"(?<=[a-z])Inv(?:oice)?(?:\s*[Nn]o\.?)?[\s#:./-]*(\d{1,12})(?!\d)")
"""An invoice number run into the text before it, as a PDF's layout text gives a cell
that overflows its column: ``Cunningham, Wright and RasmussenInvoice No. 000411`` (a
capital ``Inv`` right after a lower-case letter)."""
_WIRE = re.compile(r"\b(WIRE|FEDWIRE|SWIFT|MT103|WT)\b")
"""How banks name an incoming wire on a statement line."""
_AMOUNT = re.compile(r"^-?\$?\d{1,3}(,\d{3})*(\.\d{2})$|^-?\$?\d+\.\d{2}$")
_CELLS = re.compile(r"\s{2,}")


# --- what the books hold ----------------------------------------------------------------


@dataclass
class _Invoice:
    """An invoice as the books show it."""

    invoice_id: str
    customer_id: str
    due_on: str
    total: int
    open: int


@dataclass
class _Receipt:
    """A receipt the bank feed recorded, with the statement line it is matched to."""

    receipt_id: str
    line_id: str
    day: str
    amount: int
    open: int
    customer_id: str | None
    description: str = ""
    reference: str = ""
    payer: str = ""

    @property
    def fresh(self) -> bool:
        """Nothing of it was applied yet."""
        return self.open == self.amount

    @property
    def is_wire(self) -> bool:
        """The money came by wire (whatever the bank calls it)."""
        return _WIRE.search(self.description.upper()) is not None

    def same_line(self, other: _Receipt) -> bool:
        """Whether two statement lines carry the very same details (an export twice)."""
        return (self.day, self.amount, self.description, self.reference, self.payer) == (
            other.day, other.amount, other.description, other.reference, other.payer)


def read_invoices(store: Any) -> dict[str, _Invoice]:
    """Every customer invoice of the books by id."""
    return {d["doc_id"]: _Invoice(d["doc_id"], d["party"], d["due_on"] or "", int(d["total"]),
                                 int(d["open_amount"]))
            for d in q.documents(store, kind="invoice")}


def _read_receipts(store: Any) -> list[_Receipt]:
    """Every receipt with its statement line's details, in bank order (date, line)."""
    lines: dict[str, dict[str, Any]] = {}
    for line in q.statement_lines(store):
        for kind, doc_id, *_ in json.loads(line["matched_to"] or "[]"):
            if kind == "receipt":
                lines[doc_id] = line
    out = []
    for d in q.documents(store, kind="receipt"):
        line = lines.get(d["doc_id"], {})
        out.append(_Receipt(d["doc_id"], line.get("line_id") or d["doc_id"], d["doc_date"] or "",
                           int(d["total"]), int(d["open_amount"]), d["party"],
                           line.get("description") or "", line.get("reference") or d["reference"]
                           or "", line.get("counterparty") or ""))
    return sorted(out, key=lambda r: (r.day, r.line_id))


def read_customers(store: Any) -> dict[str, str]:
    """The customer register: name -> customer id (a name two customers share names no one)."""
    by_name: dict[str, str | None] = {}
    for e in store.read(realm="erp", types=["customer_registered"]):
        name = e.data["name"].strip().casefold()
        by_name[name] = None if name in by_name else e.data["customer_id"]
    return {n: cid for n, cid in by_name.items() if cid is not None}


def plain_name(name: str) -> str:
    """A name as banks export it, to compare: letters and digits, upper case, one space."""
    return " ".join(re.sub(r"[^A-Z0-9&]+", " ", name.upper()).split())


def read_register(store: Any) -> dict[str, str]:
    """Every customer's plain name (``plain_name``) by customer id."""
    return {e.data["customer_id"]: plain_name(e.data["name"])
            for e in store.read(realm="erp", types=["customer_registered"])}


def invoice_numbers(text: str) -> list[str]:
    """The digits (without zero padding) of every invoice number a text writes, in order."""
    out: list[str] = []
    for m in _INVOICE_NUMBER.finditer(text):
        digits = m.group(1).lstrip("0") or "0"
        if digits not in out:
            out.append(digits)
    return out


def _digits(invoice_id: str) -> str:
    return re.sub(r"\D", "", invoice_id).lstrip("0") or "0"


# --- what the papers say ----------------------------------------------------------------


@dataclass(frozen=True)
class _Payout:
    """A card processor's payout for one charge: whose, for which invoice, gross less fee."""

    payout_id: str
    customer: str
    invoice_id: str
    gross: int
    fee: int
    net: int


@dataclass(frozen=True)
class AdviceLine:
    """One line of a customer's remittance advice: an invoice and the amount paid on it."""

    payment_id: str
    payer: str
    invoice_id: str
    amount: int


@dataclass
class Papers:
    """The remittances in the inbox and its archive."""

    payouts: dict[str, _Payout] = field(default_factory=dict)
    advices: dict[str, list[AdviceLine]] = field(default_factory=dict)


def _csv_rows(path: Path) -> tuple[set[str], list[dict[str, str]]]:
    try:
        reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
        rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error):
        return set(), []
    return {(h or "").strip() for h in reader.fieldnames or ()}, rows


def pdf_text(path: Path) -> str:
    """The text of a PDF, line by line as laid out on its pages ("" when unreadable).

    A paper's text depends on its bytes alone, so each content is laid out once a
    process (:func:`pdf_text_of`): a clerk reads every paper of the archive again at each
    turn, and pypdf's layout took most of a year's close on the hard tier."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return pdf_text_of(data)


@functools.lru_cache(maxsize=4096)
def pdf_text_of(data: bytes) -> str:
    """:func:`pdf_text` of a PDF's bytes (kept for the last 4,096 contents)."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        return "\n".join(page.extract_text(extraction_mode="layout") for page in reader.pages)
    except (OSError, ValueError, PyPdfError):
        return ""


def _amount(token: str) -> int | None:
    token = token.strip()
    if not _AMOUNT.match(token):
        return None
    try:
        return parse_cents(token.replace("$", "").replace(",", ""))
    except MoneyError:
        return None


def _row(line: str, amounts: int) -> tuple[str, list[int]] | None:
    """A table row ending in ``amounts`` amounts: the text before them, and the amounts."""
    words = line.split()
    if len(words) <= amounts:
        return None
    tail = [_amount(w) for w in words[-amounts:]]
    if any(a is None for a in tail):
        return None
    return " ".join(words[:-amounts]), [a for a in tail if a is not None]


def _read_text_paper(text: str, papers: Papers) -> None:
    """A payout report or a remittance advice written as text (a PDF's or a .txt file's)."""
    lines = [x.rstrip() for x in text.splitlines() if x.strip()]
    payout = re.search(r"\bPayout (po_[A-Za-z0-9]+)", text)
    if payout is not None:
        fields = {m.group(1).lower(): m.group(2).strip()
                  for m in re.finditer(r"(?m)^\s*(Customer|Description|Gross|Fee|Net):\s*(.+)$",
                                       text)}
        customer = description = ""
        money: list[int | None] = []
        if {"customer", "description", "gross", "fee", "net"} <= set(fields):
            customer, description = fields["customer"], fields["description"]
            money = [_amount(fields[k]) for k in ("gross", "fee", "net")]
        else:
            for line in lines:
                row = _row(line, 3)
                cells = _CELLS.split(line.strip())
                if row and len(cells) == 5 and _INVOICE_NUMBER.search(cells[1]):
                    customer, description = cells[0], cells[1]  # the columns as laid out
                    money = list(row[1])
                    break
                m = (_INVOICE_NUMBER.search(row[0]) or _GLUED_INVOICE.search(row[0])
                     if row else None)
                if row and m:
                    # the description starts where its invoice number does (or a / before it)
                    customer = row[0][:m.start()].rstrip(" /#.:-")
                    description = row[0][m.start():]
                    money = list(row[1])
                    break
        if customer and len(money) == 3 and all(a is not None for a in money):
            gross, fee, net = (int(a or 0) for a in money)
            papers.payouts[payout.group(1)] = _Payout(payout.group(1), customer, description,
                                                      gross, fee, net)
        return
    advice = re.search(r"Remittance advice (\S+)", text)
    if advice is None or not lines:
        return
    pid, payer = advice.group(1), lines[0].strip()
    out = []
    for line in lines:
        row = _row(line, 2)
        if row and _INVOICE_NUMBER.search(row[0]):
            out.append(AdviceLine(pid, payer, row[0].strip(), row[1][-1]))
    if out:
        papers.advices[pid] = out


def read_papers(paths: Iterable[Path]) -> Papers:
    """Card payouts and remittance advices from the CSV, PDF and text files among ``paths``.

    An invoice on a paper is kept as the paper writes it (``Inv#47511``); the clerk
    resolves it against the books (``_Clerk.invoice_named``).
    """
    papers = Papers()
    for path in sorted(paths, key=lambda p: p.name):
        suffix = path.suffix.lower()
        if suffix == ".pdf":
            _read_text_paper(pdf_text(path), papers)
            continue
        if suffix == ".txt":
            with contextlib.suppress(OSError, UnicodeDecodeError):
                _read_text_paper(path.read_text(encoding="utf-8"), papers)
            continue
        if suffix != ".csv":
            continue  # emails carry no remittance, and are never instructions (policy 9)
        header, rows = _csv_rows(path)
        try:
            if header.issuperset(PAYOUT_COLUMNS):
                for row in rows:
                    p = _Payout(row["payout_id"].strip(), row["customer"].strip(),
                               row["invoice"].strip(), parse_cents(row["gross"]),
                               parse_cents(row["fee"]), parse_cents(row["net"]))
                    papers.payouts[p.payout_id] = p
            elif header.issuperset(ADVICE_COLUMNS):
                advice: dict[str, list[AdviceLine]] = {}
                for row in rows:
                    a = AdviceLine(row["payment_id"].strip(), row["payer"].strip(),
                                   row["invoice_id"].strip(), parse_cents(row["amount"]))
                    advice.setdefault(a.payment_id, []).append(a)
                papers.advices.update(advice)
        except (KeyError, AttributeError, MoneyError):
            continue  # a paper we cannot read is no evidence
    return papers


def tokens(text: str) -> list[str]:
    """The words of a bank reference that could be document ids."""
    return _TOKEN.findall(text)


# --- the clerk ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign:
    """Name the receipt's customer."""

    customer_id: str


@dataclass(frozen=True)
class Apply:
    """Apply part of the receipt to an invoice."""

    invoice_id: str
    amount: int


@dataclass(frozen=True)
class Allow:
    """Accept a fee or an intermediary's charge as paid on an invoice."""

    invoice_id: str
    amount: int
    reason: str


Step = Assign | Apply | Allow


@dataclass
class _Plan:
    """What to do with a receipt, and why the rest of it stays unapplied."""

    steps: list[Step] = field(default_factory=list)
    reason: str = ""
    later: bool = False


class _Clerk:
    """Applies one turn's receipts under the cash application policy, from visible materials."""

    def __init__(self, desk: TurnContext) -> None:
        self.desk = desk
        self.invoices = read_invoices(desk.store)
        self.receipts = _read_receipts(desk.store)
        self.customers = read_customers(desk.store)
        self.register = read_register(desk.store)
        self.by_digits: dict[str, str] = {}
        for invoice_id in sorted(self.invoices):
            self.by_digits.setdefault(_digits(invoice_id), invoice_id)
        self.papers = read_papers([*desk.inbox(), *desk.archive()])
        self.reasons: dict[str, str] = {}

    def invoice_named(self, text: str) -> _Invoice | None:
        """The invoice a paper's invoice column names, however it is written."""
        if text in self.invoices:
            return self.invoices[text]
        return next((self.invoices[self.by_digits[d]] for d in invoice_numbers(text)
                     if d in self.by_digits), None)

    def named_in(self, reference: str) -> list[_Invoice]:
        """Every invoice of the books a bank reference names, however it writes them."""
        ids = [t for t in tokens(reference) if t in self.invoices]
        ids += [self.by_digits[d] for d in invoice_numbers(reference)
                if d in self.by_digits and self.by_digits[d] not in ids]
        return [self.invoices[i] for i in ids]

    def payer_customer(self, r: _Receipt) -> str | None:
        """The customer a bank line's payer name names: the one whose name it is or begins
        (a bank cuts names to its field width); among several, the one whose invoice the
        reference names, or who has an open invoice of the amount. None when unclear."""
        payer = plain_name(r.payer)
        if len(payer) < 3:
            return None
        exact = [c for c, n in self.register.items() if n == payer]
        candidates = exact or [c for c, n in self.register.items() if n.startswith(payer)]
        if len(candidates) > 1:
            named = {i.customer_id for i in self.named_in(r.reference)}
            narrowed = [c for c in candidates if c in named] or [
                c for c in candidates if any(i.open == r.amount for i in self._open_of(c))]
            candidates = narrowed
        return candidates[0] if len(candidates) == 1 else None

    # --- the turn --------------------------------------------------------------------

    def work(self) -> dict[str, str]:
        """Apply what can be applied; return line id -> reason for every receipt left open."""
        fresh = [r for r in self.receipts if r.fresh]
        # Direct evidence first (a named invoice, a remittance), then the receipts placed by
        # amount or by due date, so that these never take an invoice another payment names.
        later = [r for r in fresh if self.settle(r, early=True)]
        for r in later:
            self.settle(r, early=False)
        out = {}
        for r in self.receipts:
            if r.open > 0:
                out[r.line_id] = self.reasons.get(r.receipt_id) or self.leftover(r)
        return out

    def settle(self, r: _Receipt, *, early: bool) -> bool:
        """Plan and carry out one receipt; True when it must wait for the second pass."""
        plan = self.plan(r, early=early)
        if plan.later:
            return True
        for step in plan.steps:
            refused = self.do(r, step)
            if refused is not None:
                self.reasons[r.receipt_id] = (f"the books refused {type(step).__name__}: "
                                              f"{refused.message}")
                return False
        if plan.reason:
            self.reasons[r.receipt_id] = plan.reason
            if r.open > 0 and not any(isinstance(x, Apply) for x in plan.steps):
                self.decline(r, plan.reason)
        return False

    def decline(self, r: _Receipt, reason: str) -> None:
        """Note what a careless clerk would do with a receipt the policy leaves unapplied:
        put it on the customer's oldest open invoice (the mutation tests submit it)."""
        if r.customer_id is None:
            return
        oldest = self._open_of(r.customer_id)
        if oldest:
            self.desk.decline(c.ApplyReceipt(
                receipt_id=r.receipt_id, invoice_id=oldest[0].invoice_id,
                amount=min(r.open, oldest[0].open), entry_date=self.desk.day), reason)

    def leftover(self, r: _Receipt) -> str:
        """Why a receipt with no recorded reason is (still) open."""
        if r.fresh:
            return "cannot be placed"
        return f"{display_cents(r.open)} left after applying what the payment covers"

    # --- the policy ------------------------------------------------------------------

    def plan(self, r: _Receipt, *, early: bool) -> _Plan:
        """What the policy says to do with a fresh receipt."""
        copy = self.exported_twice(r)
        if copy is not None:
            return _Plan(reason=f"the bank exported this deposit twice: a second copy of "
                               f"{copy.line_id} (one deposit)")
        plan = _Plan()
        payout = self.payout_for(r)
        found = r.customer_id
        if found is None and payout is None:
            found = self.payer_customer(r)
            if found is None:
                return _Plan(reason=f"payer {r.payer or '(none)'!r} is not a customer and no "
                                   "remittance names the customer")
            plan.steps.append(Assign(found))
        elif found is None and payout is not None:
            found = self.customers.get(payout.customer.casefold())
            if found is None:  # the name as a paper cuts or spells it
                same = [c for c, n in self.register.items() if n == plain_name(payout.customer)]
                found = same[0] if len(same) == 1 else None
            if found is None:
                return _Plan(reason=f"the processor's remittance {payout.payout_id} names "
                                   f"{payout.customer!r}, who is not a customer")
            plan.steps.append(Assign(found))
        if found is None:  # not reached: each branch above named the customer or returned
            return _Plan(reason="cannot be placed")
        customer = found
        repeat = self.repeats(r, customer)
        if repeat is not None:
            plan.reason = (f"duplicate of {repeat.line_id}: the same payment (customer, amount "
                           "and reference) was already applied")
            return plan
        if payout is not None:
            return self._by_payout(r, customer, payout, plan)
        advice = self.advice_for(r)
        if advice:
            return self._by_advice(r, customer, advice, plan)
        named = self.named_in(r.reference)
        own = [i for i in named if i.customer_id == customer]
        if own:
            return self._to_named(r, own, plan)
        if early:
            plan.later = True
            return plan
        if named:
            return self._by_amount(r, customer, named, plan)
        if self._names_only_customer(r, customer):
            return self._oldest_first(r, customer, plan)
        plan.reason = f"reference {r.reference!r} names no invoice of the customer"
        return plan

    def exported_twice(self, r: _Receipt) -> _Receipt | None:
        """An earlier statement line with the very same details as this one, if any."""
        for other in self.receipts:
            if (other.day, other.line_id) >= (r.day, r.line_id):
                return None
            if other.same_line(r):
                return other
        return None

    def repeats(self, r: _Receipt, customer: str) -> _Receipt | None:
        """An earlier receipt, already applied, of the same customer, amount and reference."""
        for other in self.receipts:
            if (other.day, other.line_id) >= (r.day, r.line_id):
                return None
            if (other.customer_id == customer and other.amount == r.amount
                    and other.reference == r.reference and not other.fresh):
                return other
        return None

    def payout_for(self, r: _Receipt) -> _Payout | None:
        """The card processor's payout a receipt's reference names, if its remittance came."""
        return next((self.papers.payouts[t] for t in tokens(r.reference)
                     if t in self.papers.payouts), None)

    def advice_for(self, r: _Receipt) -> list[AdviceLine]:
        """The remittance advice of the payment a receipt's reference names, if it came."""
        return next((self.papers.advices[t] for t in tokens(r.reference)
                     if t in self.papers.advices), [])

    def _names_only_customer(self, r: _Receipt, customer: str) -> bool:
        ref = r.reference.strip().casefold()
        return not ref or self.customers.get(ref) == customer or ref == r.payer.casefold()

    def _closed(self, invoices: list[_Invoice], plan: _Plan) -> _Plan:
        plan.reason = (f"names {', '.join(i.invoice_id for i in invoices)}, already paid "
                       "(closed invoice)")
        return plan

    def _by_payout(self, r: _Receipt, customer: str, p: _Payout, plan: _Plan) -> _Plan:
        inv = self.invoice_named(p.invoice_id)
        if inv is None or inv.customer_id != customer:
            plan.reason = (f"the processor's remittance {p.payout_id} names invoice "
                           f"{p.invoice_id}, not an invoice of {p.customer}")
            return plan
        if inv.open == 0:
            return self._closed([inv], plan)
        applied = min(r.open, inv.open, p.net)
        plan.steps.append(Apply(inv.invoice_id, applied))
        fee = min(p.fee, inv.open - applied) if applied == p.net else 0
        if fee > 0:
            plan.steps.append(Allow(inv.invoice_id, fee,
                                    f"card processor fee, payout {p.payout_id}"))
        return plan

    def _by_advice(self, r: _Receipt, customer: str, advice: list[AdviceLine],
                   plan: _Plan) -> _Plan:
        left = r.open
        closed = []
        for line in advice:
            inv = self.invoice_named(line.invoice_id)
            if inv is None or inv.customer_id != customer:
                continue
            if inv.open == 0:
                closed.append(inv)
                continue
            amount = min(line.amount, inv.open, left)
            if amount > 0:
                plan.steps.append(Apply(inv.invoice_id, amount))
                left -= amount
        if not plan.steps or all(isinstance(s, Assign) for s in plan.steps):
            if closed:
                return self._closed(closed, plan)
            plan.reason = "the remittance advice names no open invoice of the customer"
        return plan

    def _to_named(self, r: _Receipt, own: list[_Invoice], plan: _Plan) -> _Plan:
        open_ = [i for i in own if i.open > 0]
        if not open_:
            return self._closed(own, plan)
        left = r.open
        for inv in open_:
            amount = min(inv.open, left)
            if amount <= 0:
                break
            plan.steps.append(Apply(inv.invoice_id, amount))
            left -= amount
        if len(open_) == 1 and r.is_wire:
            inv = open_[0]
            short = inv.open - r.open
            if 0 < short <= pct_of(inv.total, WIRE_SHORTFALL_BP):
                plan.steps.append(Allow(inv.invoice_id, short, "intermediary bank charges "
                                                               "on an international wire"))
        return plan

    def _by_amount(self, r: _Receipt, customer: str, named: list[_Invoice], plan: _Plan) -> _Plan:
        """A reference quoting someone else's invoice: the payer's own invoice of that amount.

        The payer and the amount decide (policy rule 1). Without an invoice of exactly
        that amount the reference says nothing, and the payment is placed as one naming
        only its payer is (rule 5): oldest due date first.
        """
        exact = [i for i in self._open_of(customer) if i.open == r.open]
        if exact:
            plan.steps.append(Apply(exact[0].invoice_id, r.open))
            return plan
        return self._oldest_first(r, customer, plan)

    def _oldest_first(self, r: _Receipt, customer: str, plan: _Plan) -> _Plan:
        """A payment naming only its payer: the payer's open invoices, oldest due date first.

        When the oldest invoices do not add up to the payment but some other set of the
        payer's open invoices does exactly, the amount decides (rule 1): a payer who pays
        an invoice early, before an older one, wires exactly that invoice.
        """
        invoices = self._open_of(customer)
        running, prefix = 0, False
        for inv in invoices:
            running += inv.open
            if running >= r.open:
                prefix = running == r.open
                break
        if not prefix:
            exact = _exact_subset(invoices, r.open)
            if exact:
                invoices = exact
        left = r.open
        for inv in invoices:
            if left <= 0:
                break
            amount = min(inv.open, left)
            plan.steps.append(Apply(inv.invoice_id, amount))
            left -= amount
        if left == r.open:
            plan.reason = "the customer has no open invoice"
        return plan

    def _open_of(self, customer: str) -> list[_Invoice]:
        """The customer's open invoices, oldest due date first."""
        return sorted((i for i in self.invoices.values()
                       if i.customer_id == customer and i.open > 0),
                      key=lambda i: (i.due_on, i.invoice_id))

    # --- the books -----------------------------------------------------------------

    def do(self, r: _Receipt, step: Step) -> CommandRejected | None:
        """Carry out one step in the books; keep the local view in step with them."""
        day = self.desk.day
        cmd: c.Command
        if isinstance(step, Assign):
            cmd = c.AssignReceiptCustomer(receipt_id=r.receipt_id, customer_id=step.customer_id)
        elif isinstance(step, Apply):
            cmd = c.ApplyReceipt(receipt_id=r.receipt_id, invoice_id=step.invoice_id,
                                 amount=step.amount, entry_date=day)
        else:
            cmd = c.GrantFeeAllowance(invoice_id=step.invoice_id, amount=step.amount,
                                      reason=step.reason, entry_date=day)
        result = self.desk.execute(cmd)
        if isinstance(result, CommandRejected):
            return result
        if isinstance(step, Assign):
            r.customer_id = step.customer_id
        elif isinstance(step, Apply):
            r.open -= step.amount
            self.invoices[step.invoice_id].open -= step.amount
        else:
            self.invoices[step.invoice_id].open -= step.amount
        return None


def _exact_subset(invoices: list[_Invoice], amount: int, limit: int = 12) -> list[_Invoice]:
    """The smallest set of invoices (oldest first among equals) whose open amounts add up
    to ``amount``; none among more than ``limit`` invoices (the search would not end)."""
    if len(invoices) > limit:
        return []
    for n in range(1, len(invoices) + 1):
        for combo in combinations(invoices, n):
            if sum(i.open for i in combo) == amount:
                return list(combo)
    return []


def write_unapplied(path: Path, reasons: dict[str, str]) -> None:
    """Write ``line_id,reason`` for every statement line left unapplied, in line order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["line_id", "reason"])
    w.writerows(sorted(reasons.items()))
    path.write_text(buf.getvalue(), encoding="utf-8")


def reference(desk: TurnContext) -> None:
    """Apply the day's receipts under the written policy, from the clerk's own materials."""
    clerk = _Clerk(desk)
    write_unapplied(desk.output_dir / OUTPUT, clerk.work())


# --- the oracle ---------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """Apply every receipt as its payer meant it (the world's truth), within the policy."""
    from sim.world_events import BankLinePosted, PaymentSent, decode_world_event

    lines: dict[str, BankLinePosted] = {}
    payments: dict[str, PaymentSent] = {}
    for e in world.ledger.store.read(realm="world", types=["bank_line_posted", "payment_sent"]):
        w = decode_world_event(e.type, e.payload)
        if isinstance(w, BankLinePosted):
            lines[w.line_id] = w
        elif isinstance(w, PaymentSent):
            payments[w.payment_id] = w
    clerk = _Clerk(desk)  # for its view of the books and its hands; its judgement is unused
    for r in clerk.receipts:
        if not r.fresh:
            continue
        line = lines.get(r.line_id)
        payment = payments.get(line.source or "") if line is not None else None
        if line is None or payment is None:
            clerk.reasons[r.receipt_id] = "not a customer's payment"
            continue
        first = lines.get(line.duplicate_of or "")
        if first is not None and first.source == line.source:
            clerk.reasons[r.receipt_id] = f"the bank exported {first.line_id} twice"
            continue
        if payment.duplicate_of is not None or payment.behaviour == "pays_closed_invoice":
            # the money stays unapplied, on the account of the customer who sent it
            clerk.reasons[r.receipt_id] = (
                f"the customer paid {payment.duplicate_of} twice"
                if payment.duplicate_of is not None else "pays an invoice already paid")
            if r.customer_id is None:
                refused = clerk.do(r, Assign(payment.customer_id))
                if refused is not None:
                    clerk.reasons[r.receipt_id] += f" (the books refused: {refused.message})"
            continue
        steps: list[Step] = []
        if r.customer_id is None:
            steps.append(Assign(payment.customer_id))
        left = r.open
        short = payment.amount - payment.arrives
        for a in payment.allocations:
            inv = clerk.invoices.get(a.doc_id)
            if inv is None:
                continue
            applied = min(a.amount, inv.open, left)
            if applied > 0:
                steps.append(Apply(inv.invoice_id, applied))
                left -= applied
            gap = min(a.amount, inv.open) - applied
            accepted = payment.method == "card" or (
                payment.method == "wire" and short <= pct_of(inv.total, WIRE_SHORTFALL_BP))
            if 0 < gap <= short and accepted:
                steps.append(Allow(inv.invoice_id, gap, "card processor fee"
                                   if payment.method == "card" else "intermediary bank charges"))
        for step in steps:
            refused = clerk.do(r, step)
            if refused is not None:
                clerk.reasons[r.receipt_id] = f"the books refused: {refused.message}"
                break
    out = {r.line_id: clerk.reasons.get(r.receipt_id) or clerk.leftover(r)
           for r in clerk.receipts if r.open > 0}
    write_unapplied(desk.output_dir / OUTPUT, out)

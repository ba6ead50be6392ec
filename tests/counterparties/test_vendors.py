"""Vendors on a real engine and real books: what they bill, resend, credit, state and ask."""

from __future__ import annotations

import csv
import email
import io
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from datetime import date
from email.message import EmailMessage
from email.policy import default as email_policy
from email.utils import parseaddr
from pathlib import Path
from typing import Any

import pytest

from counterparties.injections import INJECTIONS, VendorParams
from counterparties.population import Population
from counterparties.profiles import VENDOR_PROFILES, resolve_profile
from counterparties.specs import PlannedInjection, VendorSpec
from counterparties.vendors import (
    STATEMENT_COLUMNS,
    NumberFormat,
    Vendor,
)
from erp.books import document_number_key
from erp.events import BankDetails, Policies
from erp.ledger import Ledger
from erp.money import display_cents, parse_cents
from erp.store import StoredEvent
from sim.automation import (
    BANK_ACCOUNT,
    Automation,
    CompanySetup,
    OpeningBill,
    Options,
    VendorMaster,
    set_up_books,
)
from sim.calendar import BusinessCalendar
from sim.documents import number_digits
from sim.engine import Engine, Phase
from sim.rng import Streams
from sim.world_events import PaymentReceived

SEED = 7
START = date(2026, 3, 2)  # 25 business days run to 2026-04-03, past the March month end
COMPANY = "Northwind Services LLC"
NAMES = {"V0": "Acme Supply Co", "V1": "Initech LLC", "V2": "Globex Corporation",
         "V3": "Umbrella Logistics Inc", "V4": "Hooli Facilities", "V5": "Vandelay Industries",
         "V6": "Stark Office Partners", "V7": "Cyberdyne Parts Ltd", "V8": "Tyrell Supplies",
         "V9": "Wayne Enterprises", "V10": "Soylent Services", "V11": "Oscorp Materials",
         "V12": "Gringotts Office Co"}


def spec(vendor_id: str, behaviour: str = "reliable", **params: Any) -> VendorSpec:
    """A vendor of a behaviour, billing often enough to show it in a short run."""
    profile = resolve_profile(VENDOR_PROFILES, behaviour, {"bills_per_month": 12, **params})
    name = NAMES.get(vendor_id, f"Supplier{vendor_id[1:]} Trading Co")  # one per profile
    domain = name.split()[0].lower()
    return VendorSpec(vendor_id=vendor_id, name=name, behaviour=behaviour,
                      profile=profile,  # type: ignore[arg-type]
                      bank=BankDetails(account_name=name, routing="021000021",
                                       account_number=f"4400{vendor_id[1:]:0>4}1234"),
                      email=f"billing@{domain}.example")


@dataclass
class Run:
    """What one simulation left behind."""

    population: Population
    events: list[StoredEvent]
    head: tuple[int, str]
    injections: list[PlannedInjection] = field(default_factory=list)

    def vendor(self, vendor_id: str) -> Vendor:
        """A vendor of the run."""
        return self.population.vendors[vendor_id]  # type: ignore[no-any-return]

    def world(self, type_: str, vendor_id: str | None = None, **match: Any) -> list[dict[str, Any]]:
        """Payloads of world events of a type (of one vendor, with fields equal to ``match``)."""
        out = []
        for e in self.events:
            if e.realm != "world" or e.type != type_:
                continue
            d = e.data
            if vendor_id is not None and d.get("vendor_id", d.get("truth", {}).get(
                    "vendor_id")) != vendor_id:
                continue
            if all(d.get(k) == v for k, v in match.items()):
                out.append({**d, "_position": e.position, "_date": e.business_date,
                            "_time": e.sim_time, "_actor": e.actor})
        return out

    def documents(self, vendor_id: str, **truth: Any) -> list[dict[str, Any]]:
        """A vendor's delivered documents whose truth has these values, in delivery order."""
        return [d for d in self.world("document_delivered", vendor_id)
                if all(d["truth"].get(k) == v for k, v in truth.items())]


def pays(engine: Engine,
         payments: Sequence[tuple[date, str, str, int]]) -> Generator[Any, Any, None]:
    """What the bank reports when the company's payments reach vendors' real accounts."""
    for day, vendor_id, payment_id, amount in payments:
        yield engine.until(day, Phase.PAYMENTS_OUT)
        engine.world.emit(PaymentReceived(vendor_id=vendor_id, payment_id=payment_id,
                                          amount=amount), "counterparty:bank")


def simulate(path: Path, specs: Sequence[VendorSpec], *, seed: int = SEED,
             business_days: int = 25, injections: Sequence[tuple[date, str, str | None]] = (),
             opening_bills: Sequence[OpeningBill] = (),
             payments: Sequence[tuple[date, str, str, int]] = ()) -> Run:
    """Run vendors on fresh books; every world event and the log's head afterwards."""
    cal = BusinessCalendar.from_business_days(START, business_days)
    with Ledger.open(path, create=True) as ledger:
        engine = Engine(cal, ledger, Streams(seed))
        set_up_books(engine, CompanySetup(
            COMPANY, "standard-services", Policies(), 250_000_00, [],
            [VendorMaster(s.vendor_id, s.name, s.terms_days, s.bank) for s in specs],
            opening_bills=list(opening_bills)))
        Automation(engine, Options())
        population = Population(engine, COMPANY, BANK_ACCOUNT)
        for s in specs:
            population.vendors[s.vendor_id] = Vendor(engine, population, s)
        for vendor in population.vendors.values():
            vendor.start()
        planned = [PlannedInjection(on, kind, VendorParams(vendor=vid), n)
                   for n, (on, kind, vid) in enumerate(injections)]
        for inj in planned:
            engine.process(population._plant(inj))  # the population's own planting, as in start()
        engine.process(pays(engine, payments))
        engine.finish()
        events = list(ledger.store.read())
        assert ledger.verify().ok
        return Run(population, events, ledger.store.head(), planned)


def parse_email(content: str) -> EmailMessage:
    """An ``.eml`` as the stdlib reads it (it must have the headers a mail client needs)."""
    msg = email.message_from_string(content, policy=email_policy)
    assert isinstance(msg, EmailMessage)
    for header in ("From", "To", "Subject", "Date", "Message-ID"):
        assert msg[header], f"missing {header}"
    return msg


def body_of(doc: dict[str, Any]) -> str:
    """A delivered document's readable text (an email's decoded body)."""
    if doc["filename"].endswith(".eml"):
        return str(parse_email(doc["content"]).get_content())
    return str(doc["content"])


def domain_of(sender: str) -> str:
    """The domain of an address or of a ``From`` header."""
    return parseaddr(sender)[1].rpartition("@")[2]


# --- bills -------------------------------------------------------------------------------


def test_a_vendor_bills_on_business_days_with_a_text_invoice_for_each_bill(
        tmp_path: Path) -> None:
    run = simulate(tmp_path / "books.db", [spec("V1")])
    vendor = run.vendor("V1")
    bills = run.world("bill_issued", "V1")
    assert len(bills) >= 5
    assert {b["kind"] for b in bills} == {"original"}
    numbers = [b["invoice_number"] for b in bills]
    assert len(set(numbers)) == len(numbers)
    first = vendor.bills[0].seq  # the vendor's own format, numbered in sequence
    assert numbers == [vendor.number_format.render(date.fromisoformat(b["issued_on"]).year,
                                                   first + n) for n, b in enumerate(bills)]
    docs = [d for d in run.documents("V1") if d["kind"] == "bill"]
    assert [d["truth"]["bill_ref"] for d in docs] == [b["bill_ref"] for b in bills]
    for bill, doc in zip(bills, docs, strict=True):
        issued = date.fromisoformat(bill["issued_on"])
        assert issued.weekday() < 5 and bill["_date"] == bill["issued_on"]
        assert bill["_time"] % 1 == pytest.approx(float(Phase.COUNTERPARTIES))
        assert (date.fromisoformat(bill["due_on"]) - issued).days == 30
        assert 1 <= len(bill["lines"]) <= 3
        total = sum(x["quantity"] * x["unit_price"] for x in bill["lines"])
        assert bill["total"] == bill["agreed_total"] == total
        assert bill["duplicate_of"] is None and bill["_actor"] == "counterparty:V1"
        assert doc["kind"] == "bill" and doc["_time"] == bill["_time"]
        assert doc["filename"].endswith(f"invoice-{bill['invoice_number']}.txt")
        assert doc["sender"] == "billing@initech.example"
        text = doc["content"]
        for shown in ("INITECH LLC", f"Invoice number: {bill['invoice_number']}",
                      f"Invoice date:   {bill['issued_on']}", f"Due date:       {bill['due_on']}",
                      f"Bill to:        {COMPANY}", f"Total USD{display_cents(total):>14}",
                      "Account:      ****1234", vendor.phone, vendor.address[0]):
            assert shown in text
        assert vendor.genuine_bank.account_number not in text  # masked but the last four
        assert doc["truth"]["kind"] == "original" and doc["truth"]["duplicate_of"] is None
    # Vendors act in the world only: nothing after the set-up was written to the books.
    setup_end = max(e.position for e in run.events if e.actor == "system:setup")
    assert [e for e in run.events if e.realm == "erp" and e.position > setup_end] == []


def test_invoice_numbers_keep_their_digits_when_reformatted() -> None:
    assert NumberFormat("year", "INV").render(2026, 42) == "INV-2026-0042"
    assert "INV20260042" in NumberFormat("year", "INV").variants(2026, 42)
    assert NumberFormat("letter", "A").render(2026, 10017) == "A10017"
    assert NumberFormat("plain").render(2026, 7731) == "7731"
    for fmt, seq in ((NumberFormat("year", "INV"), 42), (NumberFormat("letter", "A"), 10017),
                     (NumberFormat("plain"), 7731)):
        number = fmt.render(2026, seq)
        for variant in fmt.variants(2026, seq):
            assert number_digits(variant) == number_digits(number)
            assert document_number_key(variant) != document_number_key(number)


def test_a_duplicate_repeats_the_invoice_number_and_amount_days_later(tmp_path: Path) -> None:
    run = simulate(tmp_path / "books.db", [spec("V1", "bills_twice", duplicate_rate=1.0)])
    bills = {b["bill_ref"]: b for b in run.world("bill_issued", "V1")}
    duplicates = [b for b in bills.values() if b["kind"] == "duplicate"]
    assert len(duplicates) >= 4
    delivered_as = set()
    for dup in duplicates:
        original = bills[dup["duplicate_of"]]
        assert original["kind"] == "original"
        for same in ("invoice_number", "total", "lines", "issued_on", "due_on"):
            assert dup[same] == original[same]
        assert dup["_date"] > original["_date"]
        [doc] = run.documents("V1", bill_ref=dup["bill_ref"])
        assert doc["truth"]["kind"] == "duplicate"
        assert doc["truth"]["duplicate_of"] == original["bill_ref"]
        text = body_of(doc)
        assert f"Invoice number: {dup['invoice_number']}" in text
        assert display_cents(dup["total"]) in text
        delivered_as.add(doc["filename"].rpartition(".")[2])
    assert delivered_as == {"txt", "eml"}  # sent again as a file and as a "copy" email


def test_a_near_duplicate_differs_from_its_original_only_in_number_format(
        tmp_path: Path) -> None:
    run = simulate(tmp_path / "books.db",
                   [spec("V2", "near_duplicates", near_duplicate_rate=1.0)])
    bills = {b["bill_ref"]: b for b in run.world("bill_issued", "V2")}
    near = [b for b in bills.values() if b["kind"] == "near_duplicate"]
    assert len(near) >= 4
    for bill in near:
        original = bills[bill["duplicate_of"]]
        new, old = bill["invoice_number"], original["invoice_number"]
        assert document_number_key(new) != document_number_key(old)  # the books would take it
        assert number_digits(new) == number_digits(old)
        assert (bill["total"], bill["lines"]) == (original["total"], original["lines"])
        [doc] = run.documents("V2", bill_ref=bill["bill_ref"])
        assert doc["truth"]["kind"] == "near_duplicate"
        assert f"Invoice number: {new}" in body_of(doc)


def test_a_price_variance_bill_exceeds_the_price_an_earlier_quote_agreed(
        tmp_path: Path) -> None:
    run = simulate(tmp_path / "books.db",
                   [spec("V3", "price_variance", price_variance_rate=1.0)])
    variances = run.world("bill_issued", "V3", kind="price_variance")
    assert len(variances) >= 4
    for bill in variances:
        [doc] = run.documents("V3", bill_ref=bill["bill_ref"], kind="price_variance")
        share = doc["truth"]["variance_share"]
        assert 0.03 <= share <= 0.15  # the profile's price_variance
        units = sum(x["quantity"] for x in bill["lines"])
        assert bill["total"] > bill["agreed_total"] == doc["truth"]["agreed_total"]
        assert abs(bill["total"] - bill["agreed_total"] * (1 + share)) <= units
        assert display_cents(bill["total"]) in doc["content"]
        assert display_cents(bill["agreed_total"]) not in doc["content"]  # billed prices only
        # The agreed price is in the company's own materials: the quote came earlier.
        [quote] = run.documents("V3", bill_ref=bill["bill_ref"], kind="quote")
        assert quote["_position"] < doc["_position"] and quote["_date"] < doc["_date"]
        body = body_of(quote)
        assert quote["truth"]["quote_number"] in body
        assert f"Your quote:     {quote['truth']['quote_number']}" in doc["content"]
        assert display_cents(bill["agreed_total"]) in body


def test_a_credit_note_credits_part_of_a_recent_bill(tmp_path: Path) -> None:
    run = simulate(tmp_path / "books.db", [spec("V4", "credit_notes", credit_note_rate=1.0)])
    bills = {b["bill_ref"]: b for b in run.world("bill_issued", "V4")}
    credits = run.world("credit_note_issued", "V4")
    assert len(credits) >= 4
    for cn in credits:
        bill = bills[cn["for_bill_ref"]]
        assert 0 < cn["amount"] < bill["total"] and bill["_date"] < cn["_date"]
        [doc] = run.documents("V4", credit_number=cn["number"])
        assert doc["kind"] == "credit_note"
        assert doc["filename"].endswith(f"credit-note-{cn['number']}.txt")
        for shown in (f"CREDIT NOTE {cn['number']}", bill["invoice_number"],
                      f"USD {display_cents(cn['amount'])}"):
            assert shown in doc["content"]


# --- the statement --------------------------------------------------------------------------


def read_statement(doc: dict[str, Any]) -> tuple[int, list[dict[str, str]], int]:
    """A statement CSV: the balance brought forward, the entries, the closing balance."""
    rows = list(csv.reader(io.StringIO(doc["content"])))
    assert tuple(rows[0]) == STATEMENT_COLUMNS
    forward, *moves = [dict(zip(STATEMENT_COLUMNS, r, strict=True)) for r in rows[1:]]
    assert forward["description"] == "Balance forward"
    opening = parse_cents(forward["balance"])
    running = opening
    for m in moves:  # every running balance adds up
        running += parse_cents(m["charges"] or "0") - parse_cents(m["credits"] or "0")
        assert parse_cents(m["balance"]) == running
    return opening, moves, running


def test_the_statement_comes_from_the_vendors_own_books_and_counts_a_duplicate_once(
        tmp_path: Path) -> None:
    opening = OpeningBill("BILL-OPEN-1", "V1", "OLD-77", date(2026, 2, 12), 1_234_56)
    payments = [(date(2026, 3, 20), "V1", "PAY-1", 1_000_00),
                (date(2026, 3, 23), "V9", "PAY-2", 999_00),  # another vendor's
                (date(2026, 3, 31), "V1", "PAY-3", 500_00)]  # after March's statement went
    run = simulate(tmp_path / "books.db",
                   [spec("V1", "bills_twice", duplicate_rate=1.0, credit_note_rate=0.5)],
                   business_days=45, opening_bills=[opening], payments=payments)
    [march], [april] = run.documents("V1", period="2026-03"), run.documents("V1", period="2026-04")
    assert march["kind"] == "statement" and march["_date"] == "2026-03-31"
    assert march["filename"].endswith("statement-initech-2026-03.csv")
    assert april["_date"] == "2026-04-30"

    def owed_at(doc: dict[str, Any]) -> int:
        """What the vendor is owed when a statement is cut, from the world's events: the
        opening bill, what it billed (a resend is no new charge), credited and was paid."""
        until = doc["_time"]
        billed = [b for b in run.world("bill_issued", "V1") if b["_time"] <= until]
        credited = [c for c in run.world("credit_note_issued", "V1") if c["_time"] <= until]
        paid = [p for p in run.world("payment_received", "V1") if p["_time"] <= until]
        return (opening.amount + sum(b["total"] for b in billed if b["duplicate_of"] is None)
                - sum(c["amount"] for c in credited) - sum(p["amount"] for p in paid))

    forward, moves, closing = read_statement(march)
    assert forward == opening.amount
    assert closing == march["truth"]["balance"] == owed_at(march)
    documents = [m["document"] for m in moves]
    billed = [b for b in run.world("bill_issued", "V1") if b["_time"] <= march["_time"]]
    assert any(b["kind"] == "duplicate" for b in billed)
    for bill in billed:
        assert documents.count(bill["invoice_number"]) == 1
    assert "PAY-1" in documents and "PAY-2" not in documents and "PAY-3" not in documents

    forward, moves, closing = read_statement(april)
    assert forward == read_statement(march)[2]
    assert closing == april["truth"]["balance"] == owed_at(april)
    [late] = [m for m in moves if m["document"] == "PAY-3"]  # on the next statement
    assert (late["date"], late["credits"]) == ("2026-03-31", "500.00")
    assert run.vendor("V1").balance == owed_at({"_time": float("inf")})


# --- bank details ---------------------------------------------------------------------------


def test_a_genuine_bank_change_comes_from_the_usual_address_and_moves_the_account(
        tmp_path: Path) -> None:
    original_spec = spec("V5", "changes_bank")
    run = simulate(tmp_path / "books.db", [original_spec])
    vendor = run.vendor("V5")
    [asked] = run.world("bank_change_asked", "V5")
    assert asked["genuine"] is True and asked["sender"] == vendor.email
    assert asked["callback"] == vendor.phone
    new = BankDetails.model_validate(asked["new_bank"])
    assert vendor.genuine_bank == new != original_spec.bank
    assert vendor.former_banks == [original_spec.bank]
    assert vendor.owns(original_spec.bank) and vendor.owns(new)
    [doc] = run.documents("V5", request_ref=asked["request_ref"])
    assert doc["truth"]["genuine"] is True
    msg = parse_email(doc["content"])
    assert parseaddr(msg["From"])[1] == "billing@vandelay.example"
    body = msg.get_content()
    assert new.account_number in body and new.routing in body and vendor.phone in body
    # The call-back number is the one the vendor's earlier invoices carry.
    earlier = [d for d in run.documents("V5", kind="original")
               if d["_position"] < doc["_position"]]
    assert earlier and all(vendor.phone in d["content"] for d in earlier)
    later = [d for d in run.documents("V5", kind="original") if d["_position"] > doc["_position"]]
    assert later and all(f"****{new.account_number[-4:]}" in d["content"] for d in later)


def test_a_fraudulent_bank_change_comes_from_a_lookalike_domain_and_moves_nothing(
        tmp_path: Path) -> None:
    original_spec = spec("V6", "impersonated")
    run = simulate(tmp_path / "books.db", [original_spec])
    vendor = run.vendor("V6")
    [asked] = run.world("bank_change_asked", "V6")
    assert asked["genuine"] is False and asked["callback"] != vendor.phone
    assert vendor.genuine_bank == original_spec.bank and vendor.former_banks == []
    assert not vendor.owns(BankDetails.model_validate(asked["new_bank"]))
    [doc] = run.documents("V6", request_ref=asked["request_ref"])
    assert doc["truth"]["genuine"] is False
    msg = parse_email(doc["content"])
    name, address = parseaddr(msg["From"])
    assert name == vendor.name  # it looks like the vendor...
    usual = domain_of(vendor.email)
    assert domain_of(address) == domain_of(asked["sender"]) != usual  # ...but is not
    assert usual.split(".")[0][:3] in domain_of(address)  # a look-alike, not a stranger
    body = msg.get_content()
    assert "URGENT" in body and vendor.phone not in body
    assert asked["new_bank"]["account_number"] in body


# --- injections -------------------------------------------------------------------------------

DAY = date(2026, 3, 12)


def planted(tmp_path: Path, kind: str, vendor: str | None = "V0") -> tuple[Run, dict[str, Any]]:
    """A run of two reliable vendors with one injection on ``DAY``; its planted record."""
    run = simulate(tmp_path / "books.db", [spec("V0"), spec("V1")],
                   injections=[(DAY, kind, vendor)])
    [record] = run.world("injection_planted")
    assert (record["kind"], record["_date"], record["_actor"]) == (kind, DAY.isoformat(),
                                                                    "scenario:injection")
    assert record["injection_id"] == "INJ-000"
    return run, record["detail"]


def test_an_injected_duplicate_bill_resends_the_latest_bill(tmp_path: Path) -> None:
    run, detail = planted(tmp_path, "duplicate_bill")
    [dup] = run.world("bill_issued", "V0", kind="duplicate")
    [original] = run.world("bill_issued", "V0", bill_ref=dup["duplicate_of"])
    assert (dup["bill_ref"], dup["duplicate_of"]) == (detail["bill_ref"], detail["duplicate_of"])
    assert (dup["invoice_number"], dup["total"]) == (original["invoice_number"],
                                                      original["total"])
    assert original["_date"] < dup["_date"] == DAY.isoformat()
    assert run.world("bill_issued", "V1", kind="duplicate") == []


def test_an_injected_near_duplicate_bill_reformats_the_number(tmp_path: Path) -> None:
    run, detail = planted(tmp_path, "near_duplicate_bill")
    [near] = run.world("bill_issued", "V0", kind="near_duplicate")
    [original] = run.world("bill_issued", "V0", bill_ref=near["duplicate_of"])
    assert near["bill_ref"] == detail["bill_ref"]
    assert near["invoice_number"] == detail["invoice_number"] != original["invoice_number"]
    assert number_digits(near["invoice_number"]) == number_digits(original["invoice_number"])
    assert near["total"] == original["total"]


def test_an_injected_price_variance_bill_follows_its_quote(tmp_path: Path) -> None:
    run, detail = planted(tmp_path, "price_variance_bill")
    [bill] = run.world("bill_issued", "V0", kind="price_variance")
    assert bill["bill_ref"] == detail["bill_ref"]
    assert bill["_date"] == detail["billed_on"] > detail["on"] == DAY.isoformat()
    assert bill["agreed_total"] == detail["agreed_total"] < bill["total"]
    [quote] = run.documents("V0", kind="quote")
    assert quote["_date"] == DAY.isoformat()
    assert display_cents(detail["agreed_total"]) in body_of(quote)


def test_an_injected_fraudulent_bank_change_leaves_the_account(tmp_path: Path) -> None:
    run, detail = planted(tmp_path, "fraudulent_bank_change")
    [asked] = run.world("bank_change_asked", "V0")
    assert asked["genuine"] is False and detail["request_ref"] == asked["request_ref"]
    assert domain_of(asked["sender"]) != domain_of(run.vendor("V0").email)
    assert run.vendor("V0").genuine_bank == spec("V0").bank


def test_an_injected_genuine_bank_change_moves_the_account(tmp_path: Path) -> None:
    run, detail = planted(tmp_path, "genuine_bank_change")
    [asked] = run.world("bank_change_asked", "V0")
    assert asked["genuine"] is True and detail["callback"] == run.vendor("V0").phone
    assert run.vendor("V0").genuine_bank == BankDetails.model_validate(asked["new_bank"])


def test_an_injection_without_a_vendor_picks_one_the_same_way_every_time(
        tmp_path: Path) -> None:
    _, first = planted(tmp_path / "a", "genuine_bank_change", vendor=None)
    _, second = planted(tmp_path / "b", "genuine_bank_change", vendor=None)
    assert first["vendor_id"] in ("V0", "V1") and first == second


def test_an_injection_on_the_first_day_issues_the_bill_it_duplicates(tmp_path: Path) -> None:
    run = simulate(tmp_path / "books.db", [spec("V0", bills_per_month=0)],
                   injections=[(START, "duplicate_bill", "V0")])
    original, dup = run.world("bill_issued", "V0")
    assert (original["kind"], dup["kind"], dup["duplicate_of"]) == (
        "original", "duplicate", original["bill_ref"])
    assert original["_date"] == START.isoformat() < dup["_date"]


def test_an_injection_naming_an_unknown_vendor_says_which_exist(tmp_path: Path) -> None:
    run = simulate(tmp_path / "books.db", [spec("V0"), spec("V1")], business_days=1)
    inj = PlannedInjection(DAY, "duplicate_bill", VendorParams(vendor="V404"), 3)
    with pytest.raises(ValueError, match=r"duplicate_bill \(#3\) on 2026-03-12: vendor 'V404' "
                                         r"is not in the population \(expected one of: V0, V1\)"):
        INJECTIONS["duplicate_bill"].plant(run.population, inj)  # type: ignore[misc]


# --- streams and determinism --------------------------------------------------------------


def own_events(run: Run, vendor_id: str) -> list[tuple[Any, ...]]:
    """A vendor's world events and documents, without the ids the world counts globally."""
    out = []
    for e in run.events:
        if e.actor != f"counterparty:{vendor_id}":
            continue
        d = e.data
        if e.type == "document_delivered":
            d = {**d, "doc_id": None, "filename": d["filename"].split("-", 2)[2],
                 "content": "\n".join(x for x in d["content"].splitlines()
                                      if not x.startswith("Message-ID:"))}
        out.append((e.stream if e.type != "document_delivered" else "", e.type,
                    e.business_date, e.sim_time, d))
    return out


def test_adding_a_vendor_does_not_change_another_vendors_events(tmp_path: Path) -> None:
    alone = simulate(tmp_path / "a.db", [spec("V1", "bills_twice", credit_note_rate=0.5)])
    crowd = simulate(tmp_path / "b.db", [spec("V0", "price_variance"),
                                         spec("V1", "bills_twice", credit_note_rate=0.5),
                                         spec("V2", "impersonated")])
    mine = own_events(alone, "V1")
    assert len(mine) > 20
    assert own_events(crowd, "V1") == mine
    assert len(crowd.events) > len(alone.events)


def test_an_injection_does_not_shift_the_vendors_own_bills(tmp_path: Path) -> None:
    quiet = simulate(tmp_path / "a.db", [spec("V0", "bills_twice")])
    struck = simulate(tmp_path / "b.db", [spec("V0", "bills_twice")],
                      injections=[(DAY, "fraudulent_bank_change", "V0")])
    assert len(struck.world("bank_change_asked", "V0")) == 1
    bills = [{k: v for k, v in b.items() if k != "_position"}
             for b in quiet.world("bill_issued", "V0")]
    assert len(bills) > 5
    assert [{k: v for k, v in b.items() if k != "_position"}
            for b in struck.world("bill_issued", "V0")] == bills


def test_the_same_seed_gives_the_same_log_and_another_seed_another(tmp_path: Path) -> None:
    specs = [spec(f"V{n}", behaviour) for n, behaviour in enumerate(VENDOR_PROFILES)]
    injections = [(DAY, "near_duplicate_bill", None), (DAY, "fraudulent_bank_change", None)]
    first = simulate(tmp_path / "a.db", specs, injections=injections)
    second = simulate(tmp_path / "b.db", specs, injections=injections)
    other = simulate(tmp_path / "c.db", specs, injections=injections, seed=SEED + 1)
    assert first.head == second.head and first.head[0] > 300
    assert other.head[1] != first.head[1]

"""entries_dated's credits_at_arrival: a vendor credit note recorded at the first turn that
had it in the inbox, not held to a later turn and dated back to its own date (the class of
bills_at_arrival, for the credit notes procure-to-pay and month-end-close ask to record as
they arrive)."""

from __future__ import annotations

from datetime import date
from typing import Any

from checks.context import CheckContext
from checks.policy import EntriesDated, entries_dated
from erp import commands as c
from erp.ledger import Ledger, Recorded, Submission
from sim.world_events import DocumentDelivered
from tests.erp.helpers import set_up_company

D = date(2026, 3, 5)
TURNS = (D, date(2026, 3, 6), date(2026, 3, 9))


def _delivered(ledger: Ledger, number: str, day: date, moment: float) -> None:
    """Vendor V1's credit note ``number`` reaching the inbox on ``day`` at ``moment`` of it
    (the turn's moment is 0.5)."""
    doc = DocumentDelivered(doc_id=f"D{number}", filename=f"credit-{number}.txt",
                            kind="credit_note", sender="v1@example.com",
                            subject=f"Credit note {number}", content="...",
                            truth={"vendor_id": "V1", "credit_number": number,
                                   "amount": 1000})
    ledger.record_many("world", [Recorded(f"world:{doc.stream}", doc.type, doc.model_dump_json(),
                                          "vendor:V1", day, day.toordinal() + moment)])


def _credit(ledger: Ledger, number: str, written: date, credit_id: str = "") -> None:
    who: dict[str, Any] = {"actor": "agent:turn-1", "role": "clerk", "business_date": written}
    ledger.execute_batch([Submission(c.RecordVendorCredit(
        credit_id=credit_id or f"VC{number}", vendor_id="V1", vendor_credit_number=number,
        entry_date=D, amount="10.00"), **who)])


def test_a_credit_note_held_past_the_turn_it_arrived_for_is_named(ledger: Ledger) -> None:
    set_up_company(ledger)
    _delivered(ledger, "CN-1", D, 0.1)   # before the turn of 03-05: that turn's
    _delivered(ledger, "CN-2", D, 0.7)   # after it: the turn of 03-06's
    _delivered(ledger, "CN-3", D, 0.5)   # at the turn's moment: counted as after it
    _credit(ledger, "CN-2", date(2026, 3, 6))
    _credit(ledger, "CN-3", date(2026, 3, 6))
    spec = EntriesDated(type="entries_dated", credits_at_arrival=True)
    ctx = CheckContext(store=ledger.store, turn_dates=TURNS)
    assert entries_dated(spec, ctx).passed, entries_dated(spec, ctx).detail
    # held a turn, dated its own date (03-05), its number written another way
    _credit(ledger, "cn-1 ", date(2026, 3, 6), credit_id="VC1")
    r = entries_dated(spec, ctx)
    assert not r.passed
    assert ("vendor credit VC1 (V1 credit note cn-1) arrived 2026-03-05 and was recorded "
            "in the turn of 2026-03-06, not the turn of 2026-03-05") in r.detail, r.detail
    assert "VCCN-2" not in r.detail and "VCCN-3" not in r.detail
    # without the option the same books pass: only credits_at_arrival judges the turn
    assert entries_dated(EntriesDated(type="entries_dated"), ctx).passed
    assert entries_dated(EntriesDated(type="entries_dated", bills_at_arrival=True), ctx).passed


def test_credit_notes_never_delivered_or_after_the_last_turn_are_left(ledger: Ledger) -> None:
    set_up_company(ledger)
    _delivered(ledger, "CN-4", date(2026, 3, 10), 0.1)  # after the last turn
    _credit(ledger, "CN-4", date(2026, 3, 10))
    _credit(ledger, "CN-5", date(2026, 3, 10))           # never delivered
    spec = EntriesDated(type="entries_dated", credits_at_arrival=True)
    ctx = CheckContext(store=ledger.store, turn_dates=TURNS)
    assert entries_dated(spec, ctx).passed, entries_dated(spec, ctx).detail

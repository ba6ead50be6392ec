"""bank-reconciliation-multi: the reference solver (the inbox and the books) and the oracle.

Both reconcile the same way (:func:`_reconcile`) once every statement line has been
explained (:class:`_Plan`): import each account's statement under the bank's line ids,
record each transfer of the log (out on the day it left, in on the day it arrived, with
their lines), match each cheque deposit to its receipt, record the service charge,
interest and returned cheques, enter each card charge on its policy account, report the
bank's errors, pay the card statement from operating, and write the reconciliation of each
account and the list of transfers in transit.

The reference reads only what an external agent sees: the three statements, the
treasury's log, the card policy (merchant names matched by prefix, case and spaces
aside) and the books (receipts, bank accounts). A line is the bank's error when it is a
service charge a second time, or a deposit for another account number than ours. The
oracle reads the truth: the bank's own lines with their sources and the injection's
record.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import orjson

from erp import commands as c
from erp import queries as q
from erp.money import format_cents, parse_cents
from scenarios.turn import TurnContext
from sim.world import World

OPERATING, SAVINGS, CARD = "B-OPER", "B-SAVE", "B-CARD"
STATEMENTS = {"bank-statement": OPERATING, "savings-statement": SAVINGS,
              "card-statement": CARD}


@dataclass(frozen=True)
class _Line:
    """A statement line as the bank printed it."""

    line_id: str
    day: date
    description: str
    reference: str
    counterparty: str
    amount: int


@dataclass
class _Plan:
    """What every line is, and what else the month needs."""

    lines: dict[str, list[_Line]] = field(default_factory=dict)
    """Account -> its statement's lines."""
    closing: dict[str, int] = field(default_factory=dict)
    transfers: list[tuple[str, str, str, int, date]] = field(default_factory=list)
    """(confirmation, from, to, amount, sent_on) as the log gives them."""
    receipts: dict[str, str] = field(default_factory=dict)
    """Deposit line -> the receipt it credits."""
    returns: dict[str, str] = field(default_factory=dict)
    """Returned-item line -> the receipt it returns."""
    fees: list[str] = field(default_factory=list)
    interest: list[str] = field(default_factory=list)
    charges: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Card line -> (merchant, account)."""
    errors: dict[str, str] = field(default_factory=dict)
    """Line -> what the bank got wrong."""


def _month_end(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)


# --- the clerk's hands on the books ----------------------------------------------------------


def _by_id(plan: _Plan) -> dict[str, tuple[str, _Line]]:
    return {x.line_id: (a, x) for a, lines in plan.lines.items() for x in lines}


def _reconcile(desk: TurnContext, plan: _Plan) -> None:
    """Do the month's books from the plan, then write the two files."""
    for account, rows in sorted(plan.lines.items()):
        if rows:
            desk.execute(c.ImportStatementLines(bank_account_id=account, lines=tuple(
                c.StatementLineIn(line_id=x.line_id, entry_date=x.day, amount=x.amount,
                                  description=x.description, reference=x.reference,
                                  counterparty=x.counterparty) for x in rows)))
    lines = _by_id(plan)
    for conf, src, dst, amount, sent_on in sorted(plan.transfers, key=lambda t: (t[4], t[0])):
        out = next((x for x in plan.lines.get(src, []) if x.reference == conf
                    and x.amount == -amount), None)
        desk.execute(c.TransferFunds(transfer_id=conf, from_bank_account_id=src,
                                     to_bank_account_id=dst, entry_date=sent_on,
                                     amount=amount, memo=f"treasury transfer {conf}",
                                     line_id=out.line_id if out else None))
        arrived = next((x for x in plan.lines.get(dst, []) if x.reference == conf
                        and x.amount == amount), None)
        if arrived is not None:
            desk.execute(c.ReceiveTransfer(transfer_id=conf, entry_date=arrived.day,
                                           line_id=arrived.line_id))
    for line_id, receipt_id in sorted(plan.receipts.items()):
        desk.execute(c.MatchStatementLine(line_id=line_id, targets=(
            c.MatchRef(kind="receipt", doc_id=receipt_id),)))
    for line_id, receipt_id in sorted(plan.returns.items()):
        desk.execute(c.RecordReturnedDeposit(receipt_id=receipt_id, line_id=line_id,
                                             entry_date=lines[line_id][1].day))
    for line_id in plan.fees:
        account, x = lines[line_id]
        desk.execute(c.RecordBankFee(bank_account_id=account, entry_date=x.day,
                                     amount=-x.amount, memo=x.reference, line_id=line_id))
    for line_id in plan.interest:
        account, x = lines[line_id]
        desk.execute(c.RecordInterest(bank_account_id=account, entry_date=x.day,
                                      amount=x.amount, memo=x.reference, line_id=line_id))
    for line_id, (merchant, expense) in sorted(plan.charges.items()):
        account, x = lines[line_id]
        desk.execute(c.RecordCardCharge(bank_account_id=account, entry_date=x.day,
                                        amount=-x.amount, account=expense, merchant=merchant,
                                        line_id=line_id))
    for line_id, why in sorted(plan.errors.items()):
        desk.execute(c.ReportBankError(line_id=line_id, description=why))
    owed = -plan.closing.get(CARD, 0)
    if owed > 0:
        desk.execute(c.TransferFunds(from_bank_account_id=OPERATING, to_bank_account_id=CARD,
                                     entry_date=desk.day, amount=owed,
                                     memo="card statement 2026-05"))
    _write_files(desk, plan)


def _write_files(desk: TurnContext, plan: _Plan) -> None:
    books = desk.ledger.books
    end = _month_end(desk.day - timedelta(days=1))
    lines = _by_id(plan)
    rows: list[list[str]] = []
    for account in (OPERATING, SAVINGS, CARD):
        rows.append([account, "statement_balance", "", format_cents(plan.closing[account])])
        for line_id in sorted(plan.errors):
            if lines[line_id][0] == account:
                rows.append([account, "bank_error", line_id,
                             format_cents(-lines[line_id][1].amount)])
        for r in sorted(books.receipts.values(), key=lambda r: r.receipt_id):
            if (r.bank_account_id == account and r.matched_line is None and not r.returned
                    and r.entry_date <= end):
                rows.append([account, "deposit_in_transit", r.receipt_id,
                             format_cents(r.amount)])
        gl = books.bank_accounts[account].gl_account
        rows.append([account, "book_balance", "",
                     format_cents(q.account_balance(desk.store, gl, as_of=end))])
    _write(desk, "bank_reconciliation.csv", ["account", "item", "reference", "amount"], rows)
    transit = [[t.transfer_id, t.from_bank_account_id, t.to_bank_account_id,
                t.sent_on.isoformat(), format_cents(t.amount)]
               for t in sorted(books.transfers.values(), key=lambda t: t.transfer_id)
               if t.sent_on <= end and (t.received_on is None or t.received_on > end)]
    _write(desk, "transfers_in_transit.csv",
           ["confirmation", "from_account", "to_account", "sent_on", "amount"], transit)


def _write(desk: TurnContext, name: str, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    out = desk.output_dir / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(buf.getvalue(), encoding="utf-8")


# --- the reference: reading the papers ---------------------------------------------------------


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return [{k: (v or "").strip() for k, v in r.items() if k} for r in csv.DictReader(f)]


def _statement(rows: list[dict[str, str]]) -> tuple[list[_Line], int]:
    lines = [_Line(r["line_id"], date.fromisoformat(r["date"]), r["description"],
                   r["reference"], r["counterparty"], parse_cents(r["amount"]))
             for r in rows if r["line_id"]]
    closing = next((parse_cents(r["balance"]) for r in rows
                    if r["description"] == "CLOSING BALANCE"), 0)
    return lines, closing


def _squash(text: str) -> str:
    return re.sub(r"[^0-9a-z*]", "", text.casefold())


def _read_papers(desk: TurnContext) -> tuple[_Plan, list[tuple[str, str, str]]]:
    """The statements and the log into a plan; the card policy's (prefix, account) pairs."""
    plan = _Plan()
    policy: list[tuple[str, str, str]] = []
    numbers = {b.number[-4:]: b.bank_account_id for b in desk.ledger.books.bank_accounts.values()}
    for path in sorted([*desk.archive(), *desk.inbox()], key=lambda p: p.name):
        if path.suffix != ".csv":
            continue
        name = re.sub(r"^DOC-\d+-", "", path.stem)
        kind = re.sub(r"-\d{4}-\d{2}$", "", name)
        if kind in STATEMENTS:
            plan.lines[STATEMENTS[kind]], plan.closing[STATEMENTS[kind]] = \
                _statement(_rows(path))
        elif kind == "treasury-transfers":
            for r in _rows(path):
                src = numbers.get(r["from_account"][-4:])
                dst = numbers.get(r["to_account"][-4:])
                if src and dst:
                    plan.transfers.append((r["confirmation"], src, dst,
                                           parse_cents(r["amount"]),
                                           date.fromisoformat(r["date"])))
        elif name == "card-expense-policy":
            policy = [(r["merchant"], _squash(r["statement_name_starts_with"]), r["account"])
                      for r in _rows(path)]
    return plan, policy


def reference(desk: TurnContext) -> None:
    """Reconcile May from the inbox and the books."""
    plan, policy = _read_papers(desk)
    books = desk.ledger.books
    own = {b.number[-4:] for b in books.bank_accounts.values()}
    receipts = sorted((r for r in books.receipts.values() if r.matched_line is None),
                      key=lambda r: r.receipt_id)
    refs = {r.receipt_id: (q.document(desk.store, "receipt", r.receipt_id) or {}).get(
        "reference", "") for r in receipts}
    confirmations = {t[0] for t in plan.transfers}
    for account, lines in sorted(plan.lines.items()):
        fees_seen: set[tuple[str, int]] = set()
        for x in lines:
            if account == CARD:
                hit = next(((m, a) for m, p, a in policy
                            if _squash(x.description).startswith(p)), None)
                if hit is not None and x.amount < 0:
                    plan.charges[x.line_id] = hit
                continue
            if x.description == "SERVICE CHARGE":
                if (x.reference, x.amount) in fees_seen:
                    plan.errors[x.line_id] = f"service charge {x.reference} posted twice"
                else:
                    fees_seen.add((x.reference, x.amount))
                    plan.fees.append(x.line_id)
            elif x.description == "INTEREST CREDIT":
                plan.interest.append(x.line_id)
            elif x.reference in confirmations:
                continue  # a transfer's leg: matched when the transfer is recorded
            elif x.description.startswith("RETURNED ITEM"):
                rid = next((r.receipt_id for r in receipts if refs[r.receipt_id] == x.reference
                            and r.amount == -x.amount), None)
                if rid is not None:
                    plan.returns[x.line_id] = rid
            elif x.amount > 0:
                m = re.search(r"FOR ACCT \.\.\.(\d{4})", x.reference)
                if m is not None and m.group(1) not in own:
                    plan.errors[x.line_id] = (f"deposit for account ...{m.group(1)} (not ours) "
                                              f"credited to {account}")
                    continue
                taken = set(plan.receipts.values())
                rid = next((r.receipt_id for r in receipts if refs[r.receipt_id] == x.reference
                            and r.amount == x.amount and r.receipt_id not in taken
                            and r.bank_account_id == account), None)
                if rid is not None:
                    plan.receipts[x.line_id] = rid
    _reconcile(desk, plan)


# --- the oracle --------------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """Reconcile May from the truth: the bank's own lines and the injection's record."""
    truth: dict[str, object] = {}
    for e in world.ledger.store.read(realm="world", types=["injection_planted"]):
        data = orjson.loads(e.payload)
        if data.get("kind") == "multi_bank_month":
            truth = data["detail"]
    day = str(truth["statement_day"])
    plan = _Plan()
    books = desk.ledger.books
    for account in (OPERATING, SAVINGS, CARD):
        plan.lines[account] = []
        plan.closing[account] = next(
            (e.event.opening_balance for e in world.ledger.store.read(
                types=["bank_account_opened"]) if e.event.bank_account_id == account), 0)
    charges = truth["card_charges"]
    assert isinstance(charges, list)
    fees: set[str] = set()
    for e in world.ledger.store.read(realm="world", types=["bank_line_posted"]):
        x = orjson.loads(e.payload)
        if x["posted_on"] > day or x["bank_account_id"] not in plan.lines:
            continue
        line = _Line(x["line_id"], date.fromisoformat(x["posted_on"]), x["description"],
                     x["reference"], x["counterparty"], x["amount"])
        plan.lines[x["bank_account_id"]].append(line)
        plan.closing[x["bank_account_id"]] += x["amount"]
        source = x.get("source") or ""
        if source.startswith("error:"):
            plan.errors[line.line_id] = f"the bank's error ({source[6:].replace('_', ' ')})"
        elif x["kind"] == "deposit" and source in books.receipts:
            plan.receipts[line.line_id] = source
        elif x["kind"] == "returned":
            plan.returns[line.line_id] = source
        elif x["kind"] == "fee":
            plan.fees.append(line.line_id)
            fees.add(line.line_id)
        elif x["kind"] == "interest":
            plan.interest.append(line.line_id)
        elif source.startswith("card:"):
            hit = next(ch for ch in charges if ch["posted_on"] == x["posted_on"]
                       and ch["amount"] == -x["amount"] and ch["merchant"] == source[5:])
            plan.charges[line.line_id] = (str(hit["merchant"]), str(hit["account"]))
    transfers = truth["transfers"]
    assert isinstance(transfers, list)
    plan.transfers = [(t["confirmation"], t["from_account"], t["to_account"], t["amount"],
                       date.fromisoformat(t["sent_on"])) for t in transfers]
    _reconcile(desk, plan)

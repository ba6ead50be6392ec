"""Checks of a month-end reconciliation of several bank accounts against the bank's records.

The truth is the ``multi_bank_month`` injection's record (``InjectionPlanted``,
:mod:`counterparties.bank_multi`: the accounts, the deposits, the transfers, the card
charges with their accounts) and each account's own lines at the bank (``BankLinePosted``
with the account's id; a line of the bank's own error has a ``source`` starting
``error:``). The books are the erp realm. The statement day is the month's last business
day; the books are read as of the month's last day.

- ``multi_statements_imported``: each account's statement lines in the books are the
  bank's lines of the month (the bank's line id, date and amount), none missing, none
  twice.
- ``multi_lines_explained``: every line of the month is matched or reported as the bank's
  error; a fee, interest, card charge, transfer leg or returned deposit matched to a line
  is dated as the line; no fee, interest, card charge or returned deposit is recorded
  without its line (one booked on no line of a statement, e.g. after the month).
- ``bank_errors_reported``: the lines reported as the bank's errors are exactly the bank's
  erroneous lines (none booked as the company's own entry, none else reported); with
  ``description_words``, each report's description says what the bank got wrong in any
  words of its kind (a charge posted twice, another client's deposit), no placeholder.
- ``book_balances_as_bank``: each account's GL balance at the month's end is the bank's
  balance without its errors, plus the deposits recorded and not yet credited.
- ``transfers_recorded``: each transfer of the treasury's log sent from and to its accounts
  on its day for its amount, received on the day it arrived (none recorded as received
  before the day it arrived, also after the month's end), no other between the accounts
  (after the month's end neither; a transfer to the card is its statement's payment);
  1090 holds exactly what is in transit.
- ``returned_items_reopened``: each returned cheque recorded as returned on the day the bank
  returned it, its invoice open again; no other deposit returned, and the invoice of every
  cheque the bank paid still paid (none reopened by its application reversed).
- ``card_statement_entered``: each card charge recorded once, dated as charged, on the
  account the card policy codes its merchant to; the statement's balance paid from the
  operating account by one transfer to the card account after the statement, dated the day
  of the turn that made it.
- ``multi_reconciliation_file``: the reconciliation's rows per account (statement balance,
  deposits in transit, bank errors, book balance) are exactly the truth's and tie; a bank
  error's row may name either line of an identical pair (a charge posted twice).
- ``transit_file``: the transfers in transit listed are exactly those of the truth.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from datetime import date, timedelta
from typing import Any, ClassVar, Literal

import orjson

from checks.context import CheckContext, planted_truth
from checks.registry import CheckResult, CheckSpec, FileCheckSpec, check_type
from checks.state import listing, plural
from erp import events as ev
from erp import queries as q
from erp.events import decode_event
from erp.money import display_cents, parse_cents

_KIND = "multi_bank_month"
_OPERATING, _CARD = "B-OPER", "B-CARD"
_DATED_KINDS = ("fee", "interest", "card_charge", "transfer_out", "transfer_in", "return")
_LINED_KINDS = ("fee", "interest", "card_charge", "return")
"""What the bank alone makes happen: recorded only with the statement line that shows it."""


def multi_bank_truth(ctx: CheckContext) -> dict[str, Any]:
    """The recorded truth of the month (empty when none was planted)."""
    return planted_truth(ctx, _KIND)


def bank_lines(ctx: CheckContext) -> list[dict[str, Any]]:
    """The bank's own lines of every account, in posting order."""
    def load() -> list[dict[str, Any]]:
        return [orjson.loads(e.payload)
                for e in ctx.store.read(realm="world", types=["bank_line_posted"])]
    return ctx.cached(("bank_multi.lines",), load)


def _events(ctx: CheckContext, *types: str) -> list[ev.Event]:
    return [decode_event(e.type, e.schema_version, e.payload)
            for e in ctx.store.read(realm="erp", types=list(types), until=ctx.position)]


def _written(ctx: CheckContext, *types: str) -> list[tuple[ev.Event, date]]:
    """Erp-realm events of some types, each with the business date of the turn that wrote
    it."""
    return [(decode_event(e.type, e.schema_version, e.payload),
             date.fromisoformat(e.business_date))
            for e in ctx.store.read(realm="erp", types=list(types), until=ctx.position)]


def _day(truth: dict[str, Any]) -> date:
    return date.fromisoformat(truth["statement_day"])


def _month_end(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)


def _on_statement(ctx: CheckContext, truth: dict[str, Any], account: str) -> list[dict[str, Any]]:
    """The account's lines of the bank through the statement day."""
    day = _day(truth).isoformat()
    return [x for x in bank_lines(ctx) if x["bank_account_id"] == account
            and x["posted_on"] <= day]


def _opening(ctx: CheckContext, account: str) -> int:
    for e in _events(ctx, "bank_account_opened"):
        assert isinstance(e, ev.BankAccountOpened)
        if e.bank_account_id == account:
            return e.opening_balance
    return 0


def statement_balance(ctx: CheckContext, truth: dict[str, Any], account: str) -> int:
    """The account's balance on its statement (the bank's lines through the statement day)."""
    return _opening(ctx, account) + sum(x["amount"] for x in _on_statement(ctx, truth, account))


def _errors(ctx: CheckContext, truth: dict[str, Any], account: str) -> list[dict[str, Any]]:
    return [x for x in _on_statement(ctx, truth, account)
            if (x.get("source") or "").startswith("error:")]


def _in_transit_deposits(truth: dict[str, Any]) -> list[dict[str, Any]]:
    day = truth["statement_day"]
    return [d for d in truth["deposits"] if d["recorded_on"] <= day < d["posted_on"]]


def _result(ok: str, problems: list[str], metrics: dict[str, Any]) -> CheckResult:
    if problems:
        return CheckResult("", False, f"{plural(len(problems), 'problem')}: {listing(problems)}",
                           {**metrics, "problems": len(problems)})
    return CheckResult("", True, ok, {**metrics, "problems": 0})


def _no_truth() -> CheckResult:
    return CheckResult("", False, f"no {_KIND} truth in the world realm (the scenario plants "
                                  "none)")


def _statement_rows(ctx: CheckContext) -> list[dict[str, Any]]:
    return [{"line_id": r["line_id"], "account": r["bank_account_id"],
             "day": str(r["entry_date"]), "amount": r["amount"], "status": r["status"],
             "targets": r["matched_to"]} for r in q.statement_lines(ctx.store)]


class _Spec(CheckSpec):
    """A state check of the month's bank accounts (no parameters)."""

    family: ClassVar[str] = "state"


# --- statements imported, lines explained, errors reported ----------------------------------


class MultiStatementsImported(_Spec):
    """Each account's statement lines imported, as the bank posted them, under its ids."""

    type: Literal["multi_statements_imported"]


@check_type(MultiStatementsImported)
def multi_statements_imported(spec: MultiStatementsImported, ctx: CheckContext) -> CheckResult:
    """Compare each account's imported lines with the bank's lines of the month."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    day = _day(truth).isoformat()
    rows = _statement_rows(ctx)
    problems: list[str] = []
    for account in sorted(truth["accounts"]):
        bank = Counter((x["line_id"], x["posted_on"], x["amount"])
                       for x in _on_statement(ctx, truth, account))
        books = Counter((r["line_id"], str(r["day"]), r["amount"]) for r in rows
                        if r["account"] == account and str(r["day"]) <= day)
        problems += [f"{account}: the bank's line {i} of {d} for {display_cents(a)} not "
                     "imported under its id" for (i, d, a), n in sorted((bank - books).items())
                     for _ in range(n)]
        problems += [f"{account}: imported line {i} of {d} for {display_cents(a)} is no line of "
                     "the bank's" for (i, d, a), n in sorted((books - bank).items())
                     for _ in range(n)]
    return _result("every account's statement imported as the bank posted it", problems,
                   {"accounts": len(truth["accounts"])})


class MultiLinesExplained(_Spec):
    """Every statement line of the month matched (dated as the line) or reported."""

    type: Literal["multi_lines_explained"]


@check_type(MultiLinesExplained)
def multi_lines_explained(spec: MultiLinesExplained, ctx: CheckContext) -> CheckResult:
    """Look at every imported line through the month's end and the documents matched to it."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    end = _month_end(_day(truth)).isoformat()
    dated = {(d["kind"], d["doc_id"]): str(d["doc_date"]) for d in q.documents(ctx.store)
             if d["kind"] in _DATED_KINDS}
    problems: list[str] = []
    rows = _statement_rows(ctx)
    lines = [r for r in rows if str(r["day"]) <= end]
    on_a_line = {(kind, doc_id) for r in rows if r["status"] == "matched"
                 for kind, doc_id, _ in orjson.loads(r["targets"])}
    problems += [f"{kind} {doc_id} of {on} is on no line of a statement (recorded without the "
                 "bank's line)" for (kind, doc_id), on in sorted(dated.items())
                 if kind in _LINED_KINDS and (kind, doc_id) not in on_a_line]
    for r in lines:
        if r["status"] == "bank_error":
            continue
        if r["status"] != "matched":
            problems.append(f"line {r['line_id']} ({r['account']}, {r['day']}, "
                            f"{display_cents(r['amount'])}) is not explained")
            continue
        for kind, doc_id, _ in orjson.loads(r["targets"]):
            on = dated.get((kind, doc_id))
            if on is not None and on != str(r["day"]):
                problems.append(f"{kind} {doc_id} is dated {on}, its line {r['line_id']} "
                                f"{r['day']}")
    return _result(f"{plural(len(lines), 'statement line')} explained", problems,
                   {"lines": len(lines)})


class BankErrorsReported(_Spec):
    """The bank's erroneous lines reported to it, and nothing else."""

    type: Literal["bank_errors_reported"]
    description_words: bool = False
    """When set, each report of one of the bank's erroneous lines (or of its identical
    twin, :func:`error_twins`) describes it in any words of its kind
    (:data:`BANK_ERROR_WORDS`): a charge posted twice (``twice``, ``duplicate``...),
    another client's deposit (``not ours``, ``another``, ``wrong account``...). A
    placeholder (``x``, ``error``, ``n/a``) or only another kind's words fail: the bank
    acts on the report."""


BANK_ERROR_WORDS: dict[str, tuple[str, ...]] = {
    "duplicate_fee": ("twice", "duplicat", "double", "again", "repeat", "second", "dupe",
                      "dup ", "same charge", "two identical", "posted 2x", "2 times"),
    "misposted_deposit": ("not ours", "not our", "another", "other client", "other customer",
                          "other company", "wrong account", "wrong acct", "someone else",
                          "belong", "mispost", "mis-post", "misdirect", "misappl",
                          "not for us", "third party", "for account", "for acct",
                          "other account", "other acct", "unknown deposit"),
}
"""Words that say what the bank got wrong, by the kind of its error (the ``error:`` source
of its line): ``bank_errors_reported``'s ``description_words``."""

_ERROR_SAYS = {"duplicate_fee": "a charge posted twice",
               "misposted_deposit": "another client's deposit"}


def description_says(description: str, kind: str) -> bool:
    """Whether a bank-error report's description says what the bank got wrong in words of
    its ``kind`` (a key of :data:`BANK_ERROR_WORDS`; any description with a letter in it
    for a kind of no words)."""
    said = " ".join(description.casefold().replace("\u2019", "'").split()) + " "
    if not re.search(r"[a-z]", said):
        return False
    return any(w in said for w in BANK_ERROR_WORDS.get(kind, ("",)))


def _unsaid_reports(ctx: CheckContext, truth: dict[str, Any]) -> list[str]:
    """The reports whose descriptions do not say what the bank got wrong."""
    kinds = {x["line_id"]: str(x["source"])[len("error:"):] for a in sorted(truth["accounts"])
             for x in _errors(ctx, truth, a)}
    twins = error_twins(ctx, truth)
    out = []
    for e in _events(ctx, "bank_error_reported"):
        assert isinstance(e, ev.BankErrorReported)
        kind = kinds.get(twins.get(e.line_id, e.line_id))
        if kind is not None and not description_says(e.description, kind):
            out.append(f"line {e.line_id} reported as {e.description.strip()!r}: the report "
                       f"does not say what the bank got wrong ({_ERROR_SAYS.get(kind, kind)})")
    return out


@check_type(BankErrorsReported)
def bank_errors_reported(spec: BankErrorsReported, ctx: CheckContext) -> CheckResult:
    """Compare the lines reported as bank errors with the bank's erroneous lines."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    wrong = Counter((a, x["posted_on"], x["amount"]) for a in sorted(truth["accounts"])
                    for x in _errors(ctx, truth, a))
    reported = Counter((r["account"], str(r["day"]), r["amount"]) for r in _statement_rows(ctx)
                       if r["status"] == "bank_error")
    problems = [f"{a}: the bank's error of {d} ({display_cents(n)}) not reported"
                for (a, d, n), k in sorted((wrong - reported).items()) for _ in range(k)]
    problems += [f"{a}: the line of {d} ({display_cents(n)}) reported as the bank's error is "
                 "the company's" for (a, d, n), k in sorted((reported - wrong).items())
                 for _ in range(k)]
    if spec.description_words:
        problems += _unsaid_reports(ctx, truth)
    return _result(f"{plural(sum(wrong.values()), 'bank error')} reported, none booked",
                   problems, {"errors": sum(wrong.values())})


class BookBalancesAsBank(_Spec):
    """Each account's book balance is the bank's, without its errors, plus deposits in
    transit."""

    type: Literal["book_balances_as_bank"]


@check_type(BookBalancesAsBank)
def book_balances_as_bank(spec: BookBalancesAsBank, ctx: CheckContext) -> CheckResult:
    """Each account's GL balance at the month's end against what it should be."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    end = _month_end(_day(truth))
    transit = sum(d["amount"] for d in _in_transit_deposits(truth))
    problems: list[str] = []
    for account, acct in sorted(truth["accounts"].items()):
        want = statement_balance(ctx, truth, account) - sum(
            x["amount"] for x in _errors(ctx, truth, account))
        if account == _OPERATING:
            want += transit
        got = q.account_balance(ctx.store, acct["gl_account"], as_of=end)
        if got != want:
            problems.append(f"{account} ({acct['gl_account']}): book balance "
                            f"{display_cents(got)} on {end}, expected {display_cents(want)}")
    return _result("every account's book balance is the bank's without its errors, plus the "
                   "deposits in transit", problems, {"accounts": len(truth["accounts"])})


# --- transfers, returned items, the card -------------------------------------------------------


class TransfersRecorded(_Spec):
    """Every transfer of the log sent and received on its days, through the transit account
    (1090), where one in transit at the month's end is held."""

    type: Literal["transfers_recorded"]


@check_type(TransfersRecorded)
def transfers_recorded(spec: TransfersRecorded, ctx: CheckContext) -> CheckResult:
    """Pair the books' transfers of the month with the log's."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    day, end = _day(truth), _month_end(_day(truth))
    # every transfer between the accounts, whatever its date (one to the card is the card
    # statement's payment, card_statement_entered's)
    sent = [e for e in _events(ctx, "funds_transfer_sent")
            if isinstance(e, ev.FundsTransferSent) and e.to_bank_account_id != _CARD]
    received = {e.transfer_id: e for e in _events(ctx, "funds_transfer_received")
                if isinstance(e, ev.FundsTransferReceived)}
    problems: list[str] = []
    left = list(sent)
    in_transit = 0
    for t in truth["transfers"]:
        what = f"transfer {t['confirmation']} ({display_cents(t['amount'])} {t['sent_on']})"
        found = next((e for e in left if (e.from_bank_account_id, e.to_bank_account_id,
                                          e.amount, e.entry_date.isoformat())
                      == (t["from_account"], t["to_account"], t["amount"], t["sent_on"])), None)
        if found is None:
            problems.append(f"{what} not recorded as sent from {t['from_account']} to "
                            f"{t['to_account']} on its day")
            continue
        left.remove(found)
        if found.transit_account != truth["transit_account"]:
            problems.append(f"{what} sent through {found.transit_account}, not "
                            f"{truth['transit_account']} (in transit)")
        got = received.get(found.transfer_id)
        arrived = date.fromisoformat(t["arrives_on"]) <= day
        if not arrived:
            in_transit += t["amount"]
            if got is not None and got.entry_date.isoformat() < t["arrives_on"]:
                problems.append(f"{what} recorded as received on {got.entry_date}; it reached "
                                f"the bank on {t['arrives_on']}")
        elif got is None:
            problems.append(f"{what} arrived on {t['arrives_on']}, not recorded as received")
        elif got.entry_date.isoformat() != t["arrives_on"]:
            problems.append(f"{what} received on {got.entry_date}, it arrived on "
                            f"{t['arrives_on']}")
    problems += [f"transfer {e.transfer_id} ({display_cents(e.amount)} {e.entry_date}) is in "
                 "no log" for e in left]
    held = q.account_balance(ctx.store, truth["transit_account"], as_of=end)
    if held != in_transit:
        problems.append(f"{truth['transit_account']} holds {display_cents(held)} on {end}, "
                        f"in transit {display_cents(in_transit)}")
    return _result(f"{plural(len(truth['transfers']), 'transfer')} recorded as made, "
                   f"{display_cents(in_transit)} in transit", problems,
                   {"transfers": len(truth["transfers"]), "in_transit": in_transit})


class ReturnedItemsReopened(_Spec):
    """Every returned cheque recorded as returned on its day, its invoice open again; every
    paid cheque's invoice still paid."""

    type: Literal["returned_items_reopened"]


@check_type(ReturnedItemsReopened)
def returned_items_reopened(spec: ReturnedItemsReopened, ctx: CheckContext) -> CheckResult:
    """Compare the books' returned deposits with the bank's returns."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    day = truth["statement_day"]
    returned = {e.receipt_id: e for e in _events(ctx, "deposit_returned")
                if isinstance(e, ev.DepositReturned)}
    problems: list[str] = []
    due = [d for d in truth["deposits"] if d["returned_on"] and d["returned_on"] <= day]
    for d in due:
        e = returned.pop(d["receipt_id"], None)
        what = f"receipt {d['receipt_id']} ({display_cents(d['amount'])})"
        if e is None:
            problems.append(f"{what} returned by the bank on {d['returned_on']}, not recorded")
            continue
        if e.entry_date.isoformat() != d["returned_on"]:
            problems.append(f"{what} recorded returned on {e.entry_date}, the bank returned it "
                            f"on {d['returned_on']}")
        inv = q.document(ctx.store, "invoice", d["invoice_id"])
        if inv is None or inv["open_amount"] != d["amount"]:
            problems.append(f"invoice {d['invoice_id']} not open again for "
                            f"{display_cents(d['amount'])}")
    problems += [f"receipt {r} recorded as returned; the bank paid it" for r in sorted(returned)]
    paid = [d for d in truth["deposits"] if d not in due]
    for d in paid:
        inv = q.document(ctx.store, "invoice", d["invoice_id"])
        if inv is not None and inv["open_amount"]:
            problems.append(f"invoice {d['invoice_id']} open for "
                            f"{display_cents(inv['open_amount'])}; its cheque (receipt "
                            f"{d['receipt_id']}) was not returned")
    return _result(f"{plural(len(due), 'returned item')} reopened, the invoices of "
                   f"{plural(len(paid), 'paid cheque')} still paid", problems,
                   {"returned": len(due), "paid": len(paid)})


class CardStatementEntered(_Spec):
    """Every card charge entered on its policy account; the statement paid from operating."""

    type: Literal["card_statement_entered"]


@check_type(CardStatementEntered)
def card_statement_entered(spec: CardStatementEntered, ctx: CheckContext) -> CheckResult:
    """Compare the books' card charges and the card payment with the card statement."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    day = _day(truth)
    want = Counter((x["posted_on"], x["amount"], x["account"]) for x in truth["card_charges"]
                   if x["posted_on"] <= day.isoformat())
    got = Counter((e.entry_date.isoformat(), e.amount, e.account)
                  for e in _events(ctx, "card_charge_recorded")
                  if isinstance(e, ev.CardChargeRecorded))
    problems = [f"the card charge of {d} for {display_cents(a)} not entered on {acct}"
                for (d, a, acct), n in sorted((want - got).items()) for _ in range(n)]
    problems += [f"a card charge of {d} for {display_cents(a)} on {acct} is none of the "
                 "statement's (or on another account)"
                 for (d, a, acct), n in sorted((got - want).items()) for _ in range(n)]
    owed = -statement_balance(ctx, truth, _CARD)
    written = [(e, on) for e, on in _written(ctx, "funds_transfer_sent")
               if isinstance(e, ev.FundsTransferSent) and e.to_bank_account_id == _CARD]
    paid = [e for e, _ in written]
    if owed > 0 and len(paid) != 1:
        problems.append(f"{len(paid)} payments to the card, expected one of "
                        f"{display_cents(owed)}")
    for e, on in written:
        if e.from_bank_account_id != _OPERATING:
            problems.append(f"card payment {e.transfer_id} from {e.from_bank_account_id}, not "
                            "the operating account")
        if e.transit_account != truth["transit_account"]:
            problems.append(f"card payment {e.transfer_id} sent through {e.transit_account}, "
                            f"not {truth['transit_account']} (in transit)")
        if e.amount != owed:
            problems.append(f"card payment {e.transfer_id} of {display_cents(e.amount)}, the "
                            f"statement's balance is {display_cents(owed)}")
        if e.entry_date <= day:
            problems.append(f"card payment {e.transfer_id} dated {e.entry_date}, before the "
                            "statement arrived")
        elif e.entry_date != on:
            problems.append(f"card payment {e.transfer_id} dated {e.entry_date}, made in the "
                            f"turn of {on}")
    return _result(f"{plural(sum(want.values()), 'card charge')} entered, "
                   f"{display_cents(owed)} paid", problems,
                   {"charges": sum(want.values()), "owed": owed})


# --- the output files -------------------------------------------------------------------------


def _read(ctx: CheckContext, rel: str, columns: list[str]) -> tuple[list[dict[str, str]], str]:
    """The file's rows by the prompt's column names: a header naming each of ``columns``
    once (case and surrounding spaces aside), in any order, other columns ignored (the
    prompt says which columns, not their order nor that no other may stand beside them)."""
    path = ctx.file(rel)
    if not path.is_file():
        return [], f"{rel} is missing"
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        header = [h.strip().lower() for h in next(reader, [])]
        at = {c: [k for k, h in enumerate(header) if h == c] for c in columns}
        if any(len(ks) != 1 for ks in at.values()):
            return [], (f"{rel} has columns {header}, expected each of {columns} once "
                        f"(missing: {[c for c, ks in at.items() if not ks]}, "
                        f"repeated: {[c for c, ks in at.items() if len(ks) > 1]})")
        return [{c: (r[ks[0]] if ks[0] < len(r) else "").strip() for c, ks in at.items()}
                for r in reader if any(x.strip() for x in r)], ""


def _cents(text: str) -> int | None:
    try:
        return parse_cents(text)
    except ValueError:
        return None


class MultiReconciliationFile(FileCheckSpec):
    """The reconciliation of each account: its rows are the truth's and tie."""

    type: Literal["multi_reconciliation_file"]


RECONCILIATION_COLUMNS = ["account", "item", "reference", "amount"]


def expected_reconciliation(ctx: CheckContext, truth: dict[str, Any]) -> Counter[tuple[str, ...]]:
    """The rows a reconciliation of every account must hold (amounts in cents, as text)."""
    end = _month_end(_day(truth))
    rows: Counter[tuple[str, ...]] = Counter()
    for account, acct in sorted(truth["accounts"].items()):
        rows[(account, "statement_balance", "",
              str(statement_balance(ctx, truth, account)))] += 1
        for x in _errors(ctx, truth, account):
            rows[(account, "bank_error", x["line_id"], str(-x["amount"]))] += 1
        if account == _OPERATING:
            for d in _in_transit_deposits(truth):
                rows[(account, "deposit_in_transit", d["receipt_id"], str(d["amount"]))] += 1
        rows[(account, "book_balance", "",
              str(q.account_balance(ctx.store, acct["gl_account"], as_of=end)))] += 1
    return rows


def error_twins(ctx: CheckContext, truth: dict[str, Any]) -> dict[str, str]:
    """Each line of a statement identical to one of the bank's erroneous lines (the same
    account, day, description, reference, counterparty and amount; only the line id differs)
    -> that erroneous line's id. A charge posted twice prints two such lines, and which of
    the pair is "the bank's error" is the clerk's choice: either may be reported."""
    def same(x: dict[str, Any]) -> tuple[Any, ...]:
        return (x["posted_on"], x["description"], x["reference"], x["counterparty"],
                x["amount"])
    twins: dict[str, str] = {}
    for account in sorted(truth["accounts"]):
        errors = _errors(ctx, truth, account)
        if not errors:
            continue
        wrong = {x["line_id"] for x in errors}
        first: dict[tuple[Any, ...], str] = {}
        for x in errors:
            first.setdefault(same(x), x["line_id"])
        for y in _on_statement(ctx, truth, account):
            found = first.get(same(y))
            if found is not None and y["line_id"] not in wrong:
                twins.setdefault(y["line_id"], found)
    return twins


@check_type(MultiReconciliationFile)
def multi_reconciliation_file(spec: MultiReconciliationFile, ctx: CheckContext) -> CheckResult:
    """Compare the reconciliation's rows with the truth's; each account's rows tie. A
    ``bank_error`` row may name either line of an identical pair (:func:`error_twins`)."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    rows, why = _read(ctx, spec.path, RECONCILIATION_COLUMNS)
    if why:
        return CheckResult("", False, why)
    twins = error_twins(ctx, truth)
    got: Counter[tuple[str, ...]] = Counter()
    problems: list[str] = []
    ties: dict[str, int] = {}
    for n, r in enumerate(rows, start=2):
        cents = _cents(r["amount"])
        if cents is None:
            problems.append(f"row {n}: amount {r['amount']!r} is not a decimal amount")
            continue
        ref = r["reference"]
        if r["item"] == "bank_error":
            ref = twins.get(ref, ref)
        got[(r["account"], r["item"], ref, str(cents))] += 1
        sign = -1 if r["item"] == "book_balance" else 1
        ties[r["account"]] = ties.get(r["account"], 0) + sign * cents
    want = expected_reconciliation(ctx, truth)
    problems += [f"missing row {listing(list(k))}" for k, n in sorted((want - got).items())
                 for _ in range(n)]
    problems += [f"unexpected row {listing(list(k))}" for k, n in sorted((got - want).items())
                 for _ in range(n)]
    problems += [f"{a}: statement balance and items do not add up to the book balance (off by "
                 f"{display_cents(v)})" for a, v in sorted(ties.items()) if v]
    return _result(f"{plural(sum(want.values()), 'row')} as the truth's, every account ties",
                   problems, {"rows": sum(got.values())})


class TransitFile(FileCheckSpec):
    """The transfers in transit listed: exactly those that had not arrived."""

    type: Literal["transit_file"]


TRANSIT_COLUMNS = ["confirmation", "from_account", "to_account", "sent_on", "amount"]


@check_type(TransitFile)
def transit_file(spec: TransitFile, ctx: CheckContext) -> CheckResult:
    """Compare the listed transfers in transit with the truth's."""
    truth = multi_bank_truth(ctx)
    if not truth:
        return _no_truth()
    rows, why = _read(ctx, spec.path, TRANSIT_COLUMNS)
    if why:
        return CheckResult("", False, why)
    day = truth["statement_day"]
    want = Counter((t["confirmation"], t["from_account"], t["to_account"], t["sent_on"],
                    str(t["amount"])) for t in truth["transfers"] if t["arrives_on"] > day)
    got = Counter((r["confirmation"], r["from_account"], r["to_account"], r["sent_on"],
                   str(_cents(r["amount"]))) for r in rows)
    problems = [f"missing {listing(list(k))}" for k, n in sorted((want - got).items())
                for _ in range(n)]
    problems += [f"unexpected {listing(list(k))}" for k, n in sorted((got - want).items())
                 for _ in range(n)]
    return _result(f"{plural(sum(want.values()), 'transfer')} in transit listed", problems,
                   {"listed": sum(got.values())})

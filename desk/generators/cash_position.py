"""The ``cash-position`` generator: May's cash position over the company's two bank
accounts, from the books and the bank's statement lines, with the uncleared items.

The books are :mod:`desk.generators.month_books`' company from March to the task date:
every cash line of the general ledger is the past clerk's (receipts on the operating
account 1000, the month-end payments credited to 1000, the transfer to savings and the
savings interest on 1010). The bank's side:

- the operating account's statement holds the engine's own bank lines (every customer
  deposit, the bank's monthly service charge and interest credit, which the clerk never
  booked), and each payment the clerk booked clears the bank a drawn number of business
  days after its entry date (``desk:cash-clearing``): items booked on the month's last
  business day may clear only in the next month;
- the savings bank credits the month's interest (the clerk books it on the month's last
  business day) on the first business day of the next month.

The workspace gets ``cash_accounts.csv`` (the accounts, the bank's account numbers and
the book balance at April 30), ``gl_cash_may.csv`` (May's cash lines of the ledger),
``bank_statement_may.csv`` (both accounts' May statement lines with the opening and
closing balances) and ``bank_rec_2026-04-30.csv`` (April's list of uncleared items). The
reference holds ``cash_position.csv`` and ``uncleared_items.csv`` at May 31.

Parameters: ``tier`` (``easy``: the bank writes the ledger's entry ids exactly;
``medium``, the release: the bank writes them its own ways, ``JE2605013``,
``je 2605-013``; ``hard``: as medium and the statement splits amounts into withdrawal
and deposit columns with thousands separators).
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp.money import display_cents, format_cents, parse_cents
from sim.rng import Streams

TIERS = ("easy", "medium", "hard")
APRIL_END, MAY_START, MAY_END = date(2026, 4, 30), date(2026, 5, 1), date(2026, 5, 31)
ACCOUNTS = (("1000", "Operating account", "First Harbor Bank", "000123456789"),
            ("1010", "Savings account", "First Harbor Bank", "000987650011"))
BANK_TEXT = {"Office rent": "ACH DEBIT OFFICE RENT",
             "Software subscriptions": "CARD DEBIT SOFTWARE",
             "Bank service charges": "ACCOUNT ANALYSIS FEE", "Equipment purchase": "CHECK PAID",
             "Transfer to savings": "TRANSFER TO SAVINGS"}
"""The bank's description of a cleared payment, by the memo's first words."""
LAGS = {"ACH DEBIT OFFICE RENT": (0, 3), "CARD DEBIT SOFTWARE": (0, 2),
        "ACCOUNT ANALYSIS FEE": (1, 2), "CHECK PAID": (2, 7), "TRANSFER TO SAVINGS": (0, 0)}
"""Business days from entry date to clearing, inclusive range, per bank description."""


def _business_after(day: date, n: int) -> date:
    d = day
    while n > 0 or d.weekday() >= 5:
        d += timedelta(days=1)
        if d.weekday() < 5:
            n -= 1
    return d


def _bank_ref(entry_id: str, tier: str, rng: Any) -> str:
    if tier == "easy":
        return entry_id
    m = re.fullmatch(r"JE-(\d{4})-(\d{3})", entry_id)
    if not m:
        return entry_id.replace("-", " ")
    styles = (f"JE{m[1]}{m[2]}", f"je {m[1]}-{m[2]}", f"JE-{m[1]}-{m[2]}", f"PMT JE{m[1]}/{m[2]}")
    return styles[int(rng.integers(0, len(styles)))]


def _bank_text(memo: str) -> str:
    for k, v in BANK_TEXT.items():
        if memo.startswith(k):
            return v
    return "DEBIT"


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """The cash accounts, May's ledger cash lines, May's statements, April's list; the
    reference cash position and uncleared items at May 31."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of {', '.join(TIERS)})")
    rng = Streams(f"cash-position/{ctx.seed}").generator("desk:cash-clearing")
    scenario = company_scenario(date(2026, 3, 2), ctx.day, customers=30, vendors=6)
    with kept_books(scenario, ctx.seed, until=ctx.day,
                    opening={"1300": 600_000, "1500": 4_200_000}) as kb:
        tb_april, tb_may = kb.trial_balances[APRIL_END], kb.trial_balances[MAY_END]
        bank_lines = [x for x in kb.sim.events("bank_line_posted") if x.posted_on <= MAY_END]
        receipts = list(kb.receipts)
        entries = list(kb.entries)
    # The ledger's cash lines: (account, date, entry, description, signed amount, ref)
    book: list[dict[str, Any]] = []
    for r in receipts:
        book.append({"account": "1000", "date": r["entry_date"], "entry": r["receipt_id"],
                     "text": f"Receipt {r['customer_id']} {r['reference']}",
                     "amount": r["amount"], "kind": "receipt"})
    for e in entries:
        for acct, dr, cr in e["lines"]:
            if acct in ("1000", "1010"):
                book.append({"account": acct, "date": e["entry_date"], "entry": e["entry_id"],
                             "text": e["memo"], "amount": dr - cr, "kind": "entry"})
    book.sort(key=lambda b: (b["date"], b["account"], b["entry"]))
    # Each account's balance before the first line (the company's opening bank balance).
    base = {a: tb_april.get(a, 0) - sum(b["amount"] for b in book
                                        if b["account"] == a and b["date"] <= APRIL_END)
            for a, *_ in ACCOUNTS}
    for a, *_ in ACCOUNTS:
        total = base[a] + sum(b["amount"] for b in book if b["account"] == a
                              and b["date"] <= MAY_END)
        if total != tb_may.get(a, 0):
            raise GenerationError(f"seed {ctx.seed}: account {a}'s cash lines sum to "
                                  f"{format_cents(total)}, the trial balance holds "
                                  f"{format_cents(tb_may.get(a, 0))}")
    # The bank's lines: (account, txn id, date, description, reference, amount, book entry)
    bank: list[dict[str, Any]] = []
    for x in bank_lines:
        bank.append({"account": "1000", "txn": x.line_id, "date": x.posted_on,
                     "text": x.description, "ref": x.reference, "amount": x.amount,
                     "entry": None if x.kind in ("fee", "interest") else "receipt"})
    n = 0
    for b in book:
        if b["kind"] != "entry":
            continue
        n += 1
        if b["account"] == "1010":
            if b["amount"] > 0 and b["text"].startswith("Savings interest"):
                first = (b["date"].replace(day=28) + timedelta(days=7)).replace(day=1)
                cleared = _business_after(first, 0)
                text, ref = "INTEREST CREDIT", f"INT {b['date']:%Y-%m}"
            else:
                cleared, text, ref = b["date"], "TRANSFER FROM OPERATING", "XFER"
        else:
            text = _bank_text(b["text"])
            lo, hi = LAGS.get(text, (0, 3))
            cleared = _business_after(b["date"], int(rng.integers(lo, hi + 1)))
            ref = _bank_ref(b["entry"], tier, rng)
        bank.append({"account": b["account"], "txn": f"BT-{b['account']}-{n:04d}",
                     "date": cleared, "text": text, "ref": ref, "amount": b["amount"],
                     "entry": b["entry"]})
    bank.sort(key=lambda x: (x["date"], x["account"], x["txn"]))
    booked = {b["entry"]: b["date"] for b in book if b["kind"] == "entry"}
    cleared_entries = {x["entry"]: x["date"] for x in bank if x["entry"] not in (None, "receipt")}

    def uncleared(as_of: date) -> list[list[str]]:
        out = []
        for b in book:
            if b["kind"] != "entry" or b["date"] > as_of:
                continue
            if cleared_entries.get(b["entry"], date.max) > as_of:
                typ = "deposit_in_transit" if b["amount"] > 0 else "outstanding_payment"
                out.append([b["account"], b["entry"], b["date"].isoformat(),
                            format_cents(b["amount"]), typ])
        for x in bank:
            if x["entry"] is None and x["date"] <= as_of:
                out.append([x["account"], x["txn"], x["date"].isoformat(),
                            format_cents(x["amount"]), "bank_not_in_books"])
        return sorted(out, key=lambda r: (r[0], r[2], r[1]))

    april_items, may_items = uncleared(APRIL_END), uncleared(MAY_END)
    cleared_in_may = {r[1] for r in april_items} - {r[1] for r in may_items}
    if not any(r[4] == "outstanding_payment" for r in may_items) or not any(
            r[1].startswith("JE") for r in april_items if r[1] in cleared_in_may) or not any(
            r[4] == "outstanding_payment" for r in april_items if r[1] in cleared_in_may) or \
            sum(1 for x in bank if x["entry"] not in (None, "receipt") and
                x["date"].month == 5 and x["account"] == "1000") < 2 or not any(
            x["account"] == "1000" and x["date"].month == 5
            and x["date"] == booked.get(x["entry"]) for x in bank):
        raise GenerationError(f"seed {ctx.seed}: the draw leaves no May payment outstanding, "
                              "no April item cleared in May, no May payment cleared in May or too "
                              "few May clearings "
                              "(expected each case planted)")

    def bank_balance(a: str, as_of: date) -> int:
        return base[a] + sum(x["amount"] for x in bank if x["account"] == a
                             and x["date"] <= as_of)

    position, totals = [], [0] * 6
    names = {a: nm for a, nm, *_ in ACCOUNTS}
    for a, *_ in ACCOUNTS:
        items = [r for r in may_items if r[0] == a]
        bk, bn = tb_may.get(a, 0), bank_balance(a, MAY_END)

        def cents_of(rows: list[list[str]], typ: str) -> int:
            return sum(parse_cents(r[3]) for r in rows if r[4] == typ)

        outstanding = -cents_of(items, "outstanding_payment")
        dit = cents_of(items, "deposit_in_transit")
        bank_only = cents_of(items, "bank_not_in_books")
        adjusted = bk + bank_only
        if adjusted != bn + dit - outstanding:
            raise GenerationError(f"seed {ctx.seed}: account {a} does not reconcile")
        figs = [bk, bn, outstanding, dit, bank_only, adjusted]
        totals = [t + f for t, f in zip(totals, figs, strict=True)]
        position.append([a, names[a], *map(format_cents, figs)])
    position.append(["Total", "All bank accounts", *map(format_cents, totals)])
    hard = tier == "hard"
    number = {a: num for a, _, _, num in ACCOUNTS}
    stmt: list[list[str]] = []
    for a, *_ in ACCOUNTS:
        running = bank_balance(a, APRIL_END)
        blank = ["", ""] if hard else [""]
        stmt.append([number[a], MAY_START.isoformat(), "", "OPENING BALANCE", "", *blank,
                     display_cents(running) if hard else format_cents(running)])
        for x in bank:
            if x["account"] != a or not MAY_START <= x["date"] <= MAY_END:
                continue
            running += x["amount"]
            if hard:
                w = display_cents(-x["amount"]) if x["amount"] < 0 else ""
                d = display_cents(x["amount"]) if x["amount"] > 0 else ""
                stmt.append([number[a], x["date"].isoformat(), x["txn"], x["text"], x["ref"],
                             w, d, display_cents(running)])
            else:
                stmt.append([number[a], x["date"].isoformat(), x["txn"], x["text"], x["ref"],
                             format_cents(x["amount"]), format_cents(running)])
        closing = display_cents(running) if hard else format_cents(running)
        stmt.append([number[a], MAY_END.isoformat(), "", "CLOSING BALANCE", "", *blank,
                     closing])
    stmt_header = ["account_number", "date", "transaction_id", "description", "reference",
                   *(["withdrawal", "deposit"] if hard else ["amount"]), "balance"]
    gl_rows = [[b["account"], b["date"].isoformat(), b["entry"], b["text"],
                format_cents(b["amount"]) if b["amount"] > 0 else "",
                format_cents(-b["amount"]) if b["amount"] < 0 else ""]
               for b in book if MAY_START <= b["date"] <= MAY_END]
    accounts_rows = [[a, nm, bank_name, num, format_cents(tb_april.get(a, 0))]
                     for a, nm, bank_name, num in ACCOUNTS]
    item_header = ["account", "reference", "date", "amount", "type"]
    return {
        "workspace/cash_accounts.csv": csv_bytes(
            ["account", "name", "bank", "account_number", "book_balance_2026-04-30"],
            accounts_rows),
        "workspace/gl_cash_may.csv": csv_bytes(
            ["account", "date", "entry", "description", "debit", "credit"], gl_rows),
        "workspace/bank_statement_may.csv": csv_bytes(stmt_header, stmt),
        "workspace/bank_rec_2026-04-30.csv": csv_bytes(item_header, april_items),
        "reference/cash_position.csv": csv_bytes(
            ["account", "name", "book_balance", "bank_balance", "outstanding_payments",
             "deposits_in_transit", "bank_items_not_in_books", "adjusted_balance"], position),
        "reference/uncleared_items.csv": csv_bytes(item_header, may_items),
    }

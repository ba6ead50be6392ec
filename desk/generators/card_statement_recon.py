"""The ``card-statement-recon`` generator: a corporate card statement against expense reports.

The corporate card's May statement lists every cardholder's charges under the bank's
form of their name (``LOPEZ/MARIA J`` or ``MARIA J LOPEZ``), dated MM/DD/YYYY, with the
merchant's card descriptor (``UBER *TRIP HELP.UBER.COM``). Each cardholder's expense
report lists the same expenses under the employee's name as they wrote it (``Maria
Lopez`` or ``Lopez, Maria``), the merchant's plain name and dates in the employee's own
style, among expenses paid with a personal card (not on the statement). Two employees
share a surname. Planted per tier: a charge the merchant put through twice (one report
line), a merchant's credit refunding a reported charge, charges no report covers. Every
draw is from the seed's stream ``desk:cardstatement``.
"""

from __future__ import annotations

from datetime import date, timedelta

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from erp.money import display_cents, format_cents
from sim.rng import Streams

EMPLOYEES = (("David", "K", "Chen"), ("Amy", "L", "Chen"), ("Maria", "J", "Lopez"),
             ("Thomas", "R", "Whitfield"), ("Priya", "S", "Raman"), ("Jonas", "E", "Berg"),
             ("Grace", "M", "Okafor"), ("Samuel", "T", "Price"), ("Elena", "V", "Moreau"),
             ("Kevin", "D", "Walsh"), ("Hannah", "C", "Novak"))
"""Cardholders: first name, middle initial, surname (the two Chens are always drawn)."""

MERCHANTS = (("Delta Air Lines", "DELTA AIR 0062{n:06d} ATLANTA GA", 18_000, 89_000),
             ("United Airlines", "UNITED 0162{n:06d} HOUSTON TX", 16_000, 92_000),
             ("Marriott Downtown Chicago", "MARRIOTT CHICAGO DWTN {n:04d}", 21_000, 96_000),
             ("Hilton Garden Inn", "HILTON GARDEN INN #{n:04d}", 15_000, 61_000),
             ("Uber", "UBER *TRIP {n:04d} HELP.UBER.COM", 1_400, 7_900),
             ("Lyft", "LYFT *RIDE {n:04d} SAN FRANCISCO", 1_200, 6_800),
             ("Hertz", "HERTZ RENT-A-CAR {n:04d}", 9_000, 42_000),
             ("The Capital Grille", "CAPITAL GRILLE {n:04d}", 8_000, 46_000),
             ("Starbucks", "STARBUCKS STORE #{n:05d}", 500, 3_200),
             ("Staples", "STAPLES {n:05d}", 1_800, 24_000),
             ("Zoom", "ZOOM.US 888-799-{n:04d} CA", 1_499, 14_990))
"""Merchants: the plain name on reports, the card descriptor, amount range in cents."""

PERSONAL = (("City parking meter", 300, 2_400), ("Taxi (cash)", 1_500, 5_500),
            ("Office supplies (personal card)", 900, 4_000))

TIERS = {"easy": (4, 3, 5, 1, 1, 1), "medium": (6, 4, 7, 1, 1, 2), "hard": (9, 5, 8, 2, 2, 3)}
"""Per tier: cardholders, fewest and most charges each, duplicates, refunds, no-report."""


def _card_name(first: str, mi: str, last: str, style: int) -> str:
    return (f"{last}/{first} {mi}" if style % 2 == 0 else f"{first} {mi} {last}").upper()


def _report_name(first: str, last: str, style: int) -> str:
    return f"{last}, {first}" if style % 2 else f"{first} {last}"


def _report_date(d: date, style: int) -> str:
    return (d.isoformat(), f"{d.day} {d.strftime('%b')} {d.year}",
            f"{d.strftime('%b')} {d.day}, {d.year}")[style % 3]


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``card_statement.csv``, ``expense_reports.csv``; the reference recon and summary."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    n_emp, fewest, most, n_dup, n_ref, n_none = TIERS[tier]
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:cardstatement")
    others = [2 + int(i) for i in rng.permutation(len(EMPLOYEES) - 2)[:n_emp - 2]]
    emps = sorted([0, 1, *others])
    close = ctx.day - timedelta(days=1)
    first_day = ctx.day.replace(day=1)
    span = (close - first_day).days - 6
    # a charge: (employee, trans date, merchant, descriptor, cents)
    charges: list[tuple[int, date, int, str, int]] = []
    seen: set[tuple[int, date, int]] = set()
    for e in emps:
        for _ in range(int(rng.integers(fewest, most + 1))):
            while True:
                m = int(rng.integers(0, len(MERCHANTS)))
                on = first_day + timedelta(days=int(rng.integers(0, span)))
                _, desc, lo, hi = MERCHANTS[m]
                cents = int(rng.integers(lo, hi))
                if (e, on, cents) not in seen:
                    break
            seen.add((e, on, cents))
            charges.append((e, on, m, desc.format(n=int(rng.integers(100, 9_999))), cents))
    order = [int(i) for i in rng.permutation(len(charges))]
    singles = [i for i in order
               if sum(1 for c in charges if c[0] == charges[i][0] and c[3] == charges[i][3]) == 1]
    refunded = singles[:n_ref]
    rest = [i for i in order if i not in refunded]
    duplicated, no_report = rest[:n_dup], rest[n_dup:n_dup + n_none]
    # statement lines: (post date, trans date, employee, descriptor, cents, charge index, kind)
    lines: list[tuple[date, date, int, str, int, int, str]] = []
    for i, (e, on, _m, desc, cents) in enumerate(charges):
        kind = "no_report" if i in no_report else "matched"
        lines.append((on + timedelta(days=1), on, e, desc, cents, i, kind))
        if i in duplicated:
            lines.append((on + timedelta(days=2), on, e, desc, cents, i, "duplicate_charge"))
        if i in refunded:
            back = min(on + timedelta(days=int(rng.integers(2, 6))), close - timedelta(days=1))
            part = cents if rng.integers(0, 2) else cents // 3
            lines.append((back + timedelta(days=1), back, e, desc, -part, i, "refund"))
    lines.sort(key=lambda ln: (ln[0], ln[1], ln[2], ln[5], ln[6] == "duplicate_charge"))
    name_style = {e: int(rng.integers(0, 2)) for e in emps}
    report_style = {e: int(rng.integers(0, 6)) for e in emps}
    # expense reports: one per cardholder, card lines and personal ones, by date
    report_rows: list[list[str]] = []
    line_of: dict[int, str] = {}
    for k, e in enumerate(emps):
        first, _mi, last = EMPLOYEES[e]
        report = f"ER-{512 + k * 3:04d}"
        items: list[tuple[date, str, int, str, int]] = [
            (charges[i][1], MERCHANTS[charges[i][2]][0], charges[i][4], "corporate card", i)
            for i in range(len(charges)) if charges[i][0] == e and i not in no_report]
        for _ in range(int(rng.integers(0, 3))):
            what, lo, hi = PERSONAL[int(rng.integers(0, len(PERSONAL)))]
            items.append((first_day + timedelta(days=int(rng.integers(0, span))), what,
                          int(rng.integers(lo, hi)), "personal card", -1))
        items.sort(key=lambda t: (t[0], t[1], t[2]))
        st = report_style[e]
        for j, (on, what, cents, paid_with, i) in enumerate(items, start=1):
            line_id = f"{report}-{j:02d}"
            if i >= 0:
                line_of[i] = line_id
            report_rows.append([report, line_id, _report_name(first, last, st),
                                _report_date(on, st), what,
                                f"${display_cents(cents)}" if st >= 3 else format_cents(cents),
                                paid_with])
    statement_rows: list[list[str]] = []
    recon: list[list[str]] = []
    totals: dict[str, list[int]] = {s: [0, 0] for s in
                                    ("matched", "duplicate_charge", "refund", "no_report")}
    for t, (post, on, e, desc, cents, i, kind) in enumerate(lines):
        first, mi, last = EMPLOYEES[e]
        txn = f"TXN-{880_311 + t * 7}"
        statement_rows.append([txn, on.strftime("%m/%d/%Y"), post.strftime("%m/%d/%Y"),
                               _card_name(first, mi, last, name_style[e]),
                               f"{4417 + emps.index(e) * 1113 % 5000:04d}", desc,
                               format_cents(cents)])
        recon.append([txn, _report_name(first, last, report_style[e]), on.isoformat(),
                      format_cents(cents), kind, "" if kind == "no_report" else line_of[i]])
        totals[kind][0] += 1
        totals[kind][1] += cents
    got = {s: v[0] for s, v in totals.items()}
    if got != {"matched": len(charges) - n_none, "duplicate_charge": n_dup, "refund": n_ref,
               "no_report": n_none}:
        raise GenerationError(f"seed {ctx.seed}: planted lines did not come out ({got})")
    summary = [[s, str(v[0]), format_cents(v[1])] for s, v in totals.items()]
    summary.append(["total", str(len(lines)), format_cents(sum(v[1] for v in totals.values()))])
    return {
        "workspace/card_statement.csv": csv_bytes(
            ["txn_id", "trans_date", "post_date", "card_member", "card_last4",
             "merchant_descriptor", "amount"], statement_rows),
        "workspace/expense_reports.csv": csv_bytes(
            ["report_id", "line_id", "employee", "expense_date", "merchant", "amount",
             "paid_with"], report_rows),
        "reference/card_recon.csv": csv_bytes(
            ["txn_id", "employee", "trans_date", "amount", "status", "report_line"], recon),
        "reference/summary.csv": csv_bytes(["status", "lines", "amount"], summary),
    }

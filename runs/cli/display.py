"""Rich tables of the books for the terminal."""

from __future__ import annotations

from datetime import date
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from erp import queries as q
from erp.money import display_cents
from erp.store import EventStore


def _money(cents: int) -> str:
    return display_cents(cents) if cents else ""


def trial_balance_table(store: EventStore, *, as_of: date | None = None) -> Table:
    """The trial balance as a rich table, with totals."""
    title = "Trial balance" + (f" as of {as_of.isoformat()}" if as_of else "")
    t = Table(title=title, title_justify="left")
    t.add_column("Account")
    t.add_column("Name")
    t.add_column("Debit", justify="right")
    t.add_column("Credit", justify="right")
    rows = q.trial_balance(store, as_of=as_of)
    for r in rows:
        t.add_row(r.account, r.name, _money(r.debit), _money(r.credit))
    debit, credit = sum(r.debit for r in rows), sum(r.credit for r in rows)
    t.add_section()
    t.add_row("", "Total", display_cents(debit), display_cents(credit), style="bold")
    return t


def aging_table(store: EventStore, ledger: str, *, as_of: date, limit: int = 15) -> Table:
    """An AR or AP aging as a rich table (largest balances first, then a total row)."""
    title = {"ar": "Receivables aging", "ap": "Payables aging"}[ledger]
    t = Table(title=f"{title} as of {as_of.isoformat()}", title_justify="left")
    t.add_column("Party")
    for b in q.AGING_BUCKETS:
        t.add_column(b.replace("_", " "), justify="right")
    t.add_column("Total", justify="right")
    rows = sorted(q.aging(store, ledger, as_of=as_of), key=lambda r: (-r.total, r.party))
    for r in rows[:limit]:
        t.add_row(r.party, *(_money(b) for b in r.buckets), display_cents(r.total))
    if len(rows) > limit:
        t.add_row(f"... {len(rows) - limit} more", *[""] * 6, style="dim")
    totals = [sum(r.buckets[i] for r in rows) for i in range(5)]
    t.add_section()
    t.add_row("Total", *(display_cents(x) for x in totals), display_cents(sum(totals)),
              style="bold")
    return t


def control_table(store: EventStore, *, as_of: date | None = None) -> Table:
    """Each control account's GL balance against its subledger."""
    t = Table(title="Control accounts", title_justify="left")
    for col, just in (("Account", "left"), ("Name", "left"), ("Subledger", "left"),
                      ("GL", "right"), ("Subledger total", "right"), ("Difference", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for c in q.control_ties(store, as_of=as_of):
        style = None if c.difference == 0 else "bold red"
        t.add_row(c.account, c.name, c.control, display_cents(c.gl_balance),
                  display_cents(c.subledger_total), display_cents(c.difference), style=style)
    return t


def console(min_width: int = 110) -> Console:
    """A console that does not wrap tables into unreadable columns in narrow pipes."""
    return Console(width=max(Console().width, min_width))


def summary_table(summary: dict[str, Any]) -> Table:
    """Where things stand at the end of an attempt."""
    t = Table(title=f"{summary['scenario']} seed {summary['seed']} agent {summary['agent']}",
              title_justify="left")
    t.add_column("Figure")
    t.add_column("Value", justify="right")
    ev = summary["events"]
    t.add_row("events (erp / world)",
              f"{ev['by_realm'].get('erp', 0):,} / {ev['by_realm'].get('world', 0):,}")
    turns = summary["turns"]
    undone = sum(1 for x in turns if x["status"] != "completed")
    t.add_row("turns (not completed)", f"{len(turns)} ({undone})",
              style="bold red" if undone else None)
    t.add_row("agent commands", str(sum(x["commands"] for x in turns)))
    t.add_row("agent commands refused", str(sum(len(x["rejections"]) for x in turns)))
    tb = summary["trial_balance_total"]
    t.add_row("trial balance debit - credit", tb["difference"])
    for k, v in summary["figures"].items():
        t.add_row(k.replace("_", " "), str(v))
    for c in summary["control_ties"]:
        if c["difference"] != "0.00":
            t.add_row(f"control {c['account']} ({c['control']}) off by", c["difference"],
                      style="bold red")
    for name, d in summary.get("daily_checks", {}).items():
        if d["first_failed"]:
            t.add_row(f"{name} first broke on", f"{d['first_failed']} ({d['failed_dates']} of "
                      f"{d['dates_checked']} dates)", style="yellow")
    return t


def verdict_lines(verdict: dict[str, Any], *, all_results: bool = False) -> list[str]:
    """The verdict in a few lines: outcome, failed checks with details, grader errors."""
    status = verdict["status"]
    colour = {"accepted": "green", "rejected": "bold red"}.get(status, "bold yellow")
    lines = [f"verdict: [{colour}]{status}[/] ({verdict['required_passed']}/"
             f"{verdict['required_total']} required checks passed)"]
    for r in verdict["results"]:
        if r["passed"] and not all_results:
            continue
        mark = "pass" if r["passed"] else ("FAIL" if r["required"] else "fail (optional)")
        detail = r["detail"].replace("\n", " ")
        if len(detail) > 300:
            detail = detail[:297] + "..."
        lines.append(f"  {mark:<16} {escape(r['name'])}"
                     + (f": {escape(detail)}" if detail else ""))
    for g in verdict["grader_errors"]:
        lines.append(f"  [bold yellow]GRADER ERROR[/] {escape(g['check'])}: "
                     f"{escape(g['error'])}")
    return lines


def reconciliation_tables(rec: Any, *, max_items: int = 25) -> list[Table]:
    """The reconciliation: one summary table, then each account's unexplained items
    (grouped by party) and its explained items, largest first."""
    title = "Control accounts reconciled" + (f" as of {rec.day.isoformat()}" if rec.day else "")
    t = Table(title=title, title_justify="left")
    for col, just in (("Account", "left"), ("Name", "left"), ("GL", "right"),
                      ("Subledger", "right"), ("External", "right"), ("Source", "left"),
                      ("GL - sub", "right"), ("Sub - ext", "right"), ("Explained", "right"),
                      ("Unexplained", "right"), ("Ties", "left")):
        t.add_column(col, justify=just, no_wrap=col != "Source")  # type: ignore[arg-type]
    for a in rec.accounts:
        ext = a.external_difference
        t.add_row(a.account, a.name, display_cents(a.gl), display_cents(a.subledger),
                  "" if a.external is None else display_cents(a.external), a.external_source,
                  display_cents(a.gl_difference), "" if ext is None else display_cents(ext),
                  f"{len(a.explained)} ({display_cents(a.explained_total)})",
                  f"{len(a.unexplained)} ({display_cents(a.unexplained_total)})",
                  "yes" if a.ties else "NO", style=None if a.ties else "bold red")
    tables = [t]
    for a in rec.accounts:
        for which, items in (("unexplained", a.unexplained), ("explained", a.explained)):
            if not items:
                continue
            it = Table(title=f"{a.account} {a.name}: {len(items)} {which} item(s)",
                       title_justify="left", title_style="bold red" if which ==
                       "unexplained" else "dim")
            for col, just in (("Party", "left"), ("Kind", "left"), ("Document / line", "left"),
                              ("Books", "right"), ("External", "right"),
                              ("Difference", "right"), ("Note", "left")):
                it.add_column(col, justify=just)  # type: ignore[arg-type]
            ordered = sorted(items, key=lambda i: (i.party or "", -abs(i.difference),
                                                   i.document))
            for i in ordered[:max_items]:
                it.add_row(i.party or "", i.kind, i.document,
                           "" if i.books is None else display_cents(i.books),
                           "" if i.external is None else display_cents(i.external),
                           display_cents(i.difference), escape(i.note))
            if len(items) > max_items:
                it.add_row(f"... {len(items) - max_items} more (all in --csv)", *[""] * 6,
                           style="dim")
            tables.append(it)
    return tables

"""Validation of the instrument: controls over seeds, and mutants of the reference agent.

- :func:`validate_seeds`: ``reference`` and ``oracle`` must be accepted and ``null``
  rejected on every seed (positive and negative controls). A desk task's positive control
  is its solution (``solution/solve``, an external local agent; it has no oracle); a desk
  task with books runs every seed at the task's own seed (its supplied files are that
  company's).
- :func:`validate_mutants`: the reference agent's commands are replayed with one
  mutation at a time. Each operator has a class (:data:`CLASSES`): ``command`` (drop a
  command, submit it twice, aim it at another document of the same or another party,
  move an amount by one cent, submit a command the agent deliberately declined, enter in
  the books an item a turn that entered nothing listed in an output: ``enter_listed``)
  and the policy classes: ``output`` (an output file edited as an agent gets it wrong: a
  row dropped or added, a cell changed, columns swapped, a formula or a script's logic
  broken: :mod:`runs.output_mutants`), ``coding`` (a posting to another account of the
  same type), ``date`` (a later ``due_by``, a date in the previous period, a dated
  command held to the next turn and dated back to its own turn's day: work caught up
  later and backdated, ``late_backdated``), ``amount_limit`` (an amount past its limit),
  ``role`` (the command as another role), ``approval`` (skip a required approval) and
  ``same_amount_doc`` (apply to another document of the same amount). Every mutant the
  checks still accept is a blind spot of the check suite. A mutant that leaves the log
  and the output files as the reference left them (the books refused the mutated
  command, the change made no difference, or the edited file holds the same data) is
  *equivalent*: no check could tell it apart, so it is reported apart and not counted.
  An output operator with no candidate says why (:attr:`MutantReport.reasons`).
"""

from __future__ import annotations

import calendar
import contextlib
import functools
import hashlib
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from erp import commands as c
from erp import queries as q
from erp.commands import Command
from erp.errors import CommandRejected
from erp.events import Role
from erp.handlers import PURCHASE_DISCOUNTS
from runs.attempt import AttemptResult, Recording, run_attempt
from runs.errors import BadInput, ValidationAborted
from runs.output_mutants import (
    OUTPUT_OPS,
    Plan,
    file_edits,
    mentioned_ids,
    same_content,
    same_values,
)
from runs.policy_table import POLICY_FILE, load_policy
from scenarios.loader import LoadedScenario, load_scenario
from scenarios.turn import TurnContext
from sim.rng import MAX_SEED, text_random

CONTROLS = ("reference", "oracle", "null")
EXPECTED = {"reference": True, "oracle": True, "null": False}

CLASSES: dict[str, str] = {
    "drop": "command", "twice": "command", "same_party_doc": "command",
    "other_party_doc": "command", "cent_up": "command", "cent_down": "command",
    "submit_declined": "command", "enter_listed": "command",
    "output_drop_row": "output", "output_change_cell": "output", "output_add_row": "output",
    "output_swap_columns": "output", "output_break_formula": "output",
    "output_break_logic": "output",
    "other_account": "coding",
    "due_by_later": "date", "wrong_period": "date", "late_backdated": "date",
    "exceed_limit": "amount_limit",
    "other_role": "role",
    "skip_approval": "approval",
    "same_amount_doc": "same_amount_doc",
}
"""Every mutation operator and the class of mistake it stands for."""
OPERATORS = tuple(CLASSES)

_DOC_FIELDS = (("invoice_id", "invoice"), ("bill_id", "bill"), ("credit_id", "vendor_credit"),
               ("receipt_id", "receipt"), ("dispute_id", "dispute"), ("po_id", "purchase_order"),
               ("asset_id", "fixed_asset"), ("transfer_id", "transfer_out"),
               ("return_id", "tax_return"))
"""A command's fields naming a document of the books, and its kind: ``same_party_doc`` and
``other_party_doc`` aim the command at another of that kind (the field names the document
only when the books hold one of that kind under its value: a field naming the document a
command makes, or one of another kind, is left alone)."""
_LINE_FIELD = "line_id"
"""A command's field naming a bank statement line (matched, recorded with its fee, its
transfer): aimed at another line of the same bank account not matched yet."""
_PARTY_FIELDS = ("customer_id", "vendor_id")


MAX_SEEDS = 10_000
"""The most seeds one ``--seeds`` may name (a campaign's matrix must fit in memory)."""


def _bounded(seed: int, part: str) -> int:
    if seed > MAX_SEED:
        raise OverflowError(f"--seeds: {part!r} goes beyond the largest seed, {MAX_SEED} "
                            "(2**63 - 1: the results ledger holds seeds as 64-bit integers)")
    return seed


def parse_seeds(text: str) -> list[int]:
    """``0-19``, ``3``, ``1,4,7`` or ``0-4,10`` into a sorted list of distinct seeds.

    At most :data:`MAX_SEEDS` seeds, each at most ``MAX_SEED``; the size of a range is
    checked before it is made.
    """
    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError
                if b - a + 1 + len(seeds) > MAX_SEEDS:
                    raise OverflowError(f"--seeds: {text!r} names more than {MAX_SEEDS:,} "
                                        f"seeds ({part} alone is {b - a + 1:,}; expected at "
                                        f"most {MAX_SEEDS:,}: split the campaign into labels)")
                _bounded(b, part)
                seeds.update(range(a, b + 1))
            else:
                seeds.add(_bounded(int(part), part))
        except OverflowError as e:
            raise ValueError(str(e)) from None
        except ValueError:
            raise ValueError(f"--seeds: {part!r} is not a seed or a range "
                             "(expected e.g. 0-19, 7 or 1,4,7)") from None
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"--seeds: {text!r} names more than {MAX_SEEDS:,} seeds "
                             "(split the campaign into labels)")
    if not seeds:
        raise ValueError("--seeds: no seed given (expected e.g. 0-19)")
    return sorted(seeds)


# --- controls over seeds ----------------------------------------------------------------


@dataclass(frozen=True)
class ControlOutcome:
    """One control attempt: the agent, the seed, its verdict and whether that was expected."""

    seed: int
    agent: str
    status: str
    failed: tuple[str, ...]
    grader_errors: tuple[str, ...]

    @property
    def as_expected(self) -> bool:
        """Reference/oracle accepted, null rejected (a grader error is never as expected)."""
        if self.status == "grader_error":
            return False
        return (self.status == "accepted") == EXPECTED[self.agent]


def _load_any(path: str, tier: str | None = None) -> LoadedScenario:
    """A scenario YAML (at ``tier``, one of its declared tiers), or a desk task's ``task.yaml``."""
    if Path(path).name == "task.yaml":
        from desk.tasks import load_task

        return load_task(Path(path).parent).loaded
    return load_scenario(path, tier=tier)


def is_desk(loaded: LoadedScenario) -> bool:
    """Whether the scenario is a desk task."""
    return loaded.kind == "desk"


def controls_for(loaded: LoadedScenario) -> tuple[str, ...]:
    """The controls a scenario has: a desk task has no oracle (its solution is the one
    positive control)."""
    return ("reference", "null") if is_desk(loaded) else CONTROLS


def control_seed(loaded: LoadedScenario, seed: int) -> int:
    """The seed a control runs at: a desk task with books runs at the task's own seed."""
    if not is_desk(loaded):
        return seed
    from desk.tasks import load_task

    task = load_task(loaded.base_dir)
    return task.seed if task.spec.books is not None else seed


def _agent_for(loaded: LoadedScenario, agent: str) -> Any:
    """The agent object for a control (``None``: a built-in agent by name)."""
    if not is_desk(loaded) or agent == "null":
        return None
    from desk.tasks import load_task
    from runs.execution.external import ExternalAgent

    task = load_task(loaded.base_dir)
    return ExternalAgent(task.solution, mode="local", timeout_s=task.timeout_s,
                         name="solution")


def _control(args: tuple[str, int, str, str, str | None]) -> ControlOutcome:
    path, seed, agent, out, tier = args
    loaded = _load_any(path, tier)
    res = run_attempt(loaded, control_seed(loaded, seed), agent, Path(out), replace=True,
                      agent=_agent_for(loaded, agent))
    v = res.summary["verdict"]
    return ControlOutcome(seed, agent, v["status"], tuple(v["failed"]),
                          tuple(v["grader_errors"]))


def validate_seeds(loaded: LoadedScenario, seeds: list[int], work: Path, *,
                   parallel: int = 1,
                   on_done: Callable[[ControlOutcome], None] | None = None,
                   tier: str | None = None) -> list[ControlOutcome]:
    """Run the controls on every seed; attempts go under ``work/seed-N/AGENT``.

    ``tier``: the difficulty tier each attempt loads the scenario at (its own by default).
    """
    controls = controls_for(loaded)
    tier = tier if tier is not None else loaded.scenario.tier
    jobs = [(str(loaded.path), seed, agent, str(work / f"seed-{seed}" / agent), tier)
            for seed in seeds for agent in controls]
    results: list[ControlOutcome] = []
    for outcome in _map(_control, jobs, parallel):
        results.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return sorted(results, key=lambda o: (o.seed, controls.index(o.agent)))


def _map(fn: Callable[[Any], Any], jobs: list[Any], parallel: int) -> Iterator[Any]:
    if parallel <= 1:
        yield from map(fn, jobs)
        return
    with ProcessPoolExecutor(max_workers=parallel) as pool:
        yield from pool.map(fn, jobs)


# --- mutants -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One change to the reference's recorded commands (or to a file it left)."""

    op: str
    turn: int
    index: int
    command: str
    path: str = ""
    """An output operator's file (relative to ``out/``); ``index`` is then the edit's
    number among that operator's edits of the file (:mod:`runs.output_mutants`)."""
    kind: str = ""
    """An output edit's kind of mistake (``money by a cent``, ``excluded row``...)."""
    site: str = ""
    """Where an output edit lands: a column, a cell, a line."""
    context: str = ""
    """A text edit's line."""

    @property
    def klass(self) -> str:
        """The class of mistake the operator stands for (:data:`CLASSES`)."""
        return CLASSES[self.op]

    def describe(self) -> str:
        """``cent_up turn 3 #12 ApplyReceipt`` or ``output_change_cell turn 6 x.csv #4
        amount (money by a cent)``."""
        if self.path:
            return (f"{self.op} turn {self.turn} {self.path} #{self.index} {self.site} "
                    f"({self.kind})")
        return f"{self.op} turn {self.turn} #{self.index} {self.command}"


_APPROVALS = (c.ApproveBill, c.ApproveVendorBankChange)
_LINE_ACCOUNTS = (c.EnterBill, c.IssueInvoice, c.IssuePurchaseOrder, c.PostJournalEntry,
                  c.PostAccrual)
"""Commands whose lines carry the accounts they post to (``other_account`` recodes one)."""
_ACCOUNT_FIELDS: dict[type[Command], tuple[str, ...]] = {
    c.RecordBankFee: ("account",), c.RecordInterest: ("account",),
    c.GrantFeeAllowance: ("account",), c.WriteOffInvoice: ("account",),
    c.IssueCreditMemo: ("account",), c.RecordVendorCredit: ("account",),
    c.PayBillWithDiscount: ("account",), c.ResolveDispute: ("account",),
    c.RecordCardCharge: ("account",), c.RecordPrepaid: ("expense_account", "account"),
    c.CapitalizeAsset: ("source_account",),
    c.DisposeAsset: ("gain_loss_account", "proceeds_account"),
    c.PostPayroll: ("wage_account", "employer_tax_account", "withholding_account",
                    "employer_tax_payable_account"),
    c.TransferFunds: ("transit_account",), c.RegisterTaxJurisdiction: ("account",),
    c.DefineAssetClass: ("expense_account", "cost_account", "accumulated_account"),
}
"""Commands with GL accounts of their own, the fields ``other_account`` may recode (the
first that is set or defaults to a known account), the coding an agent chooses first."""
_NO_CODING = frozenset({"SetUpCompany", "OpenAccount", "OpenBankAccount",
                        "PostOpeningBalances"})
"""Commands naming accounts that are no coding of a transaction: the chart and the bank
accounts set up, opening balances (``tests/runs/test_other_account_sites.py`` holds every
other command naming an account to :data:`_LINE_ACCOUNTS` or :data:`_ACCOUNT_FIELDS`)."""
_DEFAULT_ACCOUNT = {"EnterBill": "expense", "IssuePurchaseOrder": "expense",
                    "RecordBankFee": "bank_fees",
                    "RecordInterest": "interest_income", "GrantFeeAllowance": "card_fees",
                    "WriteOffInvoice": "bad_debt", "IssueCreditMemo": "sales_returns",
                    "RecordVendorCredit": "expense", "IssueInvoice": "revenue",
                    "ResolveDispute": "sales_returns"}
_DEFAULT_CODE = {"PayBillWithDiscount": PURCHASE_DISCOUNTS}
"""A command's default account that is not one of the company's accounts (the discount
of ``pay-with-discount``)."""


def _shift_month(day: date, months: int) -> date:
    y, m = divmod(day.year * 12 + day.month - 1 + months, 12)
    return date(y, m + 1, min(day.day, calendar.monthrange(y, m + 1)[1]))


_DATE_FIELDS = ("entry_date", "order_date")
"""The fields dating a command as it happened (a purchase order's is its order date)."""


def _date_field(cmd: Command) -> str | None:
    return next((f for f in _DATE_FIELDS if f in type(cmd).model_fields), None)


def _dated(cmd: Command) -> bool:
    f = _date_field(cmd)
    return f is not None and isinstance(getattr(cmd, f), date)


class ReplayAgent:
    """Replays recorded commands per turn (with at most one mutation) and the turn's files."""

    name = "replay"

    def __init__(self, recording: Recording, outputs: Path, mutation: Mutation | None) -> None:
        self.recording = recording
        self.outputs = outputs
        self.mutation = mutation
        self.applied: str | None = None
        self.held: tuple[Command, date] | None = None
        """``late_backdated``: the command held back and the day of its own turn."""
        self.output_same = False
        """The output mutation left the file's data as it was (only its bytes changed)."""

    def run_turn(self, desk: TurnContext) -> None:
        """Submit the turn's commands (one mutated) and leave the turn's recorded files."""
        m = self.mutation
        if m is not None and m.op == "submit_declined" and m.turn == desk.turn:
            cmd, why = self.recording.declined[desk.turn][m.index]
            self.applied = f"submitted a declined {type(cmd).__name__} ({why})"
            desk.execute(cmd)
        if m is not None and m.op == "enter_listed" and m.turn == desk.turn:
            item = [x for t, x in listed_entries(self.outputs, self.recording)
                    if t == desk.turn][m.index]
            entered, self.applied = _entered(item, desk.day)
            if entered is not None:
                desk.execute(entered)
        if m is not None and m.op == "late_backdated" and self.held is not None:
            late, day = self.held
            self.held = None
            f = _date_field(late) or "entry_date"
            dated = late.model_copy(update={f: getattr(late, f) or day})
            self.applied = (f"held from turn {m.turn} ({day}) to turn {desk.turn} ({desk.day}),"
                            f" dated {getattr(dated, f)}")
            desk.execute(dated)
        for i, cmd in enumerate(self.recording.commands.get(desk.turn, [])):
            if (m is None or m.op in ("submit_declined", "enter_listed") or m.path
                    or m.turn != desk.turn or m.index != i):
                desk.execute(cmd)
                continue
            if m.op == "late_backdated":
                self.held = (cmd, desk.day)
                continue
            if m.op == "other_role":
                other: Role = "controller" if desk.role == "clerk" else "clerk"
                self.applied = f"submitted as {other} (the turn is {desk.role})"
                with contextlib.suppress(CommandRejected):
                    desk.ledger.execute(cmd, actor=desk.actor, role=other,
                                        business_date=desk.day, sim_time=desk.sim_time)
                continue
            for mutated in self._mutate(cmd, desk):
                desk.execute(mutated)
        src = self.outputs / f"{desk.turn:02d}" / "outputs"
        if src.is_dir():
            shutil.copytree(src, desk.output_dir, dirs_exist_ok=True)
        if m is not None and m.path and m.turn == desk.turn:
            self.applied, self.output_same = _mutate_output(m, self.outputs,
                                                            desk.output_dir / m.path)

    def _mutate(self, cmd: Command, desk: TurnContext) -> list[Command]:
        op = self.mutation.op if self.mutation else ""
        if op in ("drop", "skip_approval"):
            self.applied = "dropped" if op == "drop" else f"{type(cmd).__name__} skipped"
            return []
        if op == "twice":
            self.applied = "submitted twice"
            return [cmd, cmd]
        if op in ("cent_up", "cent_down"):
            shifted = cent_shift(cmd, 1 if op == "cent_up" else -1)
            if shifted is None:
                self.applied = "no amount to move by a cent: submitted unchanged"
                return [cmd]
            mutated, self.applied = shifted
            return [mutated]
        if op in ("same_party_doc", "other_party_doc"):
            other = _retarget(cmd, desk, same=op == "same_party_doc")
            if other is None:
                self.applied = "no other document to aim at: submitted unchanged"
                return [cmd]
            f, value = other
            self.applied = f"{f} {getattr(cmd, f)} -> {value}"
            return [cmd.model_copy(update={f: value})]
        if op == "same_amount_doc":
            twin = _same_amount_doc(cmd, desk)
            if twin is None:
                self.applied = "no other document of the same amount: submitted unchanged"
                return [cmd]
            f, value = twin
            self.applied = f"{f} {getattr(cmd, f)} -> {value} (same amount)"
            return [cmd.model_copy(update={f: value})]
        if op == "other_account":
            mutated, what = _other_account(cmd, desk)
            self.applied = what
            return [mutated]
        if op == "due_by_later":
            assert isinstance(cmd, c.RunPayments)
            later = (cmd.due_by or cmd.entry_date or desk.day) + timedelta(days=21)
            self.applied = f"due_by {cmd.due_by or cmd.bill_ids} -> {later}"
            return [cmd.model_copy(update={"due_by": later, "bill_ids": None})]
        if op == "wrong_period":
            f = _date_field(cmd) or "entry_date"
            day: date = getattr(cmd, f)
            earlier = _shift_month(day, -1)
            self.applied = f"{f} {day} -> {earlier} (the previous period)"
            return [cmd.model_copy(update={f: earlier})]
        if op == "exceed_limit":
            if isinstance(cmd, c.PostJournalEntry):
                lines = tuple(x.model_copy(update={k: v * 10 for k, v in
                                                   (("debit", x.debit), ("credit", x.credit))
                                                   if v is not None}) for x in cmd.lines)
                self.applied = "every line x10"
                return [cmd.model_copy(update={"lines": lines})]
            if isinstance(cmd, c.RunPayments):
                self.applied = "every approved open bill, whatever its due date"
                return [cmd.model_copy(update={"due_by": date(9999, 12, 31), "bill_ids": None})]
            amount: int = cmd.amount  # type: ignore[attr-defined]
            self.applied = f"amount {amount} -> {amount * 10}"
            return [cmd.model_copy(update={"amount": amount * 10})]
        raise ValueError(f"unknown mutation {op!r}")


@dataclass(frozen=True)
class ListedItem:
    """A row of an output CSV naming a vendor's document and its signed amount (a list to
    work from: reconciling items, exceptions), as ``enter_listed`` enters it."""

    file: str
    row: int
    vendor_id: str
    document: str
    amount: int
    """Cents, as the row signs it (an invoice positive, a credit or payment negative)."""


_LISTED_MONEY = re.compile(r"^-?\$?\d[\d,]*\.\d{2}$")
_LISTED_DOC = re.compile(r"^[A-Za-z]{1,6}[-_/]?\d{2,}(?:[-_/][A-Za-z0-9]+)*$")


def listed_items(path: Path, rel: str) -> list[ListedItem]:
    """Every data row of a CSV with a ``vendor_id`` cell, a document (the first other
    id-like cell: ``INV-0042``) and a non-zero money amount (the first cell like
    ``-1234.50``); none when the file is not such a list (a vendor's balances name no
    document)."""
    import csv

    from erp.money import parse_cents

    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    header = [h.strip() for h in rows[0]] if rows else []
    if "vendor_id" not in header:
        return []
    party = header.index("vendor_id")
    out = []
    for n, row in enumerate(rows[1:], start=1):
        cells = [x.strip() for x in row] + [""] * (len(header) - len(row))
        money = [parse_cents(x.replace("$", "").replace(",", ""), what=f"{rel} row {n}")
                 for x in cells if _LISTED_MONEY.match(x) and len(x) < 16]
        docs = [x for k, x in enumerate(cells) if k != party and _LISTED_DOC.match(x)]
        if cells[party] and money and money[0] and docs:
            out.append(ListedItem(rel, n, cells[party], docs[0], money[0]))
    return out


def listed_entries(turns: Path, recording: Recording) -> list[tuple[int, ListedItem]]:
    """Per turn whose reference entered nothing in the books, the vendor documents its
    output CSVs list (:func:`listed_items`), in file and row order:
    ``enter_listed`` enters one (a list to work from, entered in the books instead)."""
    out: list[tuple[int, ListedItem]] = []
    for d in sorted(p for p in turns.glob("*/outputs") if p.is_dir()):
        turn = int(d.parent.name)
        if recording.commands.get(turn):
            continue
        for f in sorted(p for p in d.rglob("*.csv") if p.is_file()):
            out += [(turn, item) for item in listed_items(f, f.relative_to(d).as_posix())]
    return out


def _entered(item: ListedItem, day: date) -> tuple[Command | None, str]:
    """The command entering a listed item on ``day``: a bill for a positive amount, a
    vendor credit for a negative one (None when the row makes no valid command)."""
    from pydantic import ValidationError

    what = f"{item.file} row {item.row} ({item.vendor_id} {item.document})"
    try:
        if item.amount > 0:
            return c.EnterBill(vendor_id=item.vendor_id, vendor_invoice_number=item.document,
                               entry_date=day, lines=(c.BillLineIn(
                                   description=f"{item.document} as listed",
                                   amount=item.amount),)), f"entered {what} as a bill"
        return (c.RecordVendorCredit(vendor_id=item.vendor_id,
                                     vendor_credit_number=item.document, entry_date=day,
                                     amount=-item.amount),
                f"entered {what} as a vendor credit")
    except ValidationError as e:
        return None, f"{what} makes no valid command ({e.error_count()} errors): unchanged"


def _same_amount_doc(cmd: Command, desk: TurnContext) -> tuple[str, str] | None:
    """Another open document of the kind the command names, of the same open amount."""
    for f, kind in _DOC_FIELDS:
        doc_id = getattr(cmd, f, None)
        if doc_id is None or kind == "receipt":
            continue
        doc = q.document(desk.store, kind, doc_id)
        if doc is None:
            continue
        twins = sorted((d for d in q.documents(desk.store, kind)
                        if d["doc_id"] != doc_id and d["open_amount"] == doc["open_amount"]
                        and d["open_amount"] > 0),
                       key=lambda d: (d["party"] != doc["party"], d["doc_id"]))
        if twins:
            return f, twins[0]["doc_id"]
    return None


def _other_account(cmd: Command, desk: TurnContext) -> tuple[Command, str]:
    """The command with one posting on another account of the same type (not a control)."""
    chart = q.chart(desk.store)
    company = desk.ledger.books.require_company()

    def other(code: str) -> str:
        kind = chart[code].account_type
        same = sorted(a for a, x in chart.items()
                      if x.account_type == kind and x.control is None and a != code)
        return same[0] if same else code

    if isinstance(cmd, c.PostJournalEntry | c.PostAccrual):
        for n, x in enumerate(cmd.lines):
            if chart[x.account].control is None:
                to = other(x.account)
                moved = list(cmd.lines)
                moved[n] = x.model_copy(update={"account": to})
                return (cmd.model_copy(update={"lines": tuple(moved)}),
                        f"lines[{n}].account {x.account} -> {to}")
        return cmd, "no line off a control account: submitted unchanged"
    if isinstance(cmd, c.EnterBill | c.IssueInvoice | c.IssuePurchaseOrder):
        first = cmd.lines[0]
        code = first.account or getattr(company.accounts,
                                        _DEFAULT_ACCOUNT[type(cmd).__name__])
        to = other(code)
        recoded = (first.model_copy(update={"account": to}), *cmd.lines[1:])
        return cmd.model_copy(update={"lines": recoded}), f"lines[0].account {code} -> {to}"
    site = _account_site(cmd)
    if site is None:
        return cmd, "no account to recode: submitted unchanged"
    attr, default = site
    code = (getattr(cmd, attr, None) or _DEFAULT_CODE.get(type(cmd).__name__)
            or getattr(company.accounts, default or "", None))
    if code is None or code not in chart:
        return cmd, f"{attr} names no account of the chart: submitted unchanged"
    to = other(code)
    return cmd.model_copy(update={attr: to}), f"{attr} {code} -> {to}"


def cent_shift(cmd: Command, delta: int) -> tuple[Command, str] | None:
    """The command with one money figure moved by ``delta`` cents (``cent_up``/
    ``cent_down``), kept whole so that the books take it as they took the original: its
    ``amount`` or a disposal's ``proceeds``; a bill's or a statement import's first line;
    the first line's unit price of an invoice, a purchase order or a matched bill; a journal
    entry's or an accrual's first debit and first credit together (still balanced); a
    payroll register's first row's gross and net together, and its totals when given (the
    register still ties). None when there is none, or it would reach zero."""

    def moved(value: int) -> int | None:
        to = value + delta  # on the same side of zero (a statement line may be negative)
        return to if (value > 0 and to >= 1) or (value < 0 and to <= -1) else None

    for attr in ("amount", "proceeds"):
        value = getattr(cmd, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            to = moved(value)
            return None if to is None else (cmd.model_copy(update={attr: to}),
                                            f"{attr} {value} -> {to}")
    lines = getattr(cmd, "lines", None)
    if not lines:
        return None
    if isinstance(cmd, c.PostJournalEntry | c.PostAccrual):
        debit = next((n for n, x in enumerate(lines) if x.debit), None)
        credit = next((n for n, x in enumerate(lines) if x.credit), None)
        if debit is None or credit is None:
            return None
        d, k = moved(lines[debit].debit), moved(lines[credit].credit)
        if d is None or k is None:
            return None
        new = list(lines)
        new[debit] = lines[debit].model_copy(update={"debit": d})
        new[credit] = lines[credit].model_copy(update={"credit": k})
        return (cmd.model_copy(update={"lines": tuple(new)}),
                f"lines[{debit}].debit {lines[debit].debit} -> {d}, lines[{credit}].credit "
                f"{lines[credit].credit} -> {k}")
    if isinstance(cmd, c.PostPayroll):
        first = lines[0]
        gross, net = moved(first.gross), moved(first.net)
        if gross is None or net is None:
            return None
        update: dict[str, Any] = {"lines": (first.model_copy(update={"gross": gross, "net": net}),
                                            *lines[1:])}
        for total in ("gross_total", "net_total"):
            if getattr(cmd, total) is not None:
                update[total] = getattr(cmd, total) + delta
        return (cmd.model_copy(update=update),
                f"lines[0].gross {first.gross} -> {gross}, net {first.net} -> {net}")
    for attr in ("amount", "unit_price"):
        value = getattr(lines[0], attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            to = moved(value)
            if to is None:
                return None
            return (cmd.model_copy(update={"lines": (lines[0].model_copy(update={attr: to}),
                                                     *lines[1:])}),
                    f"lines[0].{attr} {value} -> {to}")
    return None


def _account_site(cmd: Command) -> tuple[str, str | None] | None:
    """The field of a command's own accounts ``other_account`` recodes and the company
    account it defaults to (None: a command of lines, or none it can recode). A credit
    memo's account only when the dispute is resolved by one."""
    if isinstance(cmd, c.ResolveDispute) and cmd.resolution != "credit_memo":
        return None
    name = type(cmd).__name__
    defaulted = name in _DEFAULT_CODE or name in _DEFAULT_ACCOUNT  # an unset field too
    for attr in _ACCOUNT_FIELDS.get(type(cmd), ()):
        if defaulted or getattr(cmd, attr, None):
            return attr, _DEFAULT_ACCOUNT.get(name)
    return None


def _recodable(cmd: Command) -> bool:
    """Whether ``other_account`` has an account of this command to recode."""
    if isinstance(cmd, _LINE_ACCOUNTS):
        return True
    return _account_site(cmd) is not None


def _mutate_output(m: Mutation, turns: Path, target: Path) -> tuple[str, bool]:
    """Apply an output mutation to ``target`` (the replay's copy of the file): the edit is
    planned on the reference's recorded file of that turn, as :func:`_candidates` planned
    it. Returns what changed and whether the result holds the same data as the original
    (an equivalent mutant)."""
    src = turns / f"{m.turn:02d}" / "outputs" / m.path
    if not src.is_file() or not target.is_file():
        return f"{m.path} not written in turn {m.turn}: unchanged", True
    plan, why = _plan_turn(turns, m.turn).get(m.path, ({}, {}))
    edits = plan.get(m.op, [])
    if m.index >= len(edits):
        return f"{m.path}: no edit #{m.index} of {m.op} ({why.get(m.op, 'none planned')})", True
    edit = edits[m.index]
    before = src.read_bytes()
    after = edit.apply(before)
    target.write_bytes(after)
    same = same_content(target, before, after)
    if not same and edit.kind == "formula pointing at the wrong cell":
        same = same_values(before, after)
    return f"{m.path}: {edit.what}" + (" (every formula computes what it did)" if same and
                                       before != after else ""), same


def _plan_turn(turns: Path, turn: int) -> dict[str, Plan]:
    """Every output file a turn wrote -> its edits per operator and the reasons for none
    (inputs: that turn's workspace; ids stated anywhere in the turn's outputs)."""
    key = (str(turns), turn)
    if key not in _PLANS:
        d = turns / f"{turn:02d}" / "outputs"
        files = sorted(p for p in d.rglob("*") if p.is_file()) if d.is_dir() else []
        seen = mentioned_ids(files)
        ws = turns / f"{turn:02d}" / "workspace"
        prompt = ws / "prompt.md"
        text = prompt.read_text(encoding="utf-8", errors="replace") if prompt.is_file() else ""
        _PLANS[key] = {f.relative_to(d).as_posix(): file_edits(f, workspace=ws, mentioned=seen,
                                                               prompt=text)
                       for f in files}
        if len(_PLANS) > 64:
            _PLANS.pop(next(iter(_PLANS)))
    return _PLANS[key]


_PLANS: dict[tuple[str, int], dict[str, Plan]] = {}


def _output_files(turns: Path) -> dict[str, int]:
    """Each output file the reference left -> the last turn that wrote it."""
    out: dict[str, int] = {}
    for d in sorted(p for p in turns.glob("*/outputs") if p.is_dir()):
        for f in sorted(p for p in d.rglob("*") if p.is_file()):
            out[f.relative_to(d).as_posix()] = int(d.parent.name)
    return out


def output_candidates(turns: Path) -> tuple[dict[str, list[Mutation]], dict[str, str]]:
    """Every output mutation of the reference's files, per operator, and for an operator
    with none, why (each file's reason)."""
    by_op: dict[str, list[Mutation]] = {op: [] for op in OUTPUT_OPS}
    reasons: dict[str, list[str]] = {op: [] for op in OUTPUT_OPS}
    for rel, turn in sorted(_output_files(turns).items()):
        plan, why = _plan_turn(turns, turn)[rel]
        for op in OUTPUT_OPS:
            edits = plan.get(op, [])
            by_op[op] += [Mutation(op, turn, i, "", rel, e.kind, e.site, e.context)
                          for i, e in enumerate(edits)]
            if not edits:
                reasons[op].append(f"{rel}: {why.get(op, 'nothing to change')}")
    return by_op, {op: "; ".join(r) or "no output file" for op, r in reasons.items()
                   if not by_op[op]}


def _retarget(cmd: Command, desk: TurnContext, *, same: bool) -> tuple[str, str] | None:
    """Another document (or statement line, or party) for a command, chosen
    deterministically from the books: an open one of the kind, of the same party or not."""
    for f, kind in _DOC_FIELDS:
        doc_id = getattr(cmd, f, None)
        if doc_id is None:
            continue
        doc = q.document(desk.store, kind, doc_id)
        if doc is None:
            continue
        candidates = [d for d in q.documents(desk.store, kind)
                      if d["doc_id"] != doc_id and d["open_amount"] > 0
                      and (d["party"] == doc["party"]) == same]
        if candidates:
            return f, candidates[0]["doc_id"]
    line_id = getattr(cmd, _LINE_FIELD, None)
    if isinstance(line_id, str):
        lines = q.statement_lines(desk.store)
        this = next((x for x in lines if x["line_id"] == line_id), None)
        if this is not None:
            others = [x["line_id"] for x in lines
                      if x["line_id"] != line_id and x["status"] == "unmatched"
                      and x["bank_account_id"] == this["bank_account_id"]
                      and (x["counterparty"] == this["counterparty"]) == same]
            if others:
                return _LINE_FIELD, others[0]
    if same:
        return None
    for f in _PARTY_FIELDS:
        party = getattr(cmd, f, None)
        if party is None:
            continue
        kind = "customer" if f == "customer_id" else "vendor"
        others = sorted({d["party"] for d in q.documents(desk.store)
                         if d["party"] and d["party"] != party
                         and d["kind"] in (("invoice",) if kind == "customer" else ("bill",))})
        if others:
            return f, others[0]
    return None


OPT_IN_OPERATORS = frozenset({"late_backdated"})
"""Operators whose mistake breaks a rule only where the scenario makes one of it: work held
to the next turn and dated back (``late_backdated``) is a mistake where a rule asks for the
work at its own run or turn (collections' receipts, three-way-match's receiving reports),
not where the prompt only asks for it to be done. :func:`validate_mutants` draws them
for a scenario whose ``policy.yaml`` names them in a rule (:func:`opted_in`)."""


def opted_in(loaded: LoadedScenario) -> frozenset[str]:
    """The :data:`OPT_IN_OPERATORS` the scenario's ``policy.yaml`` names in its rules (none
    without one; a table that cannot be read names none here, and ``--policy`` reports
    it)."""
    if not (loaded.base_dir / POLICY_FILE).is_file():
        return frozenset()
    try:
        table = load_policy(loaded.base_dir)
    except (OSError, BadInput):
        return frozenset()
    return OPT_IN_OPERATORS & {op for rule in table.rules for op in rule.mutants}


def _candidates(recording: Recording, turns: Path | None = None,
                opt_in: frozenset[str] = OPT_IN_OPERATORS) -> dict[str, list[Mutation]]:
    """Every mutation of the recorded commands and output files, by operator (those of
    :data:`OPT_IN_OPERATORS` only when in ``opt_in``)."""
    by_op: dict[str, list[Mutation]] = {op: [] for op in OPERATORS
                                        if op not in OPT_IN_OPERATORS or op in opt_in}
    # the turns that came after another (``late_backdated`` holds a command to the next)
    later_turns = ({int(p.name) for p in turns.iterdir() if p.name.isdigit()}
                   if turns is not None and turns.is_dir() else set(recording.commands))
    for turn in sorted(recording.commands):
        for i, cmd in enumerate(recording.commands[turn]):
            name = type(cmd).__name__

            def add(op: str, turn: int = turn, i: int = i, name: str = name) -> None:
                by_op[op].append(Mutation(op, turn, i, name))

            add("drop")
            add("twice")
            add("other_role")
            if cent_shift(cmd, 1) is not None:
                add("cent_up")
            if cent_shift(cmd, -1) is not None:
                add("cent_down")
            if isinstance(getattr(cmd, "amount", None), int):
                add("exceed_limit")
            names_line = isinstance(getattr(cmd, _LINE_FIELD, None), str)
            if any(getattr(cmd, f, None) for f, _ in _DOC_FIELDS) or names_line:
                add("same_party_doc")
            if any(getattr(cmd, f, None) for f, kind in _DOC_FIELDS if kind != "receipt"):
                add("same_amount_doc")
            if any(getattr(cmd, f, None) for f, _ in _DOC_FIELDS) or names_line or any(
                    getattr(cmd, f, None) for f in _PARTY_FIELDS):
                add("other_party_doc")
            if _recodable(cmd):
                add("other_account")
            if isinstance(cmd, c.RunPayments):
                add("due_by_later")
                add("exceed_limit")
            if isinstance(cmd, c.PostJournalEntry):
                add("exceed_limit")
            if _dated(cmd):
                add("wrong_period")
            if ("late_backdated" in by_op and _date_field(cmd) is not None
                    and turn + 1 in later_turns):
                add("late_backdated")
            if isinstance(cmd, _APPROVALS):
                add("skip_approval")
    for turn in sorted(recording.declined):
        for j, (cmd, _) in enumerate(recording.declined[turn]):
            by_op["submit_declined"].append(
                Mutation("submit_declined", turn, j, type(cmd).__name__))
    if turns is not None:
        for op, muts in output_candidates(turns)[0].items():
            by_op[op] += muts
        per_turn: dict[int, int] = {}
        for turn, item in listed_entries(turns, recording):
            n = per_turn[turn] = per_turn.get(turn, -1) + 1
            by_op["enter_listed"].append(Mutation(
                "enter_listed", turn, n, "EnterBill" if item.amount > 0
                else "RecordVendorCredit", kind="listed item entered",
                site=f"{item.file} row {item.row}"))
    return by_op


def _spread(shuffled: list[Mutation], n: int) -> list[Mutation]:
    """The first ``n`` of a shuffled list taken round-robin over the commands (or the files
    and kinds of edit) they mutate, so that a rare command (a declined bank-detail request
    among declined bills) or edit is drawn before a second of a common one."""
    groups: dict[str, list[Mutation]] = {}
    for m in shuffled:
        groups.setdefault(m.command or f"{m.path} {m.kind}", []).append(m)
    out: list[Mutation] = []
    while len(out) < n:
        for g in groups.values():
            if g and len(out) < n:
                out.append(g.pop(0))
    return out


def sample_mutations(recording: Recording, *, per_operator: int, seed: int,
                     turns: Path | None = None,
                     opt_in: frozenset[str] = OPT_IN_OPERATORS) -> list[Mutation]:
    """Up to ``per_operator`` mutations of each operator, drawn by a sha256-derived seed
    (the :data:`OPT_IN_OPERATORS` only when in ``opt_in``)."""
    out: list[Mutation] = []
    for op, cands in _candidates(recording, turns, opt_in).items():
        rng = text_random(f"mutants:{seed}:{op}")
        pick = cands if len(cands) <= per_operator else _spread(
            rng.sample(cands, len(cands)), per_operator)
        out.extend(sorted(pick, key=lambda m: (m.turn, m.index, m.path)))
    return out


@dataclass(frozen=True)
class MutantOutcome:
    """What became of one mutant."""

    mutation: Mutation
    change: str
    status: str
    equivalent: bool
    failed: tuple[str, ...]
    seed: int = 0

    @property
    def caught(self) -> bool:
        """The checks rejected it (or could not grade it)."""
        return self.status != "accepted"


@dataclass
class MutantReport:
    """The reference run and every mutant's outcome."""

    reference: AttemptResult
    outcomes: list[MutantOutcome]
    candidates: int
    candidates_by_op: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    """An output operator with no candidate -> why (each output file's reason)."""

    @property
    def counted(self) -> list[MutantOutcome]:
        """Mutants that changed the log or an output (equivalent ones cannot be caught)."""
        return [o for o in self.outcomes if not o.equivalent]

    @property
    def survivors(self) -> list[MutantOutcome]:
        """Counted mutants the checks still accept: the suite's blind spots."""
        return [o for o in self.counted if not o.caught]


def _outputs_digest(verdict_outputs: dict[str, str]) -> str:
    return hashlib.sha256(repr(sorted(verdict_outputs.items())).encode()).hexdigest()


def _run_mutant(loaded: LoadedScenario, seed: int, recording: Recording, ref: AttemptResult,
                m: Mutation, work: Path) -> MutantOutcome:
    agent = ReplayAgent(recording, ref.out / "turns", m)
    out = work / f"{m.op}-t{m.turn}-{m.index}-{hashlib.sha256(m.path.encode()).hexdigest()[:6]}"
    res = run_attempt(loaded, seed, "replay", out, agent=agent, replace=True)
    v = res.summary["verdict"]
    same = (res.final_hash == ref.final_hash
            and (_outputs_of(res) == _outputs_of(ref) or agent.output_same))
    outcome = MutantOutcome(m, agent.applied or "not reached", v["status"], same,
                            tuple(v["failed"]), seed)
    shutil.rmtree(out, ignore_errors=True)
    return outcome


def _outputs_of(res: AttemptResult) -> dict[str, str]:
    import json

    verdict = json.loads((res.out / "verdict.json").read_text(encoding="utf-8"))
    return dict(verdict.get("outputs") or {})


def recording_from_log(res: AttemptResult) -> Recording:
    """The commands an external agent's turns wrote, rebuilt from the log (desk tasks:
    their solutions only post journal entries). Raises :class:`ValidationAborted` for a
    write it cannot rebuild."""
    from erp.store import EventStore

    rec = Recording()
    store = EventStore.open(res.out / "books.db")
    try:
        for e in store.read(realm="erp"):
            if not e.actor.startswith("agent:turn-"):
                continue
            turn = int(e.actor.rsplit("-", 1)[1])
            d = e.data
            if e.type == "journal_entry_posted":
                lines = tuple(c.JournalLineIn(account=x["account"], party=x.get("party"),
                                              memo=x.get("memo", ""),
                                              **({"debit": x["amount"]} if x["amount"] > 0
                                                 else {"credit": -x["amount"]}))
                              for x in d["lines"])
                rec.commands.setdefault(turn, []).append(c.PostJournalEntry(
                    entry_id=d["entry_id"], entry_date=d["entry_date"], memo=d["memo"],
                    lines=lines))
            else:
                raise ValidationAborted(f"the solution's {e.command} ({e.type}) cannot be "
                                        "rebuilt from the log for a replay")
    finally:
        store.close()
    return rec


Witness = tuple[tuple[str, ...], tuple[str, ...]]
"""A policy rule as the mutants see it: its operators and its checks."""


def _witnessed(outcomes: list[MutantOutcome], rule: Witness) -> bool:
    ops, checks = rule
    return any(o.mutation.op in ops and not o.equivalent and o.caught
               and any(x == c or x.startswith(c + "/") for x in o.failed for c in checks)
               for o in outcomes)


def _check_texts(loaded: LoadedScenario, labels: tuple[str, ...]) -> list[str]:
    """Every string a rule's checks are configured with (paths, columns, patterns)."""
    out: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    for i, spec in enumerate(loaded.checks):
        if spec.label(i) in labels:
            walk(spec.model_dump())
    return out


def _aimed(m: Mutation, hints: list[str]) -> int:
    """How squarely an output mutation hits what a rule's checks read: 0 when they name
    files and not its file; 3 when the value or column it changes is one they name or
    match, 2 when a text edit's line says a word they name (``total`` of
    ``total_actual``), 1 when only its file is."""
    import fnmatch

    paths = [h.removeprefix("out/") for h in hints if re.fullmatch(r"[\w./*-]+\.\w+", h)]
    on_file = any(fnmatch.fnmatch(m.path, p) for p in paths)
    if paths and not on_file:
        return 0  # the checks read other files
    value = m.site.split(" ", 1)[-1].strip()
    for h in hints:
        if not value:
            break
        if value == h or (len(value) > 3 and value in h):
            return 3
        with contextlib.suppress(re.error):
            if len(h) > 3 and re.search(h, value):
                return 3
    words = {w for h in hints for w in re.findall(r"[a-z]{4,}", h.lower())} - {
        "path", "name", "columns", "true", "false"}
    if m.context and any(re.search(rf"\b{w}", m.context.lower()) for w in words):
        return 2
    return int(on_file)


def _mutant_job(args: tuple[str, str | None, int, Recording, AttemptResult, Mutation, str]
                ) -> MutantOutcome:
    """:func:`_run_mutant` in a worker process: the scenario loaded there (once a process)."""
    path, tier, seed, recording, ref, m, work = args
    return _run_mutant(_load_kept(path, tier), seed, recording, ref, m, Path(work))


@functools.lru_cache(maxsize=4)
def _load_kept(path: str, tier: str | None) -> LoadedScenario:
    """:func:`_load_any`, kept for the mutants a worker process runs one after another (the
    sequential path runs them all on one loaded scenario too)."""
    return _load_any(path, tier)


def validate_mutants(loaded: LoadedScenario, seed: int, work: Path | None = None, *,
                     per_operator: int = 6,
                     on_done: Callable[[MutantOutcome], None] | None = None,
                     rules: list[Witness] | None = None,
                     parallel: int = 1) -> MutantReport:
    """Record the reference agent, check an unmutated replay reproduces it, run the mutants.

    ``parallel``: the drawn mutants run that many at once in worker processes (each an
    attempt of its own); the outcomes, and ``on_done``'s calls, come in the drawn order
    whatever finishes first, so the report is the same as with one.

    A desk task's reference is its solution (an external agent): its commands are rebuilt
    from the log. Raises :class:`ValidationAborted` when the reference is not accepted or
    the replay diverges (the mutants would then measure nothing).

    ``rules`` (``--policy``): for each rule none of whose drawn mutants its own checks
    caught, up to ``per_operator`` more of its operators' candidates are run, those that
    change a value, column or file the rule's checks name first (a seeded order among
    equals), until one is caught (a rule about one column or one figure is then not left
    to the luck of the draw); they are reported like the others.
    """
    own = work is None
    root = Path(tempfile.mkdtemp(prefix="erpsim-mutants-")) if work is None else work
    seed = control_seed(loaded, seed)
    try:
        recording = Recording()
        external = _agent_for(loaded, "reference")
        ref = run_attempt(loaded, seed, "reference", root / "reference", replace=True,
                          record=None if external is not None else recording, agent=external)
        if ref.summary["verdict"]["status"] != "accepted":
            raise ValidationAborted(f"the reference agent is not accepted on seed {seed} (failed: "
                                    f"{', '.join(ref.summary['verdict']['failed'])}); mutants "
                                    "would measure nothing")
        if external is not None:
            recording = recording_from_log(ref)
        same = run_attempt(loaded, seed, "replay", root / "replay", replace=True,
                           agent=ReplayAgent(recording, ref.out / "turns", None))
        if same.final_hash != ref.final_hash or _outputs_of(same) != _outputs_of(ref):
            raise ValidationAborted("replaying the reference's commands and files does not "
                                    f"reproduce its log and outputs ({same.final_hash[:12]} "
                                    f"vs {ref.final_hash[:12]})")
        turns = ref.out / "turns"
        opt_in = opted_in(loaded)
        mutations = sample_mutations(recording, per_operator=per_operator, seed=seed,
                                     turns=turns, opt_in=opt_in)
        outcomes: list[MutantOutcome] = []

        def keep(outcome: MutantOutcome) -> None:
            outcomes.append(outcome)
            if on_done is not None:
                on_done(outcome)

        if parallel > 1:  # worker processes load the scenario themselves
            jobs = [(str(loaded.path), loaded.scenario.tier, seed, recording, ref, m,
                     str(root / "mutants")) for m in mutations]
            for outcome in _map(_mutant_job, jobs, parallel):
                keep(outcome)
        else:
            for m in mutations:
                keep(_run_mutant(loaded, seed, recording, ref, m, root / "mutants"))
        cands = _candidates(recording, turns, opt_in)
        done = set(mutations)
        for n, rule in enumerate(rules or []):
            pool = [m for op in rule[0] for m in cands.get(op, []) if m not in done]
            rng = text_random(f"mutants:{seed}:witness:{n}")
            hints = _check_texts(loaded, rule[1])
            shuffled = sorted(rng.sample(pool, len(pool)), key=lambda m: -_aimed(m, hints))
            for m in shuffled[:per_operator]:
                if _witnessed(outcomes, rule):
                    break
                done.add(m)
                keep(_run_mutant(loaded, seed, recording, ref, m, root / "mutants"))
        return MutantReport(ref, outcomes, sum(len(v) for v in cands.values()),
                            {op: len(v) for op, v in cands.items()},
                            output_candidates(turns)[1])
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)


def per_class(outcomes: list[MutantOutcome]) -> dict[str, dict[str, int]]:
    """Per class of mistake: mutants drawn, equivalent, counted, caught."""
    out: dict[str, dict[str, int]] = {}
    for k in dict.fromkeys(CLASSES.values()):
        out[k] = {"drawn": 0, "equivalent": 0, "counted": 0, "caught": 0}
    for o in outcomes:
        row = out[o.mutation.klass]
        row["drawn"] += 1
        if o.equivalent:
            row["equivalent"] += 1
        else:
            row["counted"] += 1
            row["caught"] += int(o.caught)
    return out

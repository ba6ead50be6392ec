"""Run a library scenario's reference solver as an external agent, over the ERP API only.

    reference-api --workspace W --prompt-file P --output-dir O

``ERPSIM_SOLVER`` (in the turn's environment: ``--agent-env``) names the solver file,
``scenarios/library/<name>/solver.py``; its ``reference(desk)`` is run once per turn in
this process. The desk it gets (:class:`ApiDesk`) is TurnContext-compatible and holds
nothing but the workspace and an HTTP client of the API (``ERPSIM_API``,
``ERPSIM_TOKEN``): every read the solver makes (``q.documents``, ``q.statement_lines``,
``desk.store.read(...)``, ``desk.ledger.books.bills``...) is answered by API requests
made with the turn's token, and every command is a ``POST /v1/commands/<name>``, run by
the server with the token's actor, role, business date and turn moment. There is no
ledger, store or world in this process. A read the adapter does not answer raises
:class:`NotOverTheApi` naming it (the turn crashes, saying what is missing).

``books`` is read when the solver asks for a part of it, so it is the live books as in
process; an answer is kept until the solver's next command (nothing else writes during a
turn), and when a document was created (the order of the books' dicts) is read once.

The parts of the books the library's solvers read are rebuilt from existing routes:
policies (``/v1/company``), customers, invoices and receipts (each receipt with the
statement line it is matched to, whether it came back and what was refunded of it), the
collections part (dunning letters, disputes, promises to pay with the balance they were
made against, credit holds; ``promise_pending`` is the books' own rule on them), bank
accounts, transfers between them (``transfer_out``/``transfer_in`` documents),
purchasing (purchase orders and their lines, goods receipts, bill holds), accruals and
prepaid schedules, journal entries, the fixed-asset register, payroll registers and tax
returns. A document's ``details`` are the event that created it, so ``store.read`` of
``asset_capitalized``, ``invoice_issued``, ``journal_entry_posted``,
``journal_entry_reversed`` and a receipt's ``receipt_recorded`` is answered from the
documents those events create (money back in cents). Months posted (a prepaid's
amortization, an asset's depreciation) are read from the document's history, dated each
period's last day. What a listing does not show is left unset and said so where it is
built (an invoice's ``written_off`` and ``allowed``, a receipt's ``applied``).

Every solver module loaded in this process has its names for ``erp.queries`` (``q``)
rebound to :class:`ApiQueries`: the one the turn runs, and one it loads through
``scenarios.solvers.load_solver`` (fiscal-year runs month-end-close's); the modules
themselves are loaded unchanged. While the solver runs, importing ``sim``,
``counterparties``, ``checks``, ``desk`` or ``runs`` is refused (:class:`ImportGuard`);
the ones the module imported at load time are listed on stderr.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import scenarios.solvers
from erp import queries as erp_queries
from erp.api.client import Client, find_connection
from erp.api.naming import MONEY_KEYS, PARTY_NAME, REFERENCE_NAME, kebab, money_fields
from erp.books import (
    AccrualState,
    AssetState,
    BankAccountState,
    BillState,
    CollectionsBooks,
    CreditHoldState,
    CustomerState,
    DisputeState,
    HoldState,
    InvoiceState,
    JournalState,
    PrepaidState,
    PromiseState,
    PurchaseOrderLineState,
    PurchaseOrderState,
    ReceiptState,
    TaxReturnState,
    TransferState,
    document_number_key,
)
from erp.commands import COMMANDS, Command
from erp.errors import CommandRejected
from erp.events import (
    EVENT_CLASSES,
    AssetCapitalized,
    HoldReason,
    JournalLine,
    Policies,
    Role,
    SalesTaxReturnFiled,
)
from erp.money import format_cents, parse_cents
from erp.queries import AGING_BUCKETS, AgingRow, PurchaseOrderLineRow
from scenarios.turn import WorkspaceTurn

FAR_FUTURE = "9999-12-31"
"""``as_of`` for reads that in process have no date bound (every line, the current state)."""

WORLD_SIDE = ("sim", "counterparties", "checks", "desk", "runs")
"""Packages the solver may not import while it runs: the world, the graders, the harness."""


class NotOverTheApi(RuntimeError):
    """The solver asked for something the adapter does not answer through the API."""


class ApiFailure(RuntimeError):
    """The API answered a read with an error, or a command with one that is no refusal."""


# --- the wire --------------------------------------------------------------------------------


def _cents(text: Any) -> int | None:
    return None if text is None else parse_cents(str(text))


def _money_to_text(body: Any, spec: dict[str, Any]) -> Any:
    """A dumped command with its money fields as decimal strings (the API refuses numbers)."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for name, sub in spec.items():
        value = out.get(name)
        if value is None:
            continue
        if sub is True:
            out[name] = format_cents(int(value))
        elif sub[1] and isinstance(value, list):
            out[name] = [_money_to_text(x, sub[0]) for x in value]
        else:
            out[name] = _money_to_text(value, sub[0])
    return out


def command_body(command: Command) -> dict[str, Any]:
    """The JSON body of ``POST /v1/commands/<name>`` for a command."""
    spec = money_fields(type(command))
    body: dict[str, Any] = _money_to_text(command.model_dump(mode="json"), spec)
    return body


class Api:
    """JSON reads and command posts with the turn's token.

    A read's answer is kept until the next command: during a turn only this agent writes
    to the books (the world waits for the turn to end), so the same read gives the same
    answer until a command is posted, and the solver's repeated reads of the live books
    (``books.invoices`` in a loop) cost one request each between two commands. The first
    position of a document (the order the books created it in) never changes and is kept
    for the whole turn.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self.requests = 0
        self.answers: dict[tuple[str, tuple[tuple[str, str], ...]], bytes | None] = {}
        """(path, params) -> the 200 answer's body (None: a 404), until the next post."""
        self.created: dict[tuple[str, str], int] = {}
        """(kind, id) -> the position of the event that created the document."""

    def get(self, path: str, **params: Any) -> Any:
        """The JSON of a 200 answer; None for a 404; anything else raises ApiFailure."""
        key = (path, tuple(sorted((k, str(v)) for k, v in params.items()
                                  if v is not None and v is not False)))
        if key not in self.answers:
            self.requests += 1
            status, _, payload = self.client.request("GET", path, params or None)
            if status not in (200, 404):
                raise ApiFailure(f"GET {path} {params}: HTTP {status}: {payload[:300]!r}")
            self.answers[key] = payload if status == 200 else None
        found = self.answers[key]
        return None if found is None else json.loads(found)

    def created_at(self, kind: str, doc_id: str) -> int:
        """The position of the event that created a document (``GET /v1/documents/KIND/ID``:
        its history's first entry)."""
        if (kind, doc_id) not in self.created:
            found = self.get(f"/v1/documents/{kind}/{doc_id}")
            if found is None or not found["history"]:
                raise ApiFailure(f"GET /v1/documents/{kind}/{doc_id}: no such document")
            self.created[(kind, doc_id)] = int(found["history"][0]["position"])
        return self.created[(kind, doc_id)]

    def in_creation_order(self, kind: str, rows: list[dict[str, Any]]
                          ) -> list[dict[str, Any]]:
        """A listing's rows of one kind in the order the books created them (the order of
        the books' dicts in process; listings are ordered by id)."""
        return sorted(rows, key=lambda r: self.created_at(kind, str(r["id"])))

    def items(self, path: str, **params: Any) -> list[dict[str, Any]]:
        """The ``items`` of a listing."""
        found = self.get(path, **params)
        if found is None:
            raise ApiFailure(f"GET {path}: HTTP 404")
        items: list[dict[str, Any]] = found["items"]
        return items

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """``(HTTP status, JSON answer)`` of a command (the answers kept are dropped)."""
        self.requests += 1
        self.answers.clear()
        status, _, payload = self.client.request("POST", path, None, body)
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, {"error": f"http_{status}", "message": payload[:300].decode(
                "utf-8", "replace")}


# --- what a command answered -----------------------------------------------------------------


@dataclass(frozen=True)
class WrittenEvent:
    """An event a command wrote, as the API answers it: its envelope and its id.

    ``data`` holds only the id under the event's stream key (``bill_id``); ``event`` is
    the event's class with only that field set. Anything else of the payload is not in the
    answer, and asking for it raises :class:`NotOverTheApi`.
    """

    position: int
    type: str
    stream: str
    version: int
    id: str

    @property
    def data(self) -> _Known:
        """``{stream key: id}``."""
        cls = EVENT_CLASSES[self.type]
        return _Known({cls.stream_key: self.id}, f"the {self.type} event's data")

    @property
    def event(self) -> Any:
        """The event's class, with only its id set (``model_construct``: no other field)."""
        cls = EVENT_CLASSES[self.type]
        return cls.model_construct(None, **{cls.stream_key: self.id})


class _Known(dict[str, Any]):
    """A dict that names what it is when a key is missing."""

    def __init__(self, values: dict[str, Any], what: str) -> None:
        super().__init__(values)
        self.what = what

    def __missing__(self, key: str) -> Any:
        raise NotOverTheApi(f"{self.what}: {key!r} is not in the API's answer "
                            f"(only {sorted(self)})")


@dataclass(frozen=True)
class ReadEvent:
    """An erp-realm fact rebuilt from an API answer, shaped as ``store.read`` yields it."""

    type: str
    data: dict[str, Any]
    position: int = 0
    """For registrations read with ``after=``: the order the adapter first saw them in."""
    event: Any = None
    """The event, where the API shows all of it (an asset's capitalization)."""

    @property
    def payload(self) -> bytes:
        """The payload as JSON (money in cents)."""
        return json.dumps(dict(self.data), separators=(",", ":")).encode()


REGISTRATIONS = ("bank_account_opened", "customer_registered", "vendor_registered")
"""The event types ``store.read`` answers from the API's registers, one type or several."""


# --- the books, over the API -----------------------------------------------------------------


def _doc(row: dict[str, Any], kind: str, generic: bool) -> dict[str, Any]:
    """A document row of the API as ``erp.queries`` gives it (cents as integers)."""
    party = "party" if generic else PARTY_NAME.get(kind, "party")
    reference = "reference" if generic else REFERENCE_NAME.get(kind, "reference")
    return _Known({"kind": row["kind"], "doc_id": row["id"], "party": row.get(party),
                   "account": row.get("account"), "doc_date": row.get("date"),
                   "due_on": row.get("due_on"), "total": _cents(row.get("total")),
                   "open_amount": _cents(row.get("open_amount")), "status": row.get("status"),
                   "reference": row.get(reference)}, f"document {kind} {row['id']}")


class ApiQueries:
    """The ``erp.queries`` functions the solvers call, each answered by the API."""

    AGING_BUCKETS = AGING_BUCKETS

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"erp.queries.{name} is not answered over the API by the "
                            "reference-api adapter")

    def documents(self, store: Any, kind: str | None = None, status: str | None = None,
                  party: str | None = None, *,
                  changed_after: int | None = None) -> list[dict[str, Any]]:
        """``GET /v1/documents`` (its rows carry no log position: ``changed_after`` must
        be None, and a reader that keeps rows reads them whole)."""
        if changed_after is not None:
            raise NotOverTheApi("q.documents(changed_after=): the API's documents carry no "
                                "log position")
        rows = self.api.items("/v1/documents", kind=kind, status=status, party=party)
        return [_doc(r, r["kind"], True) for r in rows]

    def document(self, store: Any, kind: str, doc_id: str, *, as_of: date | None = None,
                 position: int | None = None) -> dict[str, Any] | None:
        """``GET /v1/documents/KIND/ID`` (its state now; a past state is not served)."""
        if as_of is not None or position is not None:
            raise NotOverTheApi("q.document(as_of=/position=): the API serves a document's "
                                "state now and its history, not a past state")
        row = self.api.get(f"/v1/documents/{kind}/{doc_id}")
        return None if row is None else _doc(row, kind, False)

    def statement_lines(self, store: Any, *, bank_account_id: str | None = None,
                        unmatched: bool = False, as_of: date | None = None,
                        changed_after: int | None = None) -> list[dict[str, Any]]:
        """``GET /v1/bank/lines`` (matched_to back as the books' JSON text; ``changed_after``
        as for :meth:`documents`)."""
        if changed_after is not None:
            raise NotOverTheApi("q.statement_lines(changed_after=): the API's statement "
                                "lines carry no log position")
        rows = self.api.items("/v1/bank/lines", bank_account=bank_account_id,
                              unmatched=unmatched,
                              as_of=as_of.isoformat() if as_of else FAR_FUTURE)
        return [_Known({"line_id": r["line_id"], "bank_account_id": r["bank_account"],
                        "entry_date": r["date"], "amount": _cents(r["amount"]),
                        "description": r["description"], "reference": r["reference"],
                        "counterparty": r["counterparty"], "bank_ref": r["bank_ref"],
                        "status": r["status"],
                        "matched_to": json.dumps(
                            [[t["kind"], t["doc_id"], _cents(t["amount"])]
                             for t in r["matched_to"]], separators=(",", ":"))},
                       f"statement line {r['line_id']}") for r in rows]

    def purchase_order_lines(self, store: Any, *, po_id: str | None = None,
                             vendor_id: str | None = None,
                             position: int | None = None) -> list[PurchaseOrderLineRow]:
        """``GET /v1/purchase-orders/lines``."""
        if position is not None:
            raise NotOverTheApi("q.purchase_order_lines(position=): not served by the API")
        return [PurchaseOrderLineRow(r["po"], r["vendor"], int(r["line"]), r["item"],
                                     r["description"], int(r["ordered"]),
                                     _cents(r["unit_price"]) or 0, r["account"],
                                     int(r["received"]), int(r["billed"]))
                for r in self.api.items("/v1/purchase-orders/lines", po=po_id,
                                        vendor=vendor_id)]

    def account_balance(self, store: Any, account: str, *, as_of: date | None = None,
                        position: int | None = None) -> int:
        """``GET /v1/gl/ACCOUNT``: its closing balance."""
        if position is not None:
            raise NotOverTheApi("q.account_balance(position=): not served by the API")
        found = self.api.get(f"/v1/gl/{account}",
                             as_of=as_of.isoformat() if as_of else FAR_FUTURE)
        if found is None:
            return 0  # an account with no lines in process; the API: unknown account
        return _cents(found["closing_balance"]) or 0

    def aging(self, store: Any, ledger: str, *, as_of: date,
              position: int | None = None) -> list[AgingRow]:
        """``GET /v1/reports/aging``."""
        if position is not None:
            raise NotOverTheApi("q.aging(position=): not served by the API")
        rows = self.api.items("/v1/reports/aging", ledger=ledger, as_of=as_of.isoformat())
        out = []
        for r in rows:
            b = [_cents(r[name]) or 0 for name in AGING_BUCKETS]
            out.append(AgingRow(r["party"], (b[0], b[1], b[2], b[3], b[4])))
        return out


CREATED_AS = {"invoice_issued": "invoice", "journal_entry_posted": "journal",
              "journal_entry_reversed": "journal"}
"""Event types ``store.read`` answers from the documents they create: the document's
``details`` (and tables) are that event's payload."""


def _unrender(value: Any, key: str = "") -> Any:
    """A payload as the API renders it with cents back as integers under money keys."""
    if isinstance(value, dict):
        return {k: _unrender(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_unrender(v, key) for v in value]
    if key in MONEY_KEYS and isinstance(value, str):
        return parse_cents(value)
    return value


def created_events(api: Api, wanted: Sequence[str]) -> list[ReadEvent]:
    """The events of the wanted types that created documents, in log order, each with its
    payload (``payload``: JSON bytes, money in cents) rebuilt from the document."""
    out = []
    for kind in sorted({CREATED_AS[t] for t in wanted}):
        for d in api.items("/v1/documents", kind=kind):
            e = created_event(api.get(f"/v1/documents/{kind}/{d['id']}"), wanted)
            if e is not None:
                out.append(e)
    return sorted(out, key=lambda e: e.position)


def created_event(found: dict[str, Any] | None, wanted: Sequence[str]) -> ReadEvent | None:
    """The event that created a document (``GET /v1/documents/KIND/ID``), when of a wanted
    type: its payload is the document's ``details`` and tables (money back in cents)."""
    if found is None or not found["history"]:
        return None
    t = found["details"].get("event")
    if t not in wanted:
        return None
    names = EVENT_CLASSES[t].model_fields
    data = {"type": t, **_unrender(
        {k: found["details"][k] if k in found["details"] else found[k]
         for k in names if k in found["details"] or k in found})}
    return ReadEvent(t, _Known(data, t), int(found["history"][0]["position"]))


class ApiStore:
    """``desk.store``: the few ``read`` forms the solvers use, answered by the API."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.seen: list[ReadEvent] = []
        """Registrations in the order first read, numbered from 1 (``after=`` reads)."""

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"store.{name}: the adapter has no store (only the API)")

    def _registrations_after(self, after: int, wanted: tuple[str, ...]) -> list[ReadEvent]:
        """Registrations of the wanted types numbered after ``after``: the API's registers
        read again, what they list that was not seen before numbered on (a reader that
        keeps its position sees each registration once, as ``store.read(after=)`` yields)."""
        known = {(e.type, e.data[key]) for e in self.seen
                 for key in ("bank_account_id", "customer_id", "vendor_id") if key in e.data}
        for t in REGISTRATIONS:
            if t not in wanted:
                continue
            for e in self.read(types=[t]):
                key = next(k for k in ("bank_account_id", "customer_id", "vendor_id")
                           if k in e.data)
                if (t, e.data[key]) not in known:
                    self.seen.append(ReadEvent(e.type, e.data, len(self.seen) + 1))
        return [e for e in self.seen if e.position > after and e.type in wanted]

    def read(self, *, realm: str | None = None, types: Sequence[str] | None = None,
             stream: str | None = None, **other: Any) -> Iterator[ReadEvent]:
        """Registered customers and vendors, opened bank accounts (all, or those after a
        position), the events that created invoices, journal entries and fixed assets, a
        receipt's ``receipt_recorded`` and its applications."""
        wanted = tuple(types or ())
        if (set(other) == {"after"} and stream is None and wanted
                and set(wanted) <= set(REGISTRATIONS) and realm in (None, "erp")):
            yield from self._registrations_after(int(other["after"]), wanted)
            return
        if other or realm not in (None, "erp"):
            raise NotOverTheApi(f"store.read({other or f'realm={realm!r}'}): not served")
        if stream is None and wanted == ("customer_registered",):
            for r in self.api.items("/v1/customers"):
                yield ReadEvent("customer_registered", _Known(
                    {"customer_id": r["id"], "name": r["name"]}, "customer_registered"))
        elif stream is None and wanted == ("vendor_registered",):
            for r in self.api.items("/v1/vendors"):
                yield ReadEvent("vendor_registered", _Known(
                    {"vendor_id": r["id"], "name": r["name"]}, "vendor_registered"))
        elif stream is None and wanted == ("bank_account_opened",):
            for r in self.api.items("/v1/bank/accounts"):
                a = self.api.get(f"/v1/bank/accounts/{r['id']}")
                yield ReadEvent("bank_account_opened", _Known(
                    {"bank_account_id": a["id"], "name": a["name"], "number": a["number"],
                     "gl_account": a["gl_account"], "entry_date": a["opened_on"],
                     "opening_balance": _cents(a["opening_balance"]),
                     "equity_account": a["equity_account"]}, "bank_account_opened"))
        elif stream is None and wanted and set(wanted) <= set(CREATED_AS):
            yield from created_events(self.api, wanted)
        elif stream is None and wanted == ("asset_capitalized",):
            for position, found in _assets(self.api):
                e = capitalized_event(found)
                yield ReadEvent("asset_capitalized", _Known(e.model_dump(mode="json"),
                                                            "asset_capitalized"), position, e)
        elif (stream is not None and stream.startswith("receipt:")
              and wanted == ("receipt_recorded",)):
            receipt = stream.removeprefix("receipt:")
            recorded = created_event(self.api.get(f"/v1/documents/receipt/{receipt}"),
                                     wanted)
            if recorded is not None:
                yield recorded
        elif (stream is not None and stream.startswith("receipt:")
              and set(wanted) <= {"receipt_applied", "application_reversed"}):
            receipt = stream.removeprefix("receipt:")
            found = self.api.get(f"/v1/receipts/{receipt}/applications")
            for r in found["items"] if found else []:
                if r["event"] in wanted:
                    yield ReadEvent(r["event"], _Known(
                        {"receipt_id": receipt, "invoice_id": r["invoice_id"],
                         "amount": _cents(r["amount"]), "entry_date": r["date"]}, r["event"]))
        else:
            raise NotOverTheApi(f"store.read(stream={stream!r}, types={list(wanted)}): not "
                                "answered over the API by the reference-api adapter")


@dataclass(frozen=True)
class VendorView:
    """A vendor as ``GET /v1/vendors`` shows it (bank details masked)."""

    vendor_id: str
    name: str
    terms_days: int
    bank: str | None
    invoice_numbers: set[str] = field(default_factory=set)
    """The vendor's invoice numbers entered as bills (``document_number_key``)."""


class ApiPurchasing:
    """``books.purchasing``: orders, goods receipts and bill holds, from the API's documents
    (``GET /v1/purchase-orders/lines``, ``/v1/documents``, a hold's ``details``)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"books.purchasing.{name} is not answered over the API by the "
                            "reference-api adapter")

    @property
    def orders(self) -> dict[str, PurchaseOrderState]:
        """Purchase orders with their lines (ordered, received, billed)."""
        out: dict[str, PurchaseOrderState] = {}
        for d in self.api.items("/v1/documents", kind="purchase_order"):
            out[d["id"]] = PurchaseOrderState(d["id"], d["party"],
                                              date.fromisoformat(d["date"]), {})
        for r in self.api.items("/v1/purchase-orders/lines"):
            out[r["po"]].lines[int(r["line"])] = PurchaseOrderLineState(
                int(r["line"]), r["item"], int(r["ordered"]), _cents(r["unit_price"]) or 0,
                r["account"], int(r["received"]), int(r["billed"]))
        return out

    @property
    def receipts(self) -> set[str]:
        """Goods receipts' ids."""
        return {d["id"] for d in self.api.items("/v1/documents", kind="goods_receipt")}

    def _hold(self, bill_id: str) -> tuple[str, HoldState] | None:
        found = self.api.get(f"/v1/documents/bill_hold/{bill_id}")
        if found is None:
            return None
        reasons = tuple(HoldReason(code=r["code"], line=int(r["line"]), detail=r["detail"])
                        for r in found.get("reasons", []))
        return (str(found["details"]["po_id"]),
                HoldState(bill_id, reasons, released=found["status"] == "released"))

    @property
    def holds(self) -> dict[str, HoldState]:
        """Bills put on hold by the match, with why (each hold document's ``reasons``)."""
        out = {}
        for d in self.api.items("/v1/documents", kind="bill_hold"):
            found = self._hold(d["id"])
            if found is not None:
                out[d["id"]] = found[1]
        return out

    def on_hold(self, bill_id: str) -> HoldState | None:
        """The bill's hold while it stands, else None."""
        found = self._hold(bill_id)
        return found[1] if found is not None and not found[1].released else None

    @property
    def bill_orders(self) -> _Known:
        """Held bill -> its purchase order (a hold names it; a bill that matched without a
        hold does not show its PO over the API)."""
        out = {}
        for d in self.api.items("/v1/documents", kind="bill_hold"):
            found = self._hold(d["id"])
            if found is not None:
                out[d["id"]] = found[0]
        return _Known(out, "books.purchasing.bill_orders (held bills only)")


class ApiAccrualBooks:
    """``books.accrual_books``: accruals and prepaid schedules, from the API's documents
    (``accrual``: reference the period; ``prepaid``: its ``details`` and ``history``)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"books.accrual_books.{name} is not answered over the API by "
                            "the reference-api adapter")

    @property
    def accruals(self) -> dict[str, AccrualState]:
        """Flagged accruals by journal entry."""
        return {d["id"]: AccrualState(d["id"], d["reference"], date.fromisoformat(d["due_on"]),
                                      _cents(d["total"]) or 0)
                for d in self.api.items("/v1/documents", kind="accrual")}

    @property
    def schedules(self) -> dict[str, PrepaidState]:
        """Prepaid schedules with the months posted (a month's amortization is dated its
        period's last day: the period is that date's month)."""
        out = {}
        for d in self.api.items("/v1/documents", kind="prepaid"):
            found = self.api.get(f"/v1/documents/prepaid/{d['id']}")
            if found is None:
                raise ApiFailure(f"GET /v1/documents/prepaid/{d['id']}: HTTP 404")
            x = found["details"]
            posted: dict[str, int] = {}
            before = _cents(found["history"][0]["open_amount"]) or 0
            for h in found["history"][1:]:
                now = _cents(h["open_amount"]) or 0
                if h["event"] == "prepaid_amortized":
                    posted[h["date"][:7]] = posted.get(h["date"][:7], 0) + before - now
                before = now
            out[d["id"]] = PrepaidState(d["id"], x["bill_id"], x["vendor_id"], x["account"],
                                        x["expense_account"], _cents(x["amount"]) or 0,
                                        x["start_period"], int(x["months"]), posted)
        return out


def _assets(api: Api) -> list[tuple[int, dict[str, Any]]]:
    """Each fixed asset's document (details, history), in the order capitalized."""
    out = []
    for d in api.items("/v1/documents", kind="fixed_asset"):
        found = api.get(f"/v1/documents/fixed_asset/{d['id']}")
        if found is None:
            raise ApiFailure(f"GET /v1/documents/fixed_asset/{d['id']}: HTTP 404")
        out.append((int(found["history"][0]["position"]), found))
    return sorted(out, key=lambda x: x[0])


def capitalized_event(found: dict[str, Any]) -> AssetCapitalized:
    """The ``asset_capitalized`` event a fixed asset's document was created with."""
    x = {k: v for k, v in found["details"].items() if k != "event"}
    x["amount"], x["salvage"] = _cents(x["amount"]) or 0, _cents(x["salvage"]) or 0
    return AssetCapitalized.model_validate(x)


class ApiFixedAssets:
    """``books.fixed_assets``: the register from the ``fixed_asset`` documents (what each
    was capitalized with; its history: the months depreciated, dated each period's last
    day, and the disposal)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"books.fixed_assets.{name} is not answered over the API by "
                            "the reference-api adapter")

    @property
    def assets(self) -> dict[str, AssetState]:
        """Assets with the months posted and whether disposed."""
        out = {}
        for _, found in _assets(self.api):
            e = capitalized_event(found)
            a = AssetState(e.asset_id, e.class_id, e.amount, e.salvage, e.life_months,
                           f"{e.in_service_date.year:04d}-{e.in_service_date.month:02d}",
                           e.cost_account, e.accumulated_account, e.expense_account)
            before = _cents(found["history"][0]["open_amount"]) or 0
            for h in found["history"][1:]:
                now = _cents(h["open_amount"]) or 0
                if h["event"] == "asset_depreciated":
                    a.posted[h["date"][:7]] = before - now
                elif h["event"] == "asset_disposed":
                    a.disposed = True
                before = now
            out[a.asset_id] = a
        return out

    @property
    def capitalized(self) -> dict[tuple[str, str, str], int]:
        """(source kind, source id, account) -> the amount capitalized from it."""
        out: dict[tuple[str, str, str], int] = {}
        for _, found in _assets(self.api):
            e = capitalized_event(found)
            key = (e.source_kind, e.source_id, e.source_account)
            out[key] = out.get(key, 0) + e.amount
        return out


class ApiJournal:
    """``books.journal[entry_id]``: a journal entry's lines and whether it was reversed
    (``GET /v1/documents/journal/ID``; its reversal is the entry "reversal of ID")."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getitem__(self, entry_id: str) -> JournalState:
        found = self.api.get(f"/v1/documents/journal/{entry_id}")
        if found is None:
            raise KeyError(entry_id)
        lines = tuple(JournalLine(account=x["account"], amount=_cents(x["amount"]) or 0,
                                  party=x.get("party"), memo=x.get("memo") or "")
                      for x in found.get("lines", []))
        reversed_by = None
        if found["status"] == "reversed":
            reversed_by = next((d["id"] for d in self.api.items("/v1/documents", kind="journal")
                                if d["reference"] == f"reversal of {entry_id}"), None)
        return JournalState(entry_id, lines, reversed_by=reversed_by)


class ApiPayrollTax:
    """``books.payroll_tax``: registers (``GET /v1/payroll-registers``, reversed ones left
    out) and returns (``GET /v1/tax-returns``: jurisdiction, period, tax due, unpaid)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"books.payroll_tax.{name} is not answered over the API by "
                            "the reference-api adapter")

    @property
    def registers(self) -> dict[str, dict[str, Any]]:
        """The registers that stand, by id (their listing rows)."""
        return {r["id"]: r for r in self.api.items("/v1/documents", kind="payroll")
                if r["status"] != "reversed"}

    @property
    def returns(self) -> dict[str, TaxReturnState]:
        """Filed returns: only return_id, jurisdiction_id, period and tax_due are set."""
        out = {}
        for r in self.api.items("/v1/documents", kind="tax_return"):
            due = _cents(r["total"]) or 0
            filed = SalesTaxReturnFiled.model_construct(
                None, return_id=r["id"], jurisdiction_id=r["party"], period=r["reference"],
                tax_due=due)
            out[r["id"]] = TaxReturnState(filed, due - (_cents(r["open_amount"]) or 0))
        return out


class ApiCollections:
    """``books.collections``: letters, disputes, promises to pay and credit holds, from
    their documents (``dunning_letter``: status the level, reference the invoice;
    ``dispute``: status open or the outcome; ``promise``: due_on the date promised, and the
    invoice's open balance when promised in its ``details``; ``credit_hold``: status held
    or released, total the credit limit). Each attribute is read when asked for, so it
    sees the books as they are after the solver's last command, as in process."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"books.collections.{name} is not answered over the API by "
                            "the reference-api adapter")

    def _docs(self, kind: str) -> list[dict[str, Any]]:
        return self.api.in_creation_order(kind, self.api.items("/v1/documents", kind=kind))

    @property
    def levels(self) -> dict[str, int]:
        """Invoice -> the highest level of letter sent for it."""
        out: dict[str, int] = {}
        for d in self._docs("dunning_letter"):
            level = int(str(d["status"]).removeprefix("level_"))
            out[d["reference"]] = max(level, out.get(d["reference"], 0))
        return out

    @property
    def disputes(self) -> dict[str, DisputeState]:
        """Disputes with their outcome (None while open)."""
        return {d["id"]: DisputeState(d["id"], d["reference"], d["party"],
                                      _cents(d["total"]) or 0,
                                      None if d["status"] == "open" else d["status"])
                for d in self._docs("dispute")}

    @property
    def open_disputes(self) -> dict[str, str]:
        """Invoice -> its open dispute."""
        return {d.invoice_id: d.dispute_id for d in self.disputes.values()
                if d.outcome is None}

    @property
    def promises(self) -> dict[str, PromiseState]:
        """Promises to pay (the balance promised against: the promise's ``details``)."""
        out = {}
        for d in self._docs("promise"):
            found = self.api.get(f"/v1/documents/promise/{d['id']}")
            if found is None:
                raise ApiFailure(f"GET /v1/documents/promise/{d['id']}: HTTP 404")
            out[d["id"]] = PromiseState(d["id"], d["reference"], d["party"],
                                        _cents(d["total"]) or 0,
                                        date.fromisoformat(d["due_on"]),
                                        _cents(found["details"]["balance"]) or 0)
        return out

    @property
    def last_promise(self) -> dict[str, str]:
        """Invoice -> its latest promise."""
        return {p.invoice_id: p.promise_id for p in self.promises.values()}

    @property
    def holds(self) -> dict[str, CreditHoldState]:
        """Credit holds, placed and released."""
        return {d["id"]: CreditHoldState(d["id"], d["party"], _cents(d["total"]) or 0,
                                         date.fromisoformat(d["date"]),
                                         released=d["status"] == "released")
                for d in self._docs("credit_hold")}

    @property
    def on_hold(self) -> dict[str, str]:
        """Customer -> its credit hold in force."""
        return {h.customer_id: h.hold_id for h in self.holds.values() if not h.released}

    def promise_pending(self, invoice: InvoiceState, day: date) -> PromiseState | None:
        """The invoice's promise still running on ``day`` (the books' own rule, on the
        promises read from the API)."""
        books = CollectionsBooks()
        books.promises, books.last_promise = self.promises, self.last_promise
        return books.promise_pending(invoice, day)


class ApiBooks:
    """``desk.ledger.books``: each part read when asked for (a read's answer is kept only
    until the solver's next command), so it is the live books as in process."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"books.{name} is not answered over the API by the "
                            "reference-api adapter")

    @property
    def bills(self) -> dict[str, BillState]:
        """``GET /v1/bills``."""
        out = {}
        for r in self.api.items("/v1/bills"):
            out[r["id"]] = BillState(bill_id=r["id"], vendor_id=r["vendor"],
                                     total=_cents(r["total"]) or 0,
                                     open=_cents(r["open_amount"]) or 0,
                                     ap_account=r["account"],
                                     due_on=date.fromisoformat(r["due_on"]),
                                     approved=r["status"] != "entered")
        return out

    @property
    def customers(self) -> dict[str, CustomerState]:
        """``GET /v1/customers``."""
        return {r["id"]: CustomerState(r["id"], r["name"], int(r["terms_days"]),
                                       _cents(r["credit_limit"]), _cents(r["open_ar"]) or 0)
                for r in self.api.items("/v1/customers")}

    @property
    def invoices(self) -> dict[str, InvoiceState]:
        """``GET /v1/documents?kind=invoice``, in the order issued. ``written_off`` and
        ``allowed`` are not set (0): the listing shows only what is left open."""
        return {r["id"]: InvoiceState(r["id"], r["party"], _cents(r["total"]) or 0,
                                      _cents(r["open_amount"]) or 0, r["account"],
                                      date.fromisoformat(r["date"]),
                                      date.fromisoformat(r["due_on"]))
                for r in self.api.in_creation_order(
                    "invoice", self.api.items("/v1/documents", kind="invoice"))}

    @property
    def receipts(self) -> dict[str, ReceiptState]:
        """``GET /v1/receipts`` in the order recorded (unapplied: the open amount), each
        with the statement line it is matched to (``GET /v1/bank/lines``), whether it
        came back (a ``return`` document) and what was refunded of it (``refund``
        documents). ``applied`` is not set (empty): that is the receipt's applications."""
        matched = {t["doc_id"]: x["line_id"]
                   for x in self.api.items("/v1/bank/lines", as_of=FAR_FUTURE)
                   for t in x["matched_to"] if t["kind"] == "receipt"}
        returned = {d["reference"] for d in self.api.items("/v1/documents", kind="return")}
        refunded: dict[str, int] = {}
        for d in self.api.items("/v1/documents", kind="refund"):
            refunded[d["reference"]] = refunded.get(d["reference"], 0) + (
                _cents(d["total"]) or 0)
        return {r["id"]: ReceiptState(r["id"], r["customer"], r["bank_account"],
                                      _cents(r["total"]) or 0, _cents(r["open_amount"]) or 0,
                                      date.fromisoformat(r["date"]),
                                      matched_line=matched.get(r["id"]),
                                      returned=r["id"] in returned,
                                      refunded=refunded.get(r["id"], 0))
                for r in self.api.in_creation_order("receipt", self.api.items("/v1/receipts"))}

    @property
    def collections(self) -> ApiCollections:
        """Dunning letters, disputes, promises to pay, credit holds."""
        return ApiCollections(self.api)

    @property
    def transfers(self) -> dict[str, TransferState]:
        """Transfers between the company's bank accounts, in the order sent: each
        ``transfer_out`` document (reference: the account it left, party: the one it went
        to, account: the transit account), received on its ``transfer_in``'s date."""
        arrived = {d["id"]: date.fromisoformat(d["date"])
                   for d in self.api.items("/v1/documents", kind="transfer_in")}
        return {d["id"]: TransferState(d["id"], d["reference"], d["party"],
                                       _cents(d["total"]) or 0, date.fromisoformat(d["date"]),
                                       d["account"], arrived.get(d["id"]))
                for d in self.api.in_creation_order(
                    "transfer_out", self.api.items("/v1/documents", kind="transfer_out"))}

    @property
    def policies(self) -> Policies:
        """``GET /v1/company``: the policies the books enforce."""
        found = self.api.get("/v1/company")
        if found is None:
            raise ApiFailure("GET /v1/company: HTTP 404 (the company is not set up)")
        return Policies.model_validate(found["policies"])

    @property
    def bank_accounts(self) -> dict[str, BankAccountState]:
        """``GET /v1/bank/accounts``: each with its GL balance (every posting to it)."""
        return {r["id"]: BankAccountState(bank_account_id=r["id"], gl_account=r["gl_account"],
                                          number=r["number"],
                                          balance=_cents(r["gl_balance"]) or 0)
                for r in self.api.items("/v1/bank/accounts", as_of=FAR_FUTURE)}

    @property
    def accrual_books(self) -> ApiAccrualBooks:
        """Accruals and prepaid schedules."""
        return ApiAccrualBooks(self.api)

    @property
    def fixed_assets(self) -> ApiFixedAssets:
        """The fixed-asset register."""
        return ApiFixedAssets(self.api)

    @property
    def journal(self) -> ApiJournal:
        """Journal entries, one at a time."""
        return ApiJournal(self.api)

    @property
    def payroll_tax(self) -> ApiPayrollTax:
        """Posted payroll registers and filed sales-tax returns."""
        return ApiPayrollTax(self.api)

    @property
    def purchasing(self) -> ApiPurchasing:
        """Purchase orders, goods receipts, bill holds."""
        return ApiPurchasing(self.api)

    @property
    def vendors(self) -> dict[str, VendorView]:
        """``GET /v1/vendors``; each vendor's invoice numbers from its bills' references."""
        numbers: dict[str, set[str]] = {}
        for b in self.api.items("/v1/documents", kind="bill"):
            numbers.setdefault(b["party"], set()).add(document_number_key(b["reference"]))
        return {r["id"]: VendorView(r["id"], r["name"], int(r["terms_days"]), r["bank"],
                                    numbers.get(r["id"], set()))
                for r in self.api.items("/v1/vendors")}


class ApiLedger:
    """``desk.ledger``: only ``books``; there is no ledger in this process."""

    def __init__(self, api: Api) -> None:
        self.books = ApiBooks(api)

    def __getattr__(self, name: str) -> Any:
        raise NotOverTheApi(f"ledger.{name}: the adapter has no ledger (only the API)")


@dataclass
class ApiDesk(WorkspaceTurn):
    """A TurnContext for an agent outside the engine: the workspace and the API."""

    api: Api
    turn: int
    day: date
    workspace: Path
    prompt_file: Path
    output_dir: Path
    actor: str
    role: Role
    sim_time: float | None = None
    rejections: list[tuple[str, CommandRejected]] = field(default_factory=list)
    commands: int = 0
    record: list[Command] | None = None
    declined: list[tuple[Command, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.store = ApiStore(self.api)
        self.ledger = ApiLedger(self.api)

    def execute(self, command: Command) -> list[WrittenEvent] | CommandRejected:
        """``POST /v1/commands/<name>``; the books' refusal comes back as a value."""
        self.commands += 1
        name = type(command).__name__
        if COMMANDS.get(name) is not type(command):
            raise ApiFailure(f"{name} is not one of the API's commands")
        status, answer = self.api.post(f"/v1/commands/{kebab(name)}", command_body(command))
        if status == 200:
            return [WrittenEvent(e["position"], e["type"], e["stream"], e["version"], e["id"])
                    for e in answer["events"]]
        if status in (401, 500) or not isinstance(answer, dict) or "error" not in answer:
            raise ApiFailure(f"POST /v1/commands/{kebab(name)}: HTTP {status}: {answer}")
        refused = CommandRejected(str(answer["error"]), str(answer.get("message", "")),
                                  answer.get("field"))
        self.rejections.append((name, refused))
        return refused



# --- keeping the world out --------------------------------------------------------------------


class ImportGuard(importlib.abc.MetaPathFinder):
    """Refuses imports of the world's, the graders' and the harness's packages."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        """Raise ImportError for a refused package; otherwise let the others look."""
        if fullname.split(".")[0] in WORLD_SIDE:
            raise ImportError(f"reference-api: the solver may not import {fullname} (an "
                              "external agent has the workspace and the API only)")
        return None


def world_modules() -> list[str]:
    """The refused packages' modules already imported."""
    return sorted(m for m in sys.modules if m.split(".")[0] in WORLD_SIDE)


# --- the turn -------------------------------------------------------------------------------


def over_api(module: ModuleType, queries: ApiQueries) -> None:
    """Rebind a solver module's names for ``erp.queries`` (its ``q``) to the API's answers."""
    for name, value in list(vars(module).items()):
        if value is erp_queries or isinstance(value, ApiQueries):
            setattr(module, name, queries)


class LoadOverApi:
    """``scenarios.solvers.load_solver`` with the loaded module reading ``erp.queries``
    from the API: the solver this turn runs, and any it loads (fiscal-year loads
    month-end-close's when its turn starts)."""

    def __init__(self, load: Callable[[Path], ModuleType], queries: ApiQueries) -> None:
        self.load = load
        self.queries = queries

    def __call__(self, path: Path) -> ModuleType:
        """Load the solver at ``path`` with its reads going over the API."""
        module = self.load(path)
        over_api(module, self.queries)
        return module


def reads_over_api(queries: ApiQueries) -> LoadOverApi:
    """Install :class:`LoadOverApi` as ``scenarios.solvers.load_solver``; it is returned."""
    load = scenarios.solvers.load_solver
    loader = LoadOverApi(load.load if isinstance(load, LoadOverApi) else load, queries)
    setattr(scenarios.solvers, "load_solver", loader)  # noqa: B010 (typed as a function)
    return loader


def _run(workspace: Path, prompt_file: Path, output_dir: Path, solver: Path) -> int:
    """Run the solver's ``reference`` for this turn; the exit status."""
    os.chdir(workspace)
    conn = find_connection()
    api = Api(Client(*conn))
    who = api.get("/v1/whoami")
    if who is None:
        raise ApiFailure("GET /v1/whoami: HTTP 404")
    actor = str(who["actor"])
    turn = int(actor.rsplit("-", 1)[1]) if actor.startswith("agent:turn-") else 0
    before = set(world_modules())
    queries = ApiQueries(api)
    load = reads_over_api(queries)
    module = load(solver)  # scenarios.solvers: not the loader, which brings the world
    loaded = [m for m in world_modules() if m not in before]
    if loaded:
        print(f"reference-api: the solver module imported {', '.join(loaded)} when it was "
              "loaded (code only: there is no world in this process)", file=sys.stderr)
    if not hasattr(module, "reference"):
        print(f"reference-api: {solver} has no reference(desk)", file=sys.stderr)
        return 2
    desk = ApiDesk(api, turn=turn, day=date.fromisoformat(who["business_date"]),
                   workspace=workspace, prompt_file=prompt_file, output_dir=output_dir,
                   actor=actor, role=who["role"])
    guard = ImportGuard()
    sys.meta_path.insert(0, guard)
    try:
        module.reference(desk)
    finally:
        sys.meta_path.remove(guard)
    print(f"reference-api: turn {turn} as {actor} ({desk.role}) on {desk.day}: "
          f"{desk.commands} commands, {len(desk.rejections)} refused, "
          f"{api.requests} API requests", file=sys.stderr)
    for name, e in desk.rejections:
        print(f"reference-api: refused {name}: {e.code}: {e.message}", file=sys.stderr)
    return 0


PROJECT = Path(__file__).resolve().parents[3]
"""The project root (this file is runs/adapters/reference-api/reference_api.py)."""


def solver_path(text: str) -> Path:
    """A solver named by ``ERPSIM_SOLVER``: a library scenario's name, or a path (a
    relative one from the project root: the adapter runs in the workspace)."""
    if "/" not in text and not text.endswith(".py"):
        return PROJECT / "scenarios" / "library" / text / "solver.py"
    path = Path(text)
    return (path if path.is_absolute() else PROJECT / path).resolve()


def _main(argv: list[str]) -> int:
    """The adapter contract's arguments, and ``ERPSIM_SOLVER``."""
    import argparse

    p = argparse.ArgumentParser(prog="reference-api")
    p.add_argument("--workspace", required=True, type=Path)
    p.add_argument("--prompt-file", required=True, type=Path)
    p.add_argument("--output-dir", required=True, type=Path)
    a = p.parse_args(argv)
    solver = os.environ.get("ERPSIM_SOLVER", "")
    if not solver:
        print("reference-api: ERPSIM_SOLVER is not set (give it in the turn's environment: "
              "--agent-env ERPSIM_SOLVER=scenarios/library/NAME/solver.py)", file=sys.stderr)
        return 2
    path = solver_path(solver)
    if not path.is_file():
        print(f"reference-api: ERPSIM_SOLVER={solver!r}: no such file {path} (expected a "
              "library scenario's name or scenarios/library/NAME/solver.py)", file=sys.stderr)
        return 2
    return _run(a.workspace.resolve(), a.prompt_file.resolve(), a.output_dir.resolve(), path)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

#!/usr/bin/env python3
"""``erp``: the command-line client agents use to work in the company's books.

It talks to the ERP API of the current turn (HTTP over a unix socket or loopback
TCP) and uses the standard library only, so that this one file can be copied or
mounted into any environment that has ``python3`` and run as a script.

The endpoint and the token come from ``ERPSIM_API`` and ``ERPSIM_TOKEN``, or from
``.erpsim/connection.json`` (``{"api": ..., "token": ...}``) in the current
directory or one of its parents. Errors are one line on stderr with exit status 1
(refused by the books or the API), 2 (bad usage) or 3 (cannot reach the API).
"""

from __future__ import annotations

import argparse
import csv
import http.client
import io
import json
import os
import re
import socket
import sys
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn
from urllib.parse import quote, urlencode, urlsplit

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_CONNECT = 0, 1, 2, 3
CONNECTION_FILE = os.path.join(".erpsim", "connection.json")
DEFAULT_TIMEOUT = 300.0

_MONEY = re.compile(r"^[+-]?(?:[0-9]{1,15}|[0-9]{1,3}(?:,[0-9]{3})+)(?:\.[0-9]{1,2})?$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_RIGHT = re.compile(r"^-?[0-9][0-9,]*\.[0-9]{2}$")


class Failure(Exception):
    """An error to print as one line, with the exit status it means."""

    def __init__(self, code: str, message: str, field: str | None = None,
                 status: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.status = status

    def line(self) -> str:
        """``erp: CODE: MESSAGE (field: X)``, on one line."""
        text = " ".join(str(self.message).split())
        tail = f" (field: {self.field})" if self.field else ""
        return f"erp: {self.code}: {text}{tail}"


# --- connection -------------------------------------------------------------------


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix-domain socket."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        """Connect to the API's unix socket instead of a TCP host."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.unix_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def find_connection(start: str | None = None) -> tuple[str, str]:
    """``(api, token)`` from the environment, else from the nearest connection file."""
    api = os.environ.get("ERPSIM_API", "").strip()
    token = os.environ.get("ERPSIM_TOKEN", "").strip()
    if api and token:
        return api, token
    here = os.path.abspath(start or os.getcwd())
    while True:
        path = os.path.join(here, CONNECTION_FILE)
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
            except (OSError, ValueError) as e:
                raise Failure("not_configured", f"cannot read {path}: {e}",
                              status=EXIT_CONNECT) from None
            if not isinstance(data, dict):
                raise Failure("not_configured", f"{path}: expected a JSON object with 'api' and "
                              "'token'", status=EXIT_CONNECT)
            api = api or str(data.get("api") or "").strip()
            token = token or str(data.get("token") or "").strip()
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if not api or not token:
        missing = " and ".join(n for n, v in (("ERPSIM_API", api), ("ERPSIM_TOKEN", token))
                               if not v)
        raise Failure("not_configured", f"{missing} not set and no {CONNECTION_FILE} with both "
                      "found here or in a parent directory; run inside a turn workspace or "
                      "export ERPSIM_API and ERPSIM_TOKEN", status=EXIT_CONNECT)
    return api, token


class Client:
    """Requests to the ERP API."""

    def __init__(self, api: str, token: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.api, self.token, self.timeout = api, token, timeout
        if api.startswith("unix://"):
            self.unix_path: str | None = api[len("unix://"):]
            self.host, self.port = "localhost", None
        else:
            parts = urlsplit(api)
            if parts.scheme != "http" or not parts.hostname:
                raise Failure("not_configured", f"ERPSIM_API {api!r}: expected "
                              "unix:///path/to/api.sock or http://127.0.0.1:PORT",
                              status=EXIT_CONNECT)
            self.unix_path, self.host, self.port = None, parts.hostname, parts.port or 80

    def _connection(self) -> http.client.HTTPConnection:
        if self.unix_path is not None:
            return UnixHTTPConnection(self.unix_path, self.timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def request(self, method: str, path: str, params: dict[str, object] | None = None,
                body: object = None) -> tuple[int, str, bytes]:
        """``(status, content type, body)``; a connection failure is a ``Failure`` (exit 3)."""
        query = {k: _param(v) for k, v in (params or {}).items()
                 if v is not None and v is not False}
        url = path + ("?" + urlencode(query) if query else "")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json, text/csv"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        conn = self._connection()
        try:
            conn.request(method, url, body=data, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            return response.status, response.getheader("Content-Type", ""), payload
        except (OSError, http.client.HTTPException) as e:
            reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
            raise Failure("cannot_connect", f"cannot reach the ERP API at {self.api} ({reason}); "
                          "is the turn still running?", status=EXIT_CONNECT) from None
        finally:
            conn.close()

    def call(self, method: str, path: str, params: dict[str, object] | None = None,
             body: object = None) -> tuple[str, bytes]:
        """``(content type, body)`` of a 2xx answer; an error answer is a ``Failure``."""
        status, ctype, payload = self.request(method, path, params, body)
        if 200 <= status < 300:
            return ctype, payload
        try:
            err = json.loads(payload.decode("utf-8"))
            code, message, field = err["error"], err.get("message", ""), err.get("field")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            code, message, field = f"http_{status}", payload.decode("utf-8", "replace")[:300], None
        raise Failure(str(code), str(message or f"HTTP {status}"), field)


def _param(value: object) -> str:
    if value is True:
        return "true"
    return str(value)


# --- output -------------------------------------------------------------------------


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        if isinstance(value, list) and all(isinstance(v, dict) and "kind" in v and "doc_id" in v
                                           for v in value):
            return " ".join(f"{v['kind']}:{v['doc_id']}:{v.get('amount', '')}".rstrip(":")
                            for v in value)
        return json.dumps(value, separators=(",", ":"))
    return " ".join(str(value).split())


def table(rows: list[dict[str, object]], columns: list[str] | None = None) -> str:
    """Rows as plain aligned text with a header line (money right-aligned)."""
    cols = list(columns or [])
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    if not cols:
        return "(no rows)\n"
    cells = [[_text(r.get(c)) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    right = [bool(cells) and all(_RIGHT.match(row[i]) or not row[i] for row in cells)
             for i in range(len(cols))]

    def line(values: list[str]) -> str:
        out = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right)]  # noqa: B905 - python3 < 3.10
        return "  ".join(out).rstrip()

    lines = [line([c.upper() for c in cols])]
    lines += [line(row) for row in cells]
    if not rows:
        lines.append("(no rows)")
    return "\n".join(lines) + "\n"


def render(data: object, fmt: str) -> str:
    """A JSON answer as a table, key-value lines, or JSON."""
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "csv":
        return _csv_of(data)
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        out = table(data["items"])
        totals = data.get("totals")
        if isinstance(totals, dict) and data["items"]:
            out += "TOTAL: " + "  ".join(f"{k} {v}" for k, v in totals.items()) + "\n"
        meta = [f"{k}={v}" for k, v in data.items()
                if k not in ("items", "totals", "count") and not isinstance(v, (dict, list))]
        n = data.get("count", len(data["items"]))
        out += f"({n} row{'s' if n != 1 else ''}{'; ' + ', '.join(meta) if meta else ''})\n"
        return out
    if isinstance(data, dict) and isinstance(data.get("events"), list) and "command" in data:
        n = len(data["events"])
        head = (f"{data['command']}: done, {n} event{'s' if n != 1 else ''} written by "
                f"{data.get('actor')} ({data.get('role')}) on {data.get('business_date')}\n")
        return head + table(data["events"], ["position", "type", "id", "stream"])
    if isinstance(data, dict):
        scalars = {k: v for k, v in data.items()
                   if not (isinstance(v, list) or (isinstance(v, dict) and v))}
        width = max((len(k) for k in scalars), default=0)
        out = "".join(f"{k.ljust(width)}  {_text(v)}\n" for k, v in scalars.items())
        for k, v in data.items():
            if isinstance(v, dict) and v:
                out += f"\n{k}:\n"
                w = max(len(str(x)) for x in v)
                out += "".join(f"  {str(x).ljust(w)}  {_text(y)}\n" for x, y in v.items())
            elif isinstance(v, list):
                out += f"\n{k}:\n"
                if v and all(isinstance(x, dict) for x in v):
                    out += table(v)
                else:
                    out += "".join(f"  {_text(x)}\n" for x in v) or "(none)\n"
        return out
    return _text(data) + "\n"


def _csv_of(data: object) -> str:
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        rows = data["items"]
    elif isinstance(data, dict) and isinstance(data.get("events"), list):
        rows = data["events"]
    elif isinstance(data, dict):
        rows = [{k: v for k, v in data.items() if not isinstance(v, list)}]
    else:
        rows = []
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_text(r.get(c)) if isinstance(r.get(c), (dict, list)) else
                    ("" if r.get(c) is None else r.get(c)) for c in cols])
    return buf.getvalue()


# --- argument types -----------------------------------------------------------------


def money_arg(text: str) -> str:
    """A money argument: a decimal string with at most two places."""
    t = text.strip()
    if not _MONEY.match(t):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an amount: write a decimal like 1240.50 (at most two decimals, "
            "no currency sign)")
    return t


def day(text: str) -> str:
    """A date argument: YYYY-MM-DD."""
    if not _DATE.match(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a date: write YYYY-MM-DD")
    return text.strip()


def invoice_line(text: str) -> dict[str, object]:
    """``QTY:UNIT_PRICE:ACCOUNT:DESCRIPTION`` (ACCOUNT may be empty)."""
    parts = text.split(":", 3)
    if len(parts) != 4 or not parts[0].strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r}: write an invoice line as QTY:UNIT_PRICE:ACCOUNT:DESCRIPTION, for "
            "example 2:150.00::Consulting hours (empty ACCOUNT: the company's revenue account)")
    qty, price, account, description = parts
    line: dict[str, object] = {"quantity": int(qty), "unit_price": money_arg(price),
                               "description": description.strip()}
    if account.strip():
        line["account"] = account.strip()
    return line


def bill_line(text: str) -> dict[str, object]:
    """``AMOUNT:ACCOUNT:DESCRIPTION`` (ACCOUNT may be empty)."""
    parts = text.split(":", 2)
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write a bill line as AMOUNT:ACCOUNT:DESCRIPTION, for example "
            "450.00:6100:Office supplies (empty ACCOUNT: the company's expense account)")
    amount, account, description = parts
    line: dict[str, object] = {"amount": money_arg(amount), "description": description.strip()}
    if account.strip():
        line["account"] = account.strip()
    return line


def journal_line(text: str) -> dict[str, object]:
    """``ACCOUNT:DEBIT:CREDIT[:PARTY[:MEMO]]``, exactly one of DEBIT and CREDIT."""
    parts = text.split(":", 4)
    if len(parts) < 3:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write a journal line as ACCOUNT:DEBIT:CREDIT[:PARTY[:MEMO]] with one of "
            "DEBIT or CREDIT empty, for example 6800:25.00: or 1000::25.00")
    account, debit, credit = (p.strip() for p in parts[:3])
    if bool(debit) == bool(credit):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give exactly one of DEBIT or CREDIT (6800:25.00: is a debit, "
            "1000::25.00 a credit)")
    line: dict[str, object] = {"account": account}
    if debit:
        line["debit"] = money_arg(debit)
    else:
        line["credit"] = money_arg(credit)
    if len(parts) > 3 and parts[3].strip():
        line["party"] = parts[3].strip()
    if len(parts) > 4 and parts[4].strip():
        line["memo"] = parts[4].strip()
    return line


def bill_payment(text: str) -> dict[str, object]:
    """``BILL:AMOUNT``."""
    bill, sep, amount = text.rpartition(":")
    if not sep or not bill:
        raise argparse.ArgumentTypeError(f"{text!r}: write BILL:AMOUNT, for example "
                                         "BILL-0000001:450.00")
    return {"bill_id": bill.strip(), "amount": money_arg(amount)}


class _Target(argparse.Action):
    """``--receipt R`` and friends: append ``{"kind", "doc_id"}`` in the order given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        targets = list(getattr(namespace, "targets", None) or [])
        targets.append({"kind": self.metavar.lower(), "doc_id": str(values)})  # type: ignore[union-attr]
        namespace.targets = targets


# --- the parser ---------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Raise the usage error as a :class:`Failure` (exit status 2)."""
        raise Failure("usage", f"{message} (see '{self.prog} --help')", status=EXIT_USAGE)


FORMAT_HELP = "output: table (default, aligned columns), csv or json"

MAIN_DESCRIPTION = """\
Work in the company's books (the ERP) from the command line.

Every command talks to the ERP API of the current turn. What you write is recorded
under your turn's actor and role, on the turn's business date; a command the books
refuse changes nothing and prints why on one line.

connection:
  ERPSIM_API    where the API listens: unix:///path/to/api.sock or http://127.0.0.1:PORT
  ERPSIM_TOKEN  your turn's token
  Without them, .erpsim/connection.json ({"api": ..., "token": ...}) in the current
  directory or a parent is used. ERPSIM_TIMEOUT sets the request timeout (seconds).

conventions:
  money   decimal strings with at most two places and no currency sign: 1240.50
  dates   YYYY-MM-DD; most dates default to the turn's business date
  ids     as the books show them: INV-0000001, RCT-0000001, C0001, ...
  output  --format table (default), csv or json, before or after the subcommand
  exit    0 done; 1 refused by the books or the API (the reason is on stderr);
          2 bad usage; 3 cannot reach the API

Run 'erp RESOURCE --help' and 'erp RESOURCE VERB --help' for details and examples.
"""

MAIN_EPILOG = """\
examples:
  erp whoami
  erp invoices list --status open
  erp receipts list --unapplied --format csv
  erp receipts apply RCT-0000001 INV-0000001 1240.50
  erp bank lines --unmatched
  erp reports aging --ledger ar
  erp journal post --date 2026-03-31 --memo "Accrue March rent" \\
      --line 6100:1500.00: --line 2100::1500.00
  erp command apply-receipt --json '{"receipt_id": "RCT-0000001", "invoice_id": \\
      "INV-0000001", "amount": "1240.50"}'
"""


def _wrap(text: str) -> str:
    """A one-paragraph description wrapped for the terminal (help keeps line breaks)."""
    return text if "\n" in text else textwrap.fill(text, 88)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32, width=100)


# A handler turns the parsed arguments into a request: (method, path, params, body),
# and optionally a transform of the answer.
_Handler = Callable[[argparse.Namespace], tuple[Any, ...]]


def _leaf(verbs: argparse._SubParsersAction[Parser], name: str, summary: str,
          description: str, examples: list[str], handler: _Handler) -> Parser:
    p = verbs.add_parser(name, help=summary, description=description,
                         epilog="examples:\n" + "".join(f"  {e}\n" for e in examples),
                         formatter_class=_formatter)
    p.add_argument("--format", choices=("table", "csv", "json"), default=argparse.SUPPRESS,
                   help=FORMAT_HELP)
    p.set_defaults(handler=handler)
    return p


def _resource(sub: argparse._SubParsersAction[Parser], name: str, summary: str,
              description: str) -> argparse._SubParsersAction[Parser]:
    p = sub.add_parser(name, help=summary, description=description, formatter_class=_formatter)
    p.set_defaults(resource_parser=p)
    return p.add_subparsers(dest="verb", title="verbs", metavar="VERB", parser_class=Parser)



def _get(path: str, **params: object) -> tuple[str, str, dict[str, object], None]:
    return "GET", path, params, None


def _cmd(command: str, /, **body: object) -> tuple[str, str, None, dict[str, object]]:
    return ("POST", f"/v1/commands/{command}", None,
            {k: v for k, v in body.items() if v is not None})


def _seg(value: str) -> str:
    return quote(value, safe="")


def _doc(kind: str) -> _Handler:
    return lambda a: _get(f"/v1/documents/{kind}/{_seg(a.id)}")


def build_parser() -> Parser:
    """The whole command tree."""
    parser = Parser(prog="erp", description=MAIN_DESCRIPTION, epilog=MAIN_EPILOG,
                    formatter_class=_formatter)
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help=FORMAT_HELP)
    sub = parser.add_subparsers(dest="resource", title="resources", metavar="RESOURCE",
                                parser_class=Parser)

    # --- whoami, company ---------------------------------------------------------
    p = sub.add_parser("whoami", help="your actor, role and business date",
                       description="Show the actor, role and business date your token acts "
                                   "with.", formatter_class=_formatter,
                       epilog="examples:\n  erp whoami\n")
    p.add_argument("--format", choices=("table", "csv", "json"), default=argparse.SUPPRESS,
                   help=FORMAT_HELP)
    p.set_defaults(handler=lambda a: _get("/v1/whoami"))
    p = sub.add_parser("company", help="the company, its posting accounts and policies",
                       description="Show the company: name, currency, the accounts automatic "
                                   "postings use, and the policies the books enforce (for "
                                   "example the most a clerk may write off per invoice).",
                       formatter_class=_formatter, epilog="examples:\n  erp company\n")
    p.add_argument("--format", choices=("table", "csv", "json"), default=argparse.SUPPRESS,
                   help=FORMAT_HELP)
    p.set_defaults(handler=lambda a: _get("/v1/company"))

    # --- invoices ----------------------------------------------------------------
    v = _resource(sub, "invoices", "customer invoices: list, show, issue, write off, "
                  "fee allowance",
                  "Customer invoices (accounts receivable): what customers owe, and the ways an "
                  "invoice is settled or reduced.")
    p = _leaf(v, "list", "list invoices", "List customer invoices with their open amounts. "
              "Status is open, partially_paid or paid.",
              ["erp invoices list", "erp invoices list --status open --customer C0001",
               "erp invoices list --format csv"],
              lambda a: _get("/v1/invoices", status=a.status, customer=a.customer))
    p.add_argument("--status", help="only this status: open, partially_paid, paid")
    p.add_argument("--customer", metavar="CUSTOMER", help="only this customer's invoices")
    p = _leaf(v, "show", "one invoice with its lines and history",
              "Show one invoice: its state, its lines, and every change of its state (issued, "
              "receipts applied, credits, write-offs).", ["erp invoices show INV-0000001"],
              _doc("invoice"))
    p.add_argument("id", metavar="INVOICE", help="invoice id, e.g. INV-0000001")
    p = _leaf(v, "issue", "issue an invoice to a customer",
              "Issue a customer invoice. Each --line is QTY:UNIT_PRICE:ACCOUNT:DESCRIPTION "
              "(ACCOUNT may be empty for the company's revenue account). The due date "
              "defaults to the customer's terms.",
              ["erp invoices issue C0001 --date 2026-03-02 --line '2:150.00::Consulting hours'",
               "erp invoices issue C0001 --date 2026-03-02 --line 1:99.90:4000:Licence "
               "--reference PO-77"],
              lambda a: _cmd("issue-invoice", customer_id=a.customer, entry_date=a.date,
                             due_on=a.due, lines=a.line, tax_rate_bp=a.tax_rate_bp,
                             reference=a.reference, invoice_id=a.new_id))
    p.add_argument("customer", metavar="CUSTOMER", help="customer id")
    p.add_argument("--date", type=day, required=True, help="invoice date YYYY-MM-DD")
    p.add_argument("--line", type=invoice_line, action="append", required=True,
                   help="QTY:UNIT_PRICE:ACCOUNT:DESCRIPTION (repeat for more lines)")
    p.add_argument("--due", type=day, help="due date (default: date + customer's terms)")
    p.add_argument("--tax-rate-bp", type=int, help="tax rate in basis points (800 = 8%%)")
    p.add_argument("--reference", help="customer reference, e.g. a PO number")
    p.add_argument("--id", dest="new_id", help="invoice id (default: the next free one)")
    p = _leaf(v, "write-off", "write off part of an invoice as uncollectible",
              "Write off part of an invoice as bad debt. A clerk may write off at most the "
              "company's clerk_write_off_limit per invoice (see 'erp company').",
              ["erp invoices write-off INV-0000001 12.50 --reason 'small balance'"],
              lambda a: _cmd("write-off-invoice", invoice_id=a.invoice, amount=a.amount,
                             reason=a.reason, entry_date=a.date, account=a.account))
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg,
                   help="amount to write off, e.g. 12.50")
    p.add_argument("--reason", required=True, help="why (kept in the books)")
    p.add_argument("--date", type=day, help="entry date (default: business date)")
    p.add_argument("--account", help="expense account (default: the bad-debt account)")
    p = _leaf(v, "fee-allowance", "accept a card processor's fee as paid on an invoice",
              "Accept a payment processor's fee deducted from a customer's payment as paid on "
              "the invoice (within the company's clerk fee-allowance policy).",
              ["erp invoices fee-allowance INV-0000001 3.20",
               "erp invoices fee-allowance INV-0000001 3.20 --reason 'Stripe fee'"],
              lambda a: _cmd("grant-fee-allowance", invoice_id=a.invoice, amount=a.amount,
                             reason=a.reason, entry_date=a.date, account=a.account))
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="fee amount, e.g. 3.20")
    p.add_argument("--reason", help="why (default: card processor fee)")
    p.add_argument("--date", type=day, help="entry date (default: business date)")
    p.add_argument("--account", help="expense account (default: the card-fees account)")

    # --- credit memos --------------------------------------------------------------
    v = _resource(sub, "credit-memos", "credit memos: list, show, issue",
                  "Credit memos: part of an invoice credited back to the customer.")
    p = _leaf(v, "list", "list credit memos",
              "List credit memos: amounts credited back to customers against invoices.",
              ["erp credit-memos list", "erp credit-memos list --customer C0001"],
              lambda a: _get("/v1/credit-memos", customer=a.customer))
    p.add_argument("--customer", help="only this customer's credit memos")
    p = _leaf(v, "show", "one credit memo",
              "Show one credit memo: the invoice it credits, its amount, reason and history.",
              ["erp credit-memos show CM-0000001"], _doc("credit_memo"))
    p.add_argument("id", metavar="CREDIT_MEMO", help="credit memo id")
    p = _leaf(v, "issue", "credit part of an invoice",
              "Issue a credit memo against an invoice (reduces what the customer owes).",
              ["erp credit-memos issue INV-0000001 100.00 --reason 'damaged goods'"],
              lambda a: _cmd("issue-credit-memo", invoice_id=a.invoice, amount=a.amount,
                             reason=a.reason, entry_date=a.date, account=a.account,
                             credit_memo_id=a.new_id))
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="amount to credit")
    p.add_argument("--reason", required=True, help="why")
    p.add_argument("--date", type=day, help="entry date (default: business date)")
    p.add_argument("--account", help="account to debit (default: sales returns)")
    p.add_argument("--id", dest="new_id", help="credit memo id (default: the next free one)")
    _collections_commands(sub)

    # --- receipts ----------------------------------------------------------------
    v = _resource(sub, "receipts", "cash receipts: list, show, record, apply, reverse, "
                  "assign customer, refund, return",
                  "Cash received from customers. A receipt lands in unapplied cash until you "
                  "apply it to open invoices of its customer.")
    p = _leaf(v, "list", "list receipts", "List receipts with payer, customer and the amount "
              "still unapplied (open_amount). Status is unapplied, partially_applied or "
              "applied.",
              ["erp receipts list --unapplied", "erp receipts list --customer C0001 --format csv"],
              lambda a: _get("/v1/receipts", unapplied=a.unapplied, customer=a.customer,
                             status=a.status))
    p.add_argument("--unapplied", action="store_true", help="only receipts with cash left "
                   "to apply")
    p.add_argument("--customer", help="only this customer's receipts")
    p.add_argument("--status", help="only this status")
    p = _leaf(v, "show", "one receipt with its payer and applications",
              "Show one receipt: payer, method, reference, and every application or reversal.",
              ["erp receipts show RCT-0000001"], _doc("receipt"))
    p.add_argument("id", metavar="RECEIPT", help="receipt id")
    p = _leaf(v, "apply", "apply a receipt to an invoice",
              "Apply part or all of a receipt's unapplied cash to an open invoice of the same "
              "customer. If the receipt has no customer yet, run 'erp receipts "
              "assign-customer' first.",
              ["erp receipts apply RCT-0000001 INV-0000001 1240.50",
               "erp receipts apply RCT-0000001 INV-0000002 99.00 --date 2026-03-02"],
              lambda a: _cmd("apply-receipt", receipt_id=a.receipt, invoice_id=a.invoice,
                             amount=a.amount, entry_date=a.date))
    p.add_argument("receipt", metavar="RECEIPT", help="receipt id")
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="amount to apply, e.g. 1240.50")
    p.add_argument("--date", type=day, help="entry date (default: business date)")
    p = _leaf(v, "reverse-application", "undo (part of) an application",
              "Undo part or all of an earlier application of a receipt to an invoice; the "
              "amount returns to the receipt's unapplied cash.",
              ["erp receipts reverse-application RCT-0000001 INV-0000001 1240.50"],
              lambda a: _cmd("reverse-application", receipt_id=a.receipt, invoice_id=a.invoice,
                             amount=a.amount, entry_date=a.date))
    p.add_argument("receipt", metavar="RECEIPT", help="receipt id")
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="amount to unapply")
    p.add_argument("--date", type=day, help="entry date (default: business date)")
    p = _leaf(v, "assign-customer", "name the customer of a receipt recorded without one",
              "Name the customer who paid a receipt recorded without one (so that it can be "
              "applied).", ["erp receipts assign-customer RCT-0000001 C0001"],
              lambda a: _cmd("assign-receipt-customer", receipt_id=a.receipt,
                             customer_id=a.customer))
    p.add_argument("receipt", metavar="RECEIPT", help="receipt id")
    p.add_argument("customer", metavar="CUSTOMER", help="customer id")
    p = _leaf(v, "record", "record cash received",
              "Record cash received into a bank account (usually the bank feed does this).",
              ["erp receipts record --bank B-OPER --amount 500.00 --date 2026-03-02 "
               "--customer C0001 --reference 'INV-0000001'"],
              lambda a: _cmd("record-receipt", bank_account_id=a.bank, amount=a.amount,
                             entry_date=a.date, customer_id=a.customer, method=a.method,
                             reference=a.reference, payer=a.payer, receipt_id=a.new_id))
    p.add_argument("--bank", required=True, help="bank account id (see 'erp bank accounts')")
    p.add_argument("--amount", type=money_arg, required=True, help="amount received")
    p.add_argument("--date", type=day, required=True, help="date received")
    p.add_argument("--customer", help="customer id, if known")
    p.add_argument("--method", help="e.g. ach, wire, check, card")
    p.add_argument("--reference", help="the payer's reference")
    p.add_argument("--payer", help="the payer's name as the bank shows it")
    p.add_argument("--id", dest="new_id", help="receipt id (default: the next free one)")
    p = _leaf(v, "refund", "pay unapplied cash back to the customer",
              "Refund unapplied cash of a receipt to its customer.",
              ["erp receipts refund RCT-0000001 25.00"],
              lambda a: _cmd("refund-customer", receipt_id=a.receipt, amount=a.amount,
                             entry_date=a.date, refund_id=a.new_id))
    p.add_argument("receipt", metavar="RECEIPT", help="receipt id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="amount to refund")
    p.add_argument("--date", type=day, help="entry date (default: business date)")
    p.add_argument("--id", dest="new_id", help="refund id (default: the next free one)")
    p = _leaf(v, "return", "record a deposit the bank returned unpaid (NSF)",
              "Record that the bank returned a receipt's deposit unpaid (NSF, a stopped "
              "check): every invoice the receipt paid is re-opened and the bank's reversal "
              "of the whole receipt is posted; with --line it is matched to the returned "
              "item's statement line at once.",
              ["erp receipts return RCT-0000001 --line SL-0000042"],
              lambda a: _cmd("record-returned-deposit", receipt_id=a.receipt, line_id=a.line,
                             entry_date=a.date, reason=a.reason, return_id=a.new_id))
    p.add_argument("receipt", metavar="RECEIPT", help="receipt id")
    p.add_argument("--line", help="the returned item's statement line")
    p.add_argument("--date", type=day, help="entry date (default: business date)")
    p.add_argument("--reason", help="why (default: returned unpaid (NSF))")
    p.add_argument("--id", dest="new_id", help="return id (default: the next free one)")

    # --- customers ---------------------------------------------------------------
    v = _resource(sub, "customers", "customers: list, show, register",
                  "Customers: their terms, credit limits and what they owe.")
    _leaf(v, "list", "list customers", "List customers with terms, credit limit and open "
          "receivables.", ["erp customers list"], lambda a: _get("/v1/customers"))
    p = _leaf(v, "show", "one customer with open invoices and unapplied receipts",
              "Show a customer with its open invoices and its unapplied receipts.",
              ["erp customers show C0001"],
              lambda a: _get(f"/v1/customers/{_seg(a.id)}"))
    p.add_argument("id", metavar="CUSTOMER", help="customer id")
    p = _leaf(v, "register", "add a customer",
              "Add a customer with payment terms and an optional credit limit.",
              ["erp customers register 'Acme Ltd' --terms 30 --credit-limit 50000.00"],
              lambda a: _cmd("register-customer", name=a.name, customer_id=a.new_id,
                             terms_days=a.terms, credit_limit=a.credit_limit))
    p.add_argument("name", metavar="NAME", help="customer name")
    p.add_argument("--id", dest="new_id", help="customer id (default: the next free one)")
    p.add_argument("--terms", type=int, help="payment terms in days (default 30)")
    p.add_argument("--credit-limit", type=money_arg, help="credit limit")

    # --- vendors -----------------------------------------------------------------
    v = _resource(sub, "vendors", "vendors: list, show, register, bank-detail changes",
                  "Vendors (suppliers). Bank details change only through a request that "
                  "another role approves.")
    _leaf(v, "list", "list vendors", "List vendors with terms and approved bank details "
          "(account numbers masked).", ["erp vendors list"], lambda a: _get("/v1/vendors"))
    p = _leaf(v, "show", "one vendor with bank-change requests and open bills",
              "Show a vendor with its bank-detail change requests and its open bills.",
              ["erp vendors show V0001"], lambda a: _get(f"/v1/vendors/{_seg(a.id)}"))
    p.add_argument("id", metavar="VENDOR", help="vendor id")
    p = _leaf(v, "register", "add a vendor",
              "Add a vendor with payment terms and, optionally, the bank details to pay it to.",
              ["erp vendors register 'Initech' --terms 30 --account-name Initech "
               "--routing 111000025 --account-number 123456789"],
              lambda a: _cmd("register-vendor", name=a.name, vendor_id=a.new_id,
                             terms_days=a.terms, bank=_bank(a, required=False)))
    p.add_argument("name", metavar="NAME", help="vendor name")
    p.add_argument("--id", dest="new_id", help="vendor id (default: the next free one)")
    p.add_argument("--terms", type=int, help="payment terms in days (default 30)")
    _bank_args(p, required=False)
    p = _leaf(v, "request-bank-change", "ask to change where a vendor is paid",
              "Request new bank details for a vendor. Nothing changes until a different role "
              "approves the request (a controller: 'erp vendors approve-bank-change').",
              ["erp vendors request-bank-change V0001 --account-name Initech --routing "
               "111000025 --account-number 987654321 --reason 'letter of 2026-03-01'"],
              lambda a: _cmd("request-vendor-bank-change", vendor_id=a.vendor,
                             new_bank=_bank(a, required=True), reason=a.reason,
                             request_id=a.new_id))
    p.add_argument("vendor", metavar="VENDOR", help="vendor id")
    _bank_args(p, required=True)
    p.add_argument("--reason", help="why, and how it was verified")
    p.add_argument("--id", dest="new_id", help="request id (default: the next free one)")
    p = _leaf(v, "approve-bank-change", "approve a pending bank-detail change (controller)",
              "Approve a pending bank-detail change. Needs a role other than the requester's "
              "(controller); a clerk gets 'forbidden_for_role'.",
              ["erp vendors approve-bank-change BCR-000001"],
              lambda a: _cmd("approve-vendor-bank-change", request_id=a.request))
    p.add_argument("request", metavar="REQUEST", help="bank-change request id")
    p = _leaf(v, "reject-bank-change", "refuse a pending bank-detail change (controller)",
              "Refuse a pending bank-detail change (controller); the vendor's bank "
              "details stay as they were.",
              ["erp vendors reject-bank-change BCR-000001 --reason 'not verified'"],
              lambda a: _cmd("reject-vendor-bank-change", request_id=a.request,
                             reason=a.reason))
    p.add_argument("request", metavar="REQUEST", help="bank-change request id")
    p.add_argument("--reason", help="why")

    # --- bills -------------------------------------------------------------------
    v = _resource(sub, "bills", "vendor bills: list, show, enter, approve",
                  "Vendor bills (accounts payable). A bill is entered, approved, then paid.")
    p = _leaf(v, "list", "list bills", "List vendor bills. Status is entered, approved, "
              "partially_paid or paid.",
              ["erp bills list --status approved", "erp bills list --vendor V0001"],
              lambda a: _get("/v1/bills", status=a.status, vendor=a.vendor))
    p.add_argument("--status", help="only this status")
    p.add_argument("--vendor", help="only this vendor's bills")
    p = _leaf(v, "show", "one bill with its lines and history",
              "Show one bill: vendor, vendor invoice number, lines, status and history.",
              ["erp bills show BILL-0000001"], _doc("bill"))
    p.add_argument("id", metavar="BILL", help="bill id")
    p = _leaf(v, "enter", "enter a vendor's invoice",
              "Enter a vendor's invoice as a bill. Each --line is AMOUNT:ACCOUNT:DESCRIPTION "
              "(ACCOUNT may be empty for the company's expense account). The vendor's invoice "
              "number must be new for that vendor.",
              ["erp bills enter V0001 VI-2291 --date 2026-03-02 --line 450.00:6100:'Office "
               "supplies'",
               "erp bills enter V0001 VI-2292 --date 2026-03-02 --line '1000.00::Rent' --tax "
               "80.00 --due 2026-04-01"],
              lambda a: _cmd("enter-bill", vendor_id=a.vendor, vendor_invoice_number=a.number,
                             entry_date=a.date, due_on=a.due, lines=a.line, tax=a.tax,
                             bill_id=a.new_id, discount=a.discount,
                             discount_until=a.discount_until))
    p.add_argument("vendor", metavar="VENDOR", help="vendor id")
    p.add_argument("number", metavar="VENDOR_INVOICE_NUMBER", help="the vendor's invoice number")
    p.add_argument("--date", type=day, required=True, help="bill date YYYY-MM-DD")
    p.add_argument("--line", type=bill_line, action="append", required=True,
                   help="AMOUNT:ACCOUNT:DESCRIPTION (repeat for more lines)")
    p.add_argument("--due", type=day, help="due date (default: date + vendor's terms)")
    p.add_argument("--tax", type=money_arg, help="tax on the bill")
    p.add_argument("--id", dest="new_id", help="bill id (default: the next free one)")
    p.add_argument("--discount", type=money_arg,
                   help="early-payment discount the invoice's terms offer (with --discount-until)")
    p.add_argument("--discount-until", type=day,
                   help="last day the discount may be taken YYYY-MM-DD")
    p = _leaf(v, "approve", "approve a bill for payment",
              "Approve a bill for payment (only approved bills are paid).",
              ["erp bills approve BILL-0000001"],
              lambda a: _cmd("approve-bill", bill_id=a.bill))
    p.add_argument("bill", metavar="BILL", help="bill id")

    _purchasing_commands(sub)
    _accruals_commands(sub)
    _fixed_asset_commands(sub)
    _bank_multi_commands(sub)
    _payroll_tax_commands(sub)

    # --- vendor credits --------------------------------------------------------------
    v = _resource(sub, "vendor-credits", "vendor credit notes: list, show, record, apply",
                  "Vendor credit notes (they reduce what we owe a vendor).")
    p = _leaf(v, "list", "list vendor credits",
              "List vendor credit notes and what is left of each to apply.",
              ["erp vendor-credits list --vendor V0001"],
              lambda a: _get("/v1/vendor-credits", vendor=a.vendor, status=a.status))
    p.add_argument("--vendor", help="only this vendor's credits")
    p.add_argument("--status", help="only this status: open, partially_applied, applied")
    p = _leaf(v, "show", "one vendor credit",
              "Show one vendor credit note with its applications to bills.",
              ["erp vendor-credits show VC-0000001"], _doc("vendor_credit"))
    p.add_argument("id", metavar="CREDIT", help="vendor credit id")
    p = _leaf(v, "record", "record a vendor's credit note",
              "Record a vendor's credit note; apply it to bills with 'erp vendor-credits "
              "apply'.",
              ["erp vendor-credits record V0001 CN-17 50.00 --date 2026-03-02"],
              lambda a: _cmd("record-vendor-credit", vendor_id=a.vendor,
                             vendor_credit_number=a.number, amount=a.amount, entry_date=a.date,
                             account=a.account, credit_id=a.new_id))
    p.add_argument("vendor", metavar="VENDOR", help="vendor id")
    p.add_argument("number", metavar="CREDIT_NUMBER", help="the vendor's credit note number")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="credit amount")
    p.add_argument("--date", type=day, required=True, help="credit note date")
    p.add_argument("--account", help="account to credit (default: the expense account)")
    p.add_argument("--id", dest="new_id", help="credit id (default: the next free one)")
    p = _leaf(v, "apply", "apply a vendor credit to a bill",
              "Apply part of a vendor credit to an open bill of the same vendor.",
              ["erp vendor-credits apply VC-0000001 BILL-0000001 50.00"],
              lambda a: _cmd("apply-vendor-credit", credit_id=a.credit, bill_id=a.bill,
                             amount=a.amount, entry_date=a.date))
    p.add_argument("credit", metavar="CREDIT", help="vendor credit id")
    p.add_argument("bill", metavar="BILL", help="bill id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="amount to apply")
    p.add_argument("--date", type=day, help="entry date (default: business date)")

    # --- payments ----------------------------------------------------------------
    v = _resource(sub, "payments", "vendor payments: list, show, run, pay-vendor",
                  "Payments to vendors, always to their approved bank details.")
    p = _leaf(v, "list", "list payments",
              "List payments made to vendors (status paid, or cleared once matched to a "
              "statement line).",
              ["erp payments list"], lambda a: _get("/v1/payments", vendor=a.vendor))
    p.add_argument("--vendor", help="only payments to this vendor")
    p = _leaf(v, "show", "one payment",
              "Show one payment: vendor, bank account, the bills it paid, history.",
              ["erp payments show PAY-0000001"],
              _doc("payment"))
    p.add_argument("id", metavar="PAYMENT", help="payment id")
    p = _leaf(v, "run", "pay every approved bill due by a date",
              "Run payments: pay every approved open bill due by --due-by (or only the listed "
              "--bill ids), one payment per vendor.",
              ["erp payments run --bank B-OPER --due-by 2026-03-15",
               "erp payments run --bank B-OPER --bill BILL-0000001 --bill BILL-0000002"],
              lambda a: _cmd("run-payments", bank_account_id=a.bank, entry_date=a.date,
                             due_by=a.due_by, bill_ids=a.bill, run_id=a.new_id))
    p.add_argument("--bank", required=True, help="bank account to pay from")
    p.add_argument("--due-by", type=day, help="pay bills due on or before this date")
    p.add_argument("--bill", action="append", help="pay only these bills (repeatable)")
    p.add_argument("--date", type=day, help="payment date (default: business date)")
    p.add_argument("--id", dest="new_id", help="payment run id (default: the next free one)")
    p = _leaf(v, "pay-with-discount", "pay a bill less its early-payment discount",
              "Pay a bill in full less its early-payment discount, on or before the discount "
              "date (after it the discount is lost and the books refuse it). --discount is the "
              "bill's discount exactly.",
              ["erp payments pay-with-discount BILL-0000001 --bank B-OPER --discount 90.00"],
              lambda a: _cmd("pay-bill-with-discount", bill_id=a.bill, bank_account_id=a.bank,
                             discount=a.discount, entry_date=a.date, payment_id=a.new_id))
    p.add_argument("bill", metavar="BILL", help="bill id")
    p.add_argument("--bank", required=True, help="bank account to pay from")
    p.add_argument("--discount", type=money_arg, required=True,
                   help="the bill's early-payment discount")
    p.add_argument("--date", type=day, help="payment date (default: business date)")
    p.add_argument("--id", dest="new_id", help="payment id (default: the next free one)")
    p = _leaf(v, "pay-vendor", "pay chosen bills of one vendor",
              "Pay a vendor's approved bills; each --bill is BILL:AMOUNT.",
              ["erp payments pay-vendor V0001 --bank B-OPER --bill BILL-0000001:450.00"],
              lambda a: _cmd("pay-vendor", vendor_id=a.vendor, bank_account_id=a.bank,
                             applications=a.bill, entry_date=a.date, payment_id=a.new_id))
    p.add_argument("vendor", metavar="VENDOR", help="vendor id")
    p.add_argument("--bank", required=True, help="bank account to pay from")
    p.add_argument("--bill", type=bill_payment, action="append", required=True,
                   help="BILL:AMOUNT (repeat for more bills)")
    p.add_argument("--date", type=day, help="payment date (default: business date)")
    p.add_argument("--id", dest="new_id", help="payment id (default: the next free one)")

    # --- bank --------------------------------------------------------------------
    v = _resource(sub, "bank", "bank: accounts, statement lines, match, fees, interest",
                  "The company's bank accounts and the statement lines the bank feed imported. "
                  "Amounts of statement lines are signed: deposits positive, withdrawals "
                  "negative.")
    p = _leaf(v, "accounts", "the company's bank accounts",
              "List the company's bank accounts with their GL accounts and book balances.",
              ["erp bank accounts"],
              lambda a: _get("/v1/bank/accounts", as_of=a.as_of))
    p.add_argument("--as-of", type=day, help="balances as of this date (default: business date)")
    p = _leaf(v, "lines", "statement lines and their matches",
              "List imported bank statement lines with status (matched or unmatched) and the "
              "book documents each is matched to.",
              ["erp bank lines --unmatched", "erp bank lines --bank B-OPER --format csv"],
              lambda a: _get("/v1/bank/lines", unmatched=a.unmatched, bank_account=a.bank,
                             as_of=a.as_of))
    p.add_argument("--unmatched", action="store_true", help="only lines not yet matched")
    p.add_argument("--bank", help="only this bank account's lines")
    p.add_argument("--as-of", type=day, help="lines up to this date (default: business date)")
    p = _leaf(v, "show", "one statement line",
              "Show one statement line: amount, description, what it is matched to, history.",
              ["erp bank show SL-0000001"], _doc("statement_line"))
    p.add_argument("id", metavar="LINE", help="statement line id")
    p = _leaf(v, "match", "match a statement line to book documents",
              "Match a statement line to the receipts, payments, refunds, fees or interest "
              "that explain it; the amounts must add up to the line's amount. Repeat the "
              "options for several documents.",
              ["erp bank match SL-0000001 --receipt RCT-0000001",
               "erp bank match SL-0000002 --payment PAY-0000001 --payment PAY-0000002"],
              lambda a: _cmd("match-statement-line", line_id=a.line, targets=_targets(a)))
    p.add_argument("line", metavar="LINE", help="statement line id")
    for kind in ("receipt", "payment", "refund", "fee", "interest", "return"):
        p.add_argument(f"--{kind}", action=_Target, metavar=kind.upper(),
                       help=f"a {kind} id the line pays or explains")
    p = _leaf(v, "unmatch", "undo a statement line's match",
              "Undo a statement line's match; the line and its documents become unmatched "
              "again.",
              ["erp bank unmatch SL-0000001"],
              lambda a: _cmd("unmatch-statement-line", line_id=a.line))
    p.add_argument("line", metavar="LINE", help="statement line id")
    for kind, cmd_name, id_field in (("fee", "record-bank-fee", "fee_id"),
                                     ("interest", "record-interest", "interest_id")):
        what = "a bank fee" if kind == "fee" else "interest the bank paid"
        p = _leaf(v, kind, f"record {what}",
                  f"Record {what}; with --line it is matched to that statement line at once. "
                  "The amount is positive.",
                  [f"erp bank {kind} --bank B-OPER --amount 15.00 --date 2026-03-02 "
                   "--line SL-0000009"],
                  _bank_doc(cmd_name, id_field))
        p.add_argument("--bank", required=True, help="bank account id")
        p.add_argument("--amount", type=money_arg, required=True, help="amount (positive)")
        p.add_argument("--date", type=day, required=True, help="entry date")
        p.add_argument("--line", help="statement line to match it to")
        p.add_argument("--memo", help="memo")
        p.add_argument("--account", help="GL account (default: the company's account for it)")
        p.add_argument("--id", dest="new_id", help="id (default: the next free one)")

    # --- journal -----------------------------------------------------------------
    v = _resource(sub, "journal", "journal entries: list, show, post, reverse",
                  "Manual journal entries in the general ledger.")
    _leaf(v, "list", "list journal entries",
          "List journal entries: manual ones, opening balances and reversals.",
          ["erp journal list"],
          lambda a: _get("/v1/journal-entries"))
    p = _leaf(v, "show", "one journal entry with its lines",
              "Show a journal entry with its lines, and whether it was reversed.",
              ["erp journal show JE-0000001"], _doc("journal"))
    p.add_argument("id", metavar="ENTRY", help="journal entry id")
    p = _leaf(v, "post", "post a balanced journal entry",
              "Post a manual journal entry. Each --line is ACCOUNT:DEBIT:CREDIT[:PARTY[:MEMO]] "
              "with exactly one of DEBIT or CREDIT; debits must equal credits. Control "
              "accounts (AR, AP, unapplied cash, bank) are usually off limits to a clerk.",
              ["erp journal post --date 2026-03-31 --memo 'Accrue rent' --line 6100:1500.00: "
               "--line 2100::1500.00",
               "erp journal post --date 2026-03-31 --memo 'Reclass' --line "
               "'6800:25.00:::bank fee' --line 6000::25.00"],
              lambda a: _cmd("post-journal-entry", entry_date=a.date, memo=a.memo, lines=a.line,
                             entry_id=a.new_id))
    p.add_argument("--date", type=day, required=True, help="entry date")
    p.add_argument("--memo", required=True, help="what the entry is for")
    p.add_argument("--line", type=journal_line, action="append", required=True,
                   help="ACCOUNT:DEBIT:CREDIT[:PARTY[:MEMO]] (at least two)")
    p.add_argument("--id", dest="new_id", help="entry id (default: the next free one)")
    p = _leaf(v, "reverse", "reverse a journal entry",
              "Reverse a journal entry with an entry of every line negated.",
              ["erp journal reverse JE-0000001 --date 2026-04-01"],
              lambda a: _cmd("reverse-journal-entry", entry_id=a.entry, entry_date=a.date,
                             memo=a.memo, reversal_id=a.new_id))
    p.add_argument("entry", metavar="ENTRY", help="journal entry id")
    p.add_argument("--date", type=day, required=True, help="date of the reversal")
    p.add_argument("--memo", help="memo")
    p.add_argument("--id", dest="new_id", help="reversal id (default: the next free one)")

    # --- reports -----------------------------------------------------------------
    v = _resource(sub, "reports", "aging, trial balance, control ties, open items",
                  "Reports, as of the business date unless --as-of says otherwise.")
    p = _leaf(v, "aging", "open balances by party and days past due",
              "Aging: each customer's (ar) or vendor's (ap) open balance in buckets of days "
              "past due: current, 1-30, 31-60, 61-90, over_90.",
              ["erp reports aging", "erp reports aging --ledger ap --as-of 2026-03-31"],
              lambda a: _get("/v1/reports/aging", ledger=a.ledger, as_of=a.as_of))
    p.add_argument("--ledger", choices=("ar", "ap"), default="ar", help="ar (default) or ap")
    p.add_argument("--as-of", type=day, help="YYYY-MM-DD (default: business date)")
    p = _leaf(v, "trial-balance", "every account's balance",
              "Trial balance: every account's debit or credit balance.",
              ["erp reports trial-balance", "erp reports trial-balance --format csv"],
              lambda a: _get("/v1/reports/trial-balance", as_of=a.as_of))
    p.add_argument("--as-of", type=day, help="YYYY-MM-DD (default: business date)")
    p = _leaf(v, "control-ties", "control accounts against their subledgers",
              "Each control account's GL balance against its subledger's total; a difference "
              "means something posted to the account outside its documents.",
              ["erp reports control-ties"],
              lambda a: _get("/v1/reports/control-ties", as_of=a.as_of))
    p.add_argument("--as-of", type=day, help="YYYY-MM-DD (default: business date)")
    p = _leaf(v, "open-items", "open documents of a subledger",
              "Documents with an open balance: ar (invoices), ap (bills, vendor credits) or "
              "unapplied_cash (receipts not fully applied).",
              ["erp reports open-items ar", "erp reports open-items unapplied_cash --format csv"],
              lambda a: _get(f"/v1/open-items/{a.ledger}", party=a.party, as_of=a.as_of))
    p.add_argument("ledger", choices=("ar", "ap", "unapplied_cash"), help="which subledger")
    p.add_argument("--party", help="only this customer or vendor")
    p.add_argument("--as-of", type=day, help="YYYY-MM-DD (default: business date)")

    # --- gl, accounts, periods ----------------------------------------------------------
    p = sub.add_parser("gl", help="the GL lines of one account",
                       description="List the general-ledger lines of one account with a "
                                   "running balance (debit positive).",
                       formatter_class=_formatter,
                       epilog="examples:\n  erp gl 1200\n  erp gl 1000 --since 2026-03-01\n")
    p.add_argument("account", metavar="ACCOUNT", help="account code, e.g. 1200")
    p.add_argument("--as-of", type=day, help="up to this date (default: business date)")
    p.add_argument("--since", type=day, help="list from this date (earlier lines are summed "
                   "into the opening balance)")
    p.add_argument("--format", choices=("table", "csv", "json"), default=argparse.SUPPRESS,
                   help=FORMAT_HELP)
    p.set_defaults(handler=lambda a: _get(f"/v1/gl/{_seg(a.account)}", as_of=a.as_of,
                                          since=a.since))
    v = _resource(sub, "accounts", "the chart of accounts",
                  "The chart of accounts: codes, names, types and control accounts.")
    _leaf(v, "list", "list accounts", "List the chart of accounts (code, name, type, control "
          "kind).", ["erp accounts list"], lambda a: _get("/v1/accounts"))
    v = _resource(sub, "periods", "accounting periods: list, open, close, reopen",
                  "Accounting periods. Opening, closing and reopening need the controller "
                  "role; a clerk gets 'forbidden_for_role'.")
    _leaf(v, "list", "list periods", "List periods and whether each is open or closed.",
          ["erp periods list"], lambda a: _get("/v1/periods"))
    p = _leaf(v, "open", "open a period (controller)", "Open an accounting period: YYYY-MM, or "
              "any name with --start and --end.", ["erp periods open 2026-05"],
              lambda a: _cmd("open-period", period=a.period, start=a.start, end=a.end))
    p.add_argument("period", metavar="PERIOD", help="YYYY-MM")
    p.add_argument("--start", type=day, help="first day (with --end)")
    p.add_argument("--end", type=day, help="last day (with --start)")
    p = _leaf(v, "close", "close a period (controller)",
              "Close an accounting period: nothing more posts into it (controller only).",
              ["erp periods close 2026-02"], lambda a: _cmd("close-period", period=a.period))
    p.add_argument("period", metavar="PERIOD", help="YYYY-MM")
    p = _leaf(v, "reopen", "reopen a closed period (controller)",
              "Reopen a closed accounting period, with a reason (controller only).",
              ["erp periods reopen 2026-02 --reason 'late invoice'"],
              lambda a: _cmd("reopen-period", period=a.period, reason=a.reason))
    p.add_argument("period", metavar="PERIOD", help="YYYY-MM")
    p.add_argument("--reason", required=True, help="why")
    _year_end_commands(v)

    # --- documents, audit, command ------------------------------------------------------
    v = _resource(sub, "documents", "any document by kind and id",
                  "Documents of every kind: invoice, receipt, credit_memo, refund, bill, "
                  "vendor_credit, payment, payment_run, statement_line, fee, interest, journal, "
                  "bank_change, period.")
    p = _leaf(v, "list", "list documents", "List documents, filtered by kind, status, party.",
              ["erp documents list --kind fee", "erp documents list --party C0001"],
              lambda a: _get("/v1/documents", kind=a.kind, status=a.status, party=a.party))
    p.add_argument("--kind", help="document kind")
    p.add_argument("--status", help="status")
    p.add_argument("--party", help="customer or vendor id")
    p = _leaf(v, "show", "one document with its history",
              "Show a document: state, what it was created with, history.",
              ["erp documents show invoice INV-0000001", "erp documents show fee FEE-0000001"],
              lambda a: _get(f"/v1/documents/{_seg(a.kind)}/{_seg(a.id)}"))
    p.add_argument("kind", metavar="KIND", help="document kind, e.g. invoice")
    p.add_argument("id", metavar="ID", help="document id")

    p = sub.add_parser("audit", help="your own audit trail",
                       description="List the events your own commands wrote in the books "
                                   "(position, date, command, event, stream).",
                       formatter_class=_formatter,
                       epilog="examples:\n  erp audit\n  erp audit --after 120 --format csv\n")
    p.add_argument("--after", type=int, help="only events after this log position")
    p.add_argument("--limit", type=int, help="at most this many events (default 1000)")
    p.add_argument("--format", choices=("table", "csv", "json"), default=argparse.SUPPRESS,
                   help=FORMAT_HELP)
    p.set_defaults(handler=lambda a: _get("/v1/audit", after=a.after, limit=a.limit))

    p = sub.add_parser("command", help="send any command as JSON (every command of the books)",
                       description="Send any command of the books with a JSON body: the escape "
                                   "hatch for what the other subcommands do not cover. NAME is "
                                   "the command's name (ApplyReceipt or apply-receipt); the "
                                   "body's fields are in the API's OpenAPI document "
                                   "(/openapi.json). Money fields are decimal strings. "
                                   "'erp command --list' lists the commands.",
                       formatter_class=_formatter,
                       epilog="examples:\n"
                              "  erp command --list\n"
                              "  erp command apply-receipt --fields\n"
                              "  erp command apply-receipt --json '{\"receipt_id\": "
                              "\"RCT-0000001\", \"invoice_id\": \"INV-0000001\", "
                              "\"amount\": \"100.00\"}'\n"
                              "  erp command post-journal-entry --json @entry.json\n"
                              "  echo '{\"bill_id\": \"BILL-0000001\"}' | erp command "
                              "approve-bill --json -\n")
    p.add_argument("name", metavar="NAME", nargs="?", help="command name")
    p.add_argument("--json", dest="body", help="the body: JSON text, @FILE, or - for stdin")
    p.add_argument("--list", action="store_true", help="list every command and exit")
    p.add_argument("--fields", action="store_true",
                   help="show the command's fields (name, type, required, default) and exit")
    p.add_argument("--format", choices=("table", "csv", "json"), default=argparse.SUPPRESS,
                   help=FORMAT_HELP)
    p.set_defaults(handler=_generic)
    _wrap_descriptions(parser)
    return parser


def _wrap_descriptions(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if child.description:
                    child.description = _wrap(child.description)
                _wrap_descriptions(child)


def _bank_args(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument("--account-name", required=required, help="name on the bank account")
    p.add_argument("--routing", required=required, help="routing number")
    p.add_argument("--account-number", required=required, help="account number")


def _bank(a: argparse.Namespace, *, required: bool) -> dict[str, str] | None:
    values = (a.account_name, a.routing, a.account_number)
    if not any(values) and not required:
        return None
    if not all(values):
        raise Failure("usage", "give all of --account-name, --routing and --account-number",
                      status=EXIT_USAGE)
    return {"account_name": a.account_name, "routing": a.routing,
            "account_number": a.account_number}


def _targets(a: argparse.Namespace) -> list[dict[str, str]]:
    targets = getattr(a, "targets", None)
    if not targets:
        raise Failure("usage", "name at least one document: --receipt, --payment, --refund, "
                      "--fee or --interest (see 'erp bank match --help')", status=EXIT_USAGE)
    return targets


def _bank_doc(cmd_name: str, id_field: str) -> _Handler:
    return lambda a: _cmd(cmd_name, bank_account_id=a.bank, amount=a.amount, entry_date=a.date,
                          line_id=a.line, memo=a.memo, account=a.account,
                          **{id_field: a.new_id})


def _kebab(name: str) -> str:
    name = name.strip().replace("_", "-")
    if "-" in name or name.islower():
        return name.lower()
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _type_of(prop: dict) -> tuple[str, str | None]:
    """A property's type for people, and the component it refers to (if any)."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return name, name
    if "anyOf" in prop:
        kinds = [_type_of(p) for p in prop["anyOf"] if p.get("type") != "null"]
        nested = next((n for _, n in kinds if n), None)
        return " or ".join(k for k, _ in kinds) + " (optional)", nested
    if prop.get("type") == "array":
        inner, nested = _type_of(prop.get("items", {}))
        return f"list of {inner}", nested
    if "enum" in prop:
        return "one of " + "|".join(str(e) for e in prop["enum"]), None
    if "const" in prop:
        return repr(prop["const"]), None
    if str(prop.get("description", "")).startswith("money"):
        return "money", None
    if prop.get("format") == "date":
        return "date", None
    return str(prop.get("type", "any")), None


def _fields_of(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def transform(doc: dict[str, Any]) -> dict[str, Any]:
        op = doc.get("paths", {}).get(f"/v1/commands/{name}", {}).get("post")
        if op is None:
            raise Failure("unknown_command", f"no command {name!r} (see 'erp command --list')")
        comps = doc.get("components", {}).get("schemas", {})
        rows: list[dict[str, object]] = []

        def walk(component: str, prefix: str, depth: int) -> None:
            schema = comps.get(component, {})
            required = set(schema.get("required", []))
            for field, prop in schema.get("properties", {}).items():
                kind, nested = _type_of(prop)
                default = prop.get("default")
                rows.append({"field": prefix + field, "type": kind,
                             "required": "yes" if field in required else "",
                             "default": "" if default is None else json.dumps(default),
                             "description": prop.get("description", "") if kind != "money"
                             else "decimal string, e.g. 1240.50"})
                if nested and depth < 3:
                    sep = "[]." if kind.startswith("list") else "."
                    walk(nested, prefix + field + sep, depth + 1)

        ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        walk(ref.rsplit("/", 1)[-1], "", 0)
        return {"command": ref.rsplit("/", 1)[-1], "summary": op.get("summary", ""),
                "items": rows, "count": len(rows)}
    return transform


def _generic(a: argparse.Namespace) -> tuple[object, ...]:
    if a.list:
        return _get("/v1/commands")
    if not a.name:
        raise Failure("usage", "name a command, or use --list (see 'erp command --help')",
                      status=EXIT_USAGE)
    if not re.match(r"^[A-Za-z][A-Za-z_-]{0,60}$", a.name):
        raise Failure("usage", f"{a.name!r} is not a command name (see 'erp command --list')",
                      status=EXIT_USAGE)
    if a.fields:
        return "GET", "/openapi.json", None, None, _fields_of(_kebab(a.name))
    text = a.body if a.body is not None else "{}"
    try:
        if text == "-":
            text = sys.stdin.read()
        elif text.startswith("@"):
            with open(text[1:], encoding="utf-8") as f:
                text = f.read()
        body = json.loads(text)
    except OSError as e:
        raise Failure("usage", f"cannot read {text[1:]}: {e.strerror}", status=EXIT_USAGE) from None
    except ValueError as e:
        raise Failure("invalid_json", f"--json is not valid JSON: {e}", status=EXIT_USAGE) from None
    if not isinstance(body, dict):
        raise Failure("invalid_json", "--json must be a JSON object", status=EXIT_USAGE)
    return "POST", f"/v1/commands/{_kebab(a.name)}", None, body


# --- main ---------------------------------------------------------------------------



# --- collections: dunning letters, disputes, promises to pay, credit holds ---------


def _collections_commands(sub: argparse._SubParsersAction[Parser]) -> None:
    """``erp dunning ...``, ``erp disputes ...``, ``erp promises ...``, ``erp credit-holds
    ...``: collecting overdue invoices."""
    v = _resource(sub, "dunning", "dunning letters: list, send",
                  "Dunning letters to customers for overdue invoices: level 1 from 1 day past "
                  "due, level 2 from 31, level 3 from 61 (dated your business date). The books "
                  "refuse a letter for a disputed invoice, one with a promise to pay still "
                  "running, and one that does not escalate past a level already sent.")
    p = _leaf(v, "list", "list dunning letters sent",
              "List dunning letters (status level_1, level_2, level_3; reference: the "
              "invoice; total: its open balance when sent).",
              ["erp dunning list --customer C0001"],
              lambda a: _get("/v1/dunning-letters", customer=a.customer, status=a.status))
    p.add_argument("--customer", help="only this customer's letters")
    p.add_argument("--status", help="only this level: level_1, level_2, level_3")
    p = _leaf(v, "send", "send a dunning letter for an invoice",
              "Send the invoice's customer a dunning letter of LEVEL (1, 2 or 3).",
              ["erp dunning send INV-000012 2"],
              lambda a: _cmd("send-dunning-letter", invoice_id=a.invoice, level=a.level,
                             letter_id=a.new_id))
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("level", metavar="LEVEL", type=int, choices=(1, 2, 3), help="1, 2 or 3")
    p.add_argument("--id", dest="new_id", help="letter id (default: the next free one)")
    v = _resource(sub, "disputes", "customer disputes: list, show, record, resolve",
                  "Customer disputes of invoices. A disputed invoice gets no dunning letter "
                  "until the dispute is resolved: by a credit memo (--credit AMOUNT) or "
                  "rejected (the customer owes the invoice).")
    p = _leaf(v, "list", "list disputes",
              "List disputes (status open, credited, rejected; reference: the invoice).",
              ["erp disputes list --status open"],
              lambda a: _get("/v1/disputes", customer=a.customer, status=a.status))
    p.add_argument("--customer", help="only this customer's disputes")
    p.add_argument("--status", help="only this status: open, credited, rejected")
    p = _leaf(v, "show", "one dispute with its history",
              "Show one dispute: the invoice, the amount disputed, its status and history.",
              ["erp disputes show DSP-000001"], _doc("dispute"))
    p.add_argument("id", metavar="DISPUTE", help="dispute id")
    p = _leaf(v, "record", "record a customer's dispute of an invoice",
              "Record a dispute of an invoice with the customer's reason (the whole open "
              "balance unless --amount says less).",
              ["erp disputes record INV-000012 --reason 'goods arrived damaged'"],
              lambda a: _cmd("record-dispute", invoice_id=a.invoice, reason=a.reason,
                             amount=a.amount, dispute_id=a.new_id))
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("--reason", required=True, help="the customer's reason")
    p.add_argument("--amount", type=money_arg, help="the amount disputed (default: all open)")
    p.add_argument("--id", dest="new_id", help="dispute id (default: the next free one)")
    p = _leaf(v, "resolve", "resolve a dispute by credit memo or reject it",
              "Resolve a dispute: --credit AMOUNT issues a credit memo for it (at most the "
              "amount disputed); --reject leaves the invoice owed.",
              ["erp disputes resolve DSP-000001 --credit 250.00 --reason 'damage confirmed'",
               "erp disputes resolve DSP-000002 --reject --reason 'delivery signed for'"],
              lambda a: _cmd("resolve-dispute", dispute_id=a.dispute,
                             resolution="rejected" if a.reject else "credit_memo",
                             amount=a.credit, reason=a.reason, account=a.account))
    p.add_argument("dispute", metavar="DISPUTE", help="dispute id")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--credit", type=money_arg, help="credit this amount by a credit memo")
    how.add_argument("--reject", action="store_true", help="reject the dispute")
    p.add_argument("--reason", required=True, help="why")
    p.add_argument("--account", help="the credit memo's account (default: sales returns)")
    v = _resource(sub, "promises", "promises to pay: list, record",
                  "Customers' promises to pay an invoice by a date. While a promise runs (its "
                  "date not passed and not paid) the invoice gets no dunning letter.")
    p = _leaf(v, "list", "list promises to pay",
              "List promises (due_on: the date promised; reference: the invoice).",
              ["erp promises list --customer C0001"],
              lambda a: _get("/v1/promises", customer=a.customer))
    p.add_argument("--customer", help="only this customer's promises")
    p = _leaf(v, "record", "record a promise to pay",
              "Record a customer's promise to pay AMOUNT of an invoice by --by (at most 30 "
              "days ahead).",
              ["erp promises record INV-000012 1200.00 --by 2026-06-19"],
              lambda a: _cmd("record-promise-to-pay", invoice_id=a.invoice, amount=a.amount,
                             pay_by=a.by, note=a.note, promise_id=a.new_id))
    p.add_argument("invoice", metavar="INVOICE", help="invoice id")
    p.add_argument("amount", metavar="AMOUNT", type=money_arg, help="amount promised")
    p.add_argument("--by", type=day, required=True, help="date promised YYYY-MM-DD")
    p.add_argument("--note", help="e.g. who promised, by which email")
    p.add_argument("--id", dest="new_id", help="promise id (default: the next free one)")
    v = _resource(sub, "credit-holds", "customer credit holds: list, place, release",
                  "Credit holds: a customer on hold cannot be invoiced above the hold's "
                  "limit (default 0.00). A clerk releases a hold once the customer has no "
                  "undisputed overdue invoice; a controller at any time.")
    p = _leaf(v, "list", "list credit holds", "List credit holds (status held, released).",
              ["erp credit-holds list --status held"],
              lambda a: _get("/v1/credit-holds", customer=a.customer, status=a.status))
    p.add_argument("--customer", help="only this customer's holds")
    p.add_argument("--status", help="only this status: held, released")
    p = _leaf(v, "place", "put a customer on credit hold",
              "Put a customer on credit hold, with the reason.",
              ["erp credit-holds place C0001 --reason 'INV-000012 61 days past due'"],
              lambda a: _cmd("place-credit-hold", customer_id=a.customer, reason=a.reason,
                             credit_limit=a.limit, hold_id=a.new_id))
    p.add_argument("customer", metavar="CUSTOMER", help="customer id")
    p.add_argument("--reason", required=True, help="why")
    p.add_argument("--limit", type=money_arg, help="most it may owe while held (default 0.00)")
    p.add_argument("--id", dest="new_id", help="hold id (default: the next free one)")
    p = _leaf(v, "release", "release a customer's credit hold",
              "Release a customer's credit hold, with the reason.",
              ["erp credit-holds release C0001 --reason 'paid in full'"],
              lambda a: _cmd("release-credit-hold", customer_id=a.customer, reason=a.reason))
    p.add_argument("customer", metavar="CUSTOMER", help="customer id")
    p.add_argument("--reason", required=True, help="why")


# --- purchasing: purchase orders, goods receipts, three-way match, holds -------------


def _po_line(text: str) -> dict[str, object]:
    """``ITEM:QTY:UNIT_PRICE[:ACCOUNT[:DESCRIPTION]]`` (ACCOUNT may be empty)."""
    parts = text.split(":", 4)
    if len(parts) < 3 or not parts[1].strip().isdigit() or not parts[0].strip():
        raise argparse.ArgumentTypeError(
            f"{text!r}: write a purchase-order line as ITEM:QTY:UNIT_PRICE[:ACCOUNT"
            "[:DESCRIPTION]], for example TONER-12:10:25.00::Printer toner")
    line: dict[str, object] = {"item": parts[0].strip(), "quantity": int(parts[1]),
                               "unit_price": money_arg(parts[2])}
    if len(parts) > 3 and parts[3].strip():
        line["account"] = parts[3].strip()
    if len(parts) > 4:
        line["description"] = parts[4].strip()
    return line


def _numbered_line(text: str, priced: bool) -> dict[str, object]:
    parts = text.split(":")
    want = 3 if priced else 2
    if len(parts) != want or not all(p.strip().isdigit() for p in parts[:2]):
        shape = "LINE:QTY:UNIT_PRICE (for example 2:8:25.40)" if priced else \
            "LINE:QTY (for example 2:8)"
        raise argparse.ArgumentTypeError(f"{text!r}: write the PO line number and quantity as "
                                         f"{shape}")
    line: dict[str, object] = {"line": int(parts[0]), "quantity": int(parts[1])}
    if priced:
        line["unit_price"] = money_arg(parts[2])
    return line


def _purchasing_commands(sub: argparse._SubParsersAction[Parser]) -> None:
    """``erp purchase-orders ...`` and ``erp bill-holds ...``."""
    v = _resource(sub, "purchase-orders",
                  "purchase orders: list, lines, show, issue, receive, bill, receipts",
                  "Purchase orders (PO), the goods received against them, and vendor bills "
                  "matched to both (three-way match). A matched bill posts to 2050 Goods "
                  "received not invoiced; one outside the company's price or quantity "
                  "tolerance is put on hold and cannot be paid until an approver releases it.")
    p = _leaf(v, "list", "list purchase orders",
              "List purchase orders; open_amount is the value still to be received.",
              ["erp purchase-orders list --vendor V0001"],
              lambda a: _get("/v1/purchase-orders", vendor=a.vendor, status=a.status))
    p.add_argument("--vendor", help="only this vendor's purchase orders")
    p.add_argument("--status", help="only this status: open, partially_received, received")
    p = _leaf(v, "lines", "purchase-order lines: ordered, received, billed",
              "List every purchase-order line with the quantities ordered, received and "
              "billed, and the value received and not invoiced.",
              ["erp purchase-orders lines --po PO-000001"],
              lambda a: _get("/v1/purchase-orders/lines", po=a.po, vendor=a.vendor))
    p.add_argument("--po", help="only this purchase order")
    p.add_argument("--vendor", help="only this vendor's lines")
    p = _leaf(v, "show", "one purchase order with its history",
              "Show one purchase order: vendor, total, what is left to receive, history.",
              ["erp purchase-orders show PO-000001"], _doc("purchase_order"))
    p.add_argument("id", metavar="PO", help="purchase order id")
    p = _leaf(v, "issue", "issue a purchase order to a vendor",
              "Issue a purchase order. Each --line is ITEM:QTY:UNIT_PRICE[:ACCOUNT"
              "[:DESCRIPTION]]; lines are numbered 1, 2, ... in the order given.",
              ["erp purchase-orders issue V0001 --date 2026-07-01 --line TONER-12:10:25.00"],
              lambda a: _cmd("issue-purchase-order", vendor_id=a.vendor, order_date=a.date,
                             expected_on=a.expected, lines=a.line, po_id=a.new_id))
    p.add_argument("vendor", metavar="VENDOR", help="vendor id")
    p.add_argument("--date", type=day, required=True, help="order date YYYY-MM-DD")
    p.add_argument("--line", type=_po_line, action="append", required=True,
                   help="ITEM:QTY:UNIT_PRICE[:ACCOUNT[:DESCRIPTION]] (repeat for more lines)")
    p.add_argument("--expected", type=day, help="expected delivery date YYYY-MM-DD")
    p.add_argument("--id", dest="new_id", help="PO id (default: the next free one)")
    p = _leaf(v, "receive", "record goods received against a purchase order",
              "Record a goods receipt (a receiving report): each --line is LINE:QTY, the PO "
              "line number and the quantity received. More than ordered is refused.",
              ["erp purchase-orders receive PO-000001 --date 2026-07-06 --line 1:8 "
               "--ref RR-1042"],
              lambda a: _cmd("record-goods-receipt", po_id=a.po, entry_date=a.date,
                             lines=a.line, reference=a.ref, receipt_id=a.new_id))
    p.add_argument("po", metavar="PO", help="purchase order id")
    p.add_argument("--date", type=day, required=True, help="date received YYYY-MM-DD")
    p.add_argument("--line", type=lambda t: _numbered_line(t, False), action="append",
                   required=True, help="LINE:QTY (repeat for more lines)")
    p.add_argument("--ref", help="the receiving report's or packing slip's number")
    p.add_argument("--id", dest="new_id", help="goods receipt id (default: the next free one)")
    p = _leaf(v, "bill", "enter a vendor invoice matched to a purchase order",
              "Enter a vendor's invoice against a purchase order: each --line is "
              "LINE:QTY:UNIT_PRICE as the invoice bills it. The books match it to the PO and "
              "the goods received; outside tolerance the bill is put on hold.",
              ["erp purchase-orders bill PO-000001 INV-2291 --date 2026-07-08 --line 1:8:25.40"],
              lambda a: _cmd("enter-matched-bill", po_id=a.po, vendor_invoice_number=a.number,
                             entry_date=a.date, due_on=a.due, lines=a.line, bill_id=a.new_id))
    p.add_argument("po", metavar="PO", help="purchase order id")
    p.add_argument("number", metavar="VENDOR_INVOICE_NUMBER", help="the vendor's invoice number")
    p.add_argument("--date", type=day, required=True, help="invoice date YYYY-MM-DD")
    p.add_argument("--line", type=lambda t: _numbered_line(t, True), action="append",
                   required=True, help="LINE:QTY:UNIT_PRICE (repeat for more lines)")
    p.add_argument("--due", type=day, help="due date (default: date + vendor's terms)")
    p.add_argument("--id", dest="new_id", help="bill id (default: the next free one)")
    p = _leaf(v, "receipts", "list goods receipts",
              "List goods receipts (the po column names the purchase order).",
              ["erp purchase-orders receipts --vendor V0001"],
              lambda a: _get("/v1/goods-receipts", vendor=a.vendor))
    p.add_argument("--vendor", help="only this vendor's receipts")
    h = _resource(sub, "bill-holds", "bills on hold from the three-way match: list, release",
                  "Bills the three-way match put on hold (price or quantity outside the "
                  "company's tolerance). A held bill cannot be paid; an approver (controller) "
                  "releases the hold with a reason.")
    p = _leaf(h, "list", "list bill holds", "List bill holds (status held or released).",
              ["erp bill-holds list --status held"],
              lambda a: _get("/v1/bill-holds", vendor=a.vendor, status=a.status))
    p.add_argument("--vendor", help="only this vendor's holds")
    p.add_argument("--status", help="only this status: held, released")
    p = _leaf(h, "release", "release a bill's hold (controller)",
              "Release a bill's hold, with the reason (role controller).",
              ["erp bill-holds release BILL-000003 --reason 'price increase agreed by "
               "purchasing'"],
              lambda a: _cmd("release-bill-hold", bill_id=a.bill, reason=a.reason))
    p.add_argument("bill", metavar="BILL", help="bill id")
    p.add_argument("--reason", required=True, help="why the hold is released")


# --- accruals and prepaids -------------------------------------------------------


def _accruals_commands(sub: argparse._SubParsersAction[Parser]) -> None:
    """``erp accruals ...`` and ``erp prepaids ...``."""
    v = _resource(sub, "accruals", "month-end accruals: list, post, reverse",
                  "Accruals: journal entries the books flag to reverse on the first day of the "
                  "next period, and the run that reverses a period's accruals there.")
    _leaf(v, "list", "list accruals (status due or reversed)",
          "List accruals: the entry, its period (reference), the day it reverses (due_on) "
          "and whether it was reversed.",
          ["erp accruals list"], lambda a: _get("/v1/documents", kind="accrual"))
    p = _leaf(v, "post", "post an accrual, reversing next period",
              "Post a balanced journal entry as an accrual of its period; the books flag it "
              "to reverse on the first day of the next period. Each --line is "
              "ACCOUNT:DEBIT:CREDIT[:PARTY[:MEMO]].",
              ["erp accruals post --date 2026-05-31 --memo 'Accrue cleaning May' "
               "--line 6000:4400.00::V001 --line 2100::4400.00:V001"],
              lambda a: _cmd("post-accrual", entry_date=a.date, memo=a.memo, lines=a.line,
                             entry_id=a.new_id))
    p.add_argument("--date", type=day, required=True, help="entry date (the month's last day)")
    p.add_argument("--memo", required=True, help="what the accrual is for")
    p.add_argument("--line", type=journal_line, action="append", required=True,
                   help="ACCOUNT:DEBIT:CREDIT[:PARTY[:MEMO]] (at least two)")
    p.add_argument("--id", dest="new_id", help="entry id (default: the next free one)")
    p = _leaf(v, "reverse", "reverse a period's accruals on the next period's first day",
              "Reverse every accrual of PERIOD not yet reversed (or only the --entry ones), "
              "dated the first day of the next period. A second run is refused.",
              ["erp accruals reverse 2026-05", "erp accruals reverse 2026-05 --entry JE-000004"],
              lambda a: _cmd("reverse-accruals", period=a.period, entry_ids=a.entry,
                             memo=a.memo))
    p.add_argument("period", metavar="PERIOD", help="the accruals' period, YYYY-MM")
    p.add_argument("--entry", action="append", help="only this accrual (repeat for more)")
    p.add_argument("--memo", help="memo of the reversals")
    v = _resource(sub, "prepaids", "prepaid schedules: list, record, amortize",
                  "Prepaid expenses: a schedule spreads a bill's line on a prepaid account over "
                  "months; the amortization run posts each schedule's month once (Dr the "
                  "expense account, Cr the prepaid account; the last month takes the cents "
                  "left over).")
    _leaf(v, "list", "list prepaid schedules (open_amount: not amortized yet)",
          "List prepaid schedules: vendor, prepaid account, amount, what is not amortized "
          "yet (open_amount) and the bill (reference).",
          ["erp prepaids list"], lambda a: _get("/v1/documents", kind="prepaid"))
    p = _leaf(v, "record", "record a prepaid schedule for a bill",
              "Record a schedule for a bill's line on a prepaid account: the amount, the "
              "expense account, the first month and --months or --end (the last month).",
              ["erp prepaids record BILL-000002 --account 1300 --expense-account 6000 "
               "--amount 12000.00 --start 2026-05 --months 12"],
              lambda a: _cmd("record-prepaid", bill_id=a.bill, account=a.account,
                             expense_account=a.expense_account, amount=a.amount,
                             start_period=a.start, months=a.months, end_period=a.end,
                             description=a.description, schedule_id=a.new_id))
    p.add_argument("bill", metavar="BILL", help="bill id")
    p.add_argument("--account", required=True, help="the prepaid account the bill's line is on")
    p.add_argument("--expense-account", required=True, help="where the months are expensed")
    p.add_argument("--amount", type=money_arg, required=True, help="amount, e.g. 12000.00")
    p.add_argument("--start", required=True, help="first month YYYY-MM")
    p.add_argument("--months", type=int, help="number of months")
    p.add_argument("--end", help="last month YYYY-MM (instead of --months)")
    p.add_argument("--description", help="what the prepaid is")
    p.add_argument("--id", dest="new_id", help="schedule id (default: the next free one)")
    p = _leaf(v, "amortize", "post a period's month of every running schedule",
              "Run the amortization of PERIOD: each schedule running in it posts its month "
              "once, dated the period's last day (or only the --schedule ones).",
              ["erp prepaids amortize 2026-05"],
              lambda a: _cmd("run-amortization", period=a.period, schedule_ids=a.schedule))
    p.add_argument("period", metavar="PERIOD", help="the month, YYYY-MM")
    p.add_argument("--schedule", action="append", help="only this schedule (repeat for more)")


# --- several bank accounts: transfers, a company card, bank errors -----------------


def _bank_multi_commands(sub: argparse._SubParsersAction[Parser]) -> None:
    """``erp transfers ...``, ``erp card ...`` and ``erp bank-errors ...``."""
    v = _resource(sub, "transfers", "transfers between bank accounts: list, send, receive",
                  "Transfers between the company's bank accounts: sending moves the amount out "
                  "of the sending account into 1090 Transfers in transit; receiving moves it "
                  "from in-transit into the receiving account on the day it arrives.")
    _leaf(v, "list", "list transfers sent (open_amount: still in transit)",
          "List the transfers sent: the receiving account (party), the sending account "
          "(reference) and what is still in transit (open_amount).",
          ["erp transfers list"], lambda a: _get("/v1/documents", kind="transfer_out"))
    p = _leaf(v, "send", "send money from one bank account to another",
              "Record a transfer leaving --from on --date for --to, matched to the sending "
              "account's statement line with --line.",
              ["erp transfers send --from B-SAVE --to B-OPER --amount 25000.00 "
               "--date 2026-05-28 --line BL-000041"],
              lambda a: _cmd("transfer-funds", from_bank_account_id=a.source,
                             to_bank_account_id=a.dest, amount=a.amount, entry_date=a.date,
                             memo=a.memo, line_id=a.line, transfer_id=a.new_id))
    p.add_argument("--from", dest="source", required=True, help="sending bank account id")
    p.add_argument("--to", dest="dest", required=True, help="receiving bank account id")
    p.add_argument("--amount", type=money_arg, required=True, help="amount, e.g. 25000.00")
    p.add_argument("--date", type=day, required=True, help="the day it left the account")
    p.add_argument("--memo", help="what the transfer is for")
    p.add_argument("--line", help="the sending account's statement line")
    p.add_argument("--id", dest="new_id", help="transfer id (default: the next free one)")
    p = _leaf(v, "receive", "record a transfer's arrival",
              "Record that TRANSFER arrived in its receiving account on --date, matched to "
              "that account's statement line with --line.",
              ["erp transfers receive TRF-000001 --date 2026-05-29 --line BL-000044"],
              lambda a: _cmd("receive-transfer", transfer_id=a.transfer, entry_date=a.date,
                             line_id=a.line))
    p.add_argument("transfer", metavar="TRANSFER", help="transfer id")
    p.add_argument("--date", type=day, required=True, help="the day it arrived")
    p.add_argument("--line", help="the receiving account's statement line")
    v = _resource(sub, "card", "the company card: list charges, record a charge",
                  "The company card is a liability bank account (2060): each charge is "
                  "recorded to its expense account; the statement is paid by a transfer from "
                  "the operating account (erp transfers send).")
    _leaf(v, "list", "list card charges",
          "List the card charges recorded: expense account, amount, merchant (reference).",
          ["erp card list"], lambda a: _get("/v1/documents", kind="card_charge"))
    p = _leaf(v, "charge", "record a card charge",
              "Record a charge on the card account --card to --account, matched to its card "
              "statement line with --line.",
              ["erp card charge --card B-CARD --date 2026-05-12 --amount 84.20 --account 6450 "
               "--merchant 'Staples' --line BL-000051"],
              lambda a: _cmd("record-card-charge", bank_account_id=a.card, entry_date=a.date,
                             amount=a.amount, account=a.account, merchant=a.merchant,
                             memo=a.memo, line_id=a.line, charge_id=a.new_id))
    p.add_argument("--card", required=True, help="the card's bank account id")
    p.add_argument("--date", type=day, required=True, help="the charge's date")
    p.add_argument("--amount", type=money_arg, required=True, help="amount, e.g. 84.20")
    p.add_argument("--account", required=True, help="expense account")
    p.add_argument("--merchant", help="the merchant")
    p.add_argument("--memo", help="what it was for")
    p.add_argument("--line", help="the card statement line")
    p.add_argument("--id", dest="new_id", help="charge id (default: the next free one)")
    v = _resource(sub, "bank-errors", "bank errors: list, report",
                  "A statement line that is the bank's mistake (a charge posted twice, another "
                  "client's deposit) is reported to the bank, not booked: it stays a reconciling "
                  "item until the bank corrects it.")
    _leaf(v, "list", "list bank errors reported",
          "List the bank errors reported: bank account, signed amount, the statement line "
          "(reference).",
          ["erp bank-errors list"], lambda a: _get("/v1/documents", kind="bank_error"))
    p = _leaf(v, "report", "report a statement line as the bank's error",
              "Report LINE to the bank as its error, with what is wrong; nothing is posted.",
              ["erp bank-errors report BL-000060 --description 'service charge posted twice'"],
              lambda a: _cmd("report-bank-error", line_id=a.line, description=a.description,
                             error_id=a.new_id))
    p.add_argument("line", metavar="LINE", help="statement line id")
    p.add_argument("--description", required=True, help="what the bank got wrong")
    p.add_argument("--id", dest="new_id", help="error id (default: the next free one)")
    v = _resource(sub, "statements", "bank statements: import a statement file",
                  "Import a bank's statement file (CSV: date, line_id, description, reference, "
                  "counterparty, amount, balance; the opening and closing balance rows are "
                  "skipped) as statement lines of one bank account, each under the bank's "
                  "own line id.")
    p = _leaf(v, "import", "import a statement CSV as one account's statement lines",
              "Import FILE's lines on bank account --bank (the bank's line ids are kept).",
              ["erp statements import inbox/DOC-000002-savings-statement-2026-05.csv "
               "--bank B-SAVE"],
              lambda a: _cmd("import-statement-lines", bank_account_id=a.bank,
                             lines=statement_file_lines(a.file)))
    p.add_argument("file", metavar="FILE", help="the statement CSV")
    p.add_argument("--bank", required=True, help="the bank account id it is the statement of")


def statement_file_lines(path: str) -> list[dict[str, str]]:
    """The lines of a bank's statement CSV as ``ImportStatementLines`` takes them."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise Failure("invalid_parameter", f"cannot read {path}: {e}", "file") from None
    need = {"date", "line_id", "description", "reference", "counterparty", "amount"}
    if not rows or not need <= set(rows[0]):
        raise Failure("invalid_parameter", f"{path}: expected a statement CSV with columns "
                      f"{', '.join(sorted(need))}", "file")
    return [{"line_id": r["line_id"], "entry_date": r["date"], "amount": r["amount"],
             "description": r["description"], "reference": r["reference"],
             "counterparty": r["counterparty"]} for r in rows if r["line_id"]]


# --- fixed assets ----------------------------------------------------------------


def _fixed_asset_commands(sub: argparse._SubParsersAction[Parser]) -> None:
    """``erp assets ...``: the fixed-asset register."""
    v = _resource(sub, "assets", "fixed assets: list, capitalize, depreciate, dispose",
                  "Fixed assets: capitalizing moves a bill line's (or a journal entry's) amount "
                  "from the account it was booked on to its class's cost account; the "
                  "depreciation run posts each asset's straight-line month once (Dr "
                  "depreciation expense, Cr accumulated depreciation; the last month takes the "
                  "cents left over); a disposal removes cost and accumulated depreciation and "
                  "books the gain or loss.")
    _leaf(v, "list", "list fixed assets (open_amount: net book value)",
          "List fixed assets: the class (reference), cost account, cost, net book value "
          "(open_amount), in-service date (due_on) and status (in_service, "
          "fully_depreciated, disposed).",
          ["erp assets list"], lambda a: _get("/v1/documents", kind="fixed_asset"))
    p = _leaf(v, "capitalize", "capitalize a bill line or journal amount as an asset",
              "Capitalize AMOUNT of what --bill (or --entry) put on --account as an asset of "
              "--class, in service from --in-service, depreciated over --life months to "
              "--salvage.",
              ["erp assets capitalize --bill BILL-000003 --account 6000 --amount 8400.00 "
               "--class equipment --date 2026-05-31 --in-service 2026-05-12 --life 60"],
              lambda a: _cmd("capitalize-asset", class_id=a.asset_class, bill_id=a.bill,
                             entry_id=a.entry, source_account=a.account, amount=a.amount,
                             entry_date=a.date, in_service_date=a.in_service,
                             life_months=a.life, salvage=a.salvage,
                             description=a.description, asset_id=a.new_id))
    p.add_argument("--class", dest="asset_class", required=True, help="asset class id")
    p.add_argument("--bill", help="the bill whose line is capitalized")
    p.add_argument("--entry", help="or the journal entry")
    p.add_argument("--account", required=True, help="the account the amount was booked on")
    p.add_argument("--amount", type=money_arg, required=True, help="cost, e.g. 8400.00")
    p.add_argument("--date", type=day, required=True, help="entry date")
    p.add_argument("--in-service", type=day, required=True, help="date placed in service")
    p.add_argument("--life", type=int, required=True, help="useful life in months")
    p.add_argument("--salvage", type=money_arg, help="salvage value (default 0.00)")
    p.add_argument("--description", help="what the asset is")
    p.add_argument("--id", dest="new_id", help="asset id (default: the next free one)")
    p = _leaf(v, "depreciate", "post a period's month of every asset in service",
              "Run the depreciation of PERIOD: each asset in service and not fully "
              "depreciated posts its month once, dated the period's last day (or only the "
              "--asset ones).",
              ["erp assets depreciate 2026-05"],
              lambda a: _cmd("run-depreciation", period=a.period, asset_ids=a.asset))
    p.add_argument("period", metavar="PERIOD", help="the month, YYYY-MM")
    p.add_argument("--asset", action="append", help="only this asset (repeat for more)")
    p = _leaf(v, "dispose", "dispose of (sell or scrap) an asset",
              "Dispose of ASSET on --date: its cost and accumulated depreciation leave the "
              "books, --proceeds go on --proceeds-account, the gain or loss on "
              "--gain-loss-account.",
              ["erp assets dispose FA-000001 --date 2026-06-20 --proceeds 1500.00 "
               "--proceeds-account 1250 --gain-loss-account 4800 --reference 'bill of sale'"],
              lambda a: _cmd("dispose-asset", asset_id=a.asset_id, entry_date=a.date,
                             proceeds=a.proceeds, proceeds_account=a.proceeds_account,
                             gain_loss_account=a.gain_loss_account, reference=a.reference))
    p.add_argument("asset_id", metavar="ASSET", help="asset id")
    p.add_argument("--date", type=day, required=True, help="disposal date")
    p.add_argument("--proceeds", type=money_arg, help="what the buyer pays (default 0.00)")
    p.add_argument("--proceeds-account", required=True, help="where the proceeds go")
    p.add_argument("--gain-loss-account", required=True, help="gain or loss on disposal")
    p.add_argument("--reference", help="e.g. the bill of sale's number")


# --- year-end close --------------------------------------------------------------


def _year_end_commands(v: argparse._SubParsersAction[Parser]) -> None:
    """``erp periods close-year``: the year-end close into retained earnings."""
    p = _leaf(v, "close-year", "close a fiscal year into retained earnings (controller)",
              "Close fiscal year YEAR (a calendar year): once every period of it is closed, "
              "one closing entry dated its last day brings each revenue and expense account "
              "to zero and puts the net income on --retained-earnings (controller only).",
              ["erp periods close-year 2026 --retained-earnings 3100"],
              lambda a: _cmd("close-fiscal-year", fiscal_year=a.year,
                             retained_earnings=a.retained_earnings, memo=a.memo))
    p.add_argument("year", metavar="YEAR", help="the fiscal year, YYYY")
    p.add_argument("--retained-earnings", required=True,
                   help="the retained-earnings (equity) account, e.g. 3100")
    p.add_argument("--memo", help="the closing entry's memo")



# --- payroll and sales tax -------------------------------------------------------


def payroll_row(text: str) -> dict[str, object]:
    """``EMPLOYEE:GROSS:WITHHELD:EMPLOYER_TAXES:NET[:NAME]`` (a payroll register's row)."""
    parts = text.split(":", 5)
    if len(parts) < 5 or not parts[0].strip():
        raise argparse.ArgumentTypeError(
            f"{text!r}: write a register row as EMPLOYEE:GROSS:WITHHELD:EMPLOYER_TAXES:NET"
            "[:NAME], for example E104:3000.00:612.50:229.50:2387.50:Dana Lee")
    row: dict[str, object] = {"employee_id": parts[0].strip()}
    for key, value in zip(("gross", "withheld", "employer_taxes", "net"), parts[1:5],
                          strict=True):
        row[key] = money_arg(value)
    if len(parts) == 6 and parts[5].strip():
        row["name"] = parts[5].strip()
    return row


def _payroll_tax_commands(sub: argparse._SubParsersAction[Parser]) -> None:
    """``erp payroll ...`` and ``erp sales-tax ...``."""
    v = _resource(sub, "payroll", "payroll registers: list, post",
                  "Payroll: a provider's register is posted as one journal: Dr wages (gross), "
                  "Dr employer payroll taxes, Cr withholdings payable, Cr employer taxes "
                  "payable, Cr the bank (net pay). Every row must tie (net = gross - "
                  "withheld); the register's totals, when given, must be the rows' sum.")
    _leaf(v, "list", "list posted payroll registers",
          "List posted registers: the register id, gross wages (total), pay date (doc_date), "
          "period end (due_on) and the pay period (reference).",
          ["erp payroll list"], lambda a: _get("/v1/payroll-registers"))
    p = _leaf(v, "post", "post a payroll register",
              "Post register REGISTER paid on --date for the pay period --from to --to out of "
              "--bank, one --row per employee.",
              ["erp payroll post PR-2026-05-15 --date 2026-05-15 --from 2026-05-01 "
               "--to 2026-05-15 --bank BA-OPER --row E104:3000.00:612.50:229.50:2387.50 "
               "--gross-total 3000.00 --net-total 2387.50"],
              lambda a: _cmd("post-payroll", register_id=a.register_id, entry_date=a.date,
                             period_start=a.period_start, period_end=a.period_end,
                             bank_account_id=a.bank, lines=a.row, gross_total=a.gross_total,
                             net_total=a.net_total, wage_account=a.wage_account,
                             employer_tax_account=a.employer_tax_account,
                             withholding_account=a.withholding_account,
                             employer_tax_payable_account=a.employer_tax_payable_account,
                             memo=a.memo))
    p.add_argument("register_id", metavar="REGISTER", help="the register's id (as printed)")
    p.add_argument("--date", type=day, required=True, help="pay date")
    p.add_argument("--from", dest="period_start", type=day, required=True,
                   help="first day of the pay period")
    p.add_argument("--to", dest="period_end", type=day, required=True,
                   help="last day of the pay period")
    p.add_argument("--bank", required=True, help="bank account id net pay leaves from")
    p.add_argument("--row", type=payroll_row, action="append", required=True,
                   help="EMPLOYEE:GROSS:WITHHELD:EMPLOYER_TAXES:NET[:NAME] (repeat)")
    p.add_argument("--gross-total", type=money_arg, help="the register's gross total")
    p.add_argument("--net-total", type=money_arg, help="the register's net pay total")
    p.add_argument("--wage-account", help="wages expense (default 6400)")
    p.add_argument("--employer-tax-account", help="employer payroll taxes (default 6410)")
    p.add_argument("--withholding-account", help="withholdings payable (default 2300)")
    p.add_argument("--employer-tax-payable-account",
                   help="employer taxes payable (default 2310)")
    p.add_argument("--memo", help="memo")
    p = _leaf(v, "reverse", "reverse a posted payroll register",
              "Reverse REGISTER's journal on --date (every line negated); the corrected "
              "register can then be posted under the same id.",
              ["erp payroll reverse PR-2026-05-15 --date 2026-05-18"],
              lambda a: _cmd("reverse-payroll", register_id=a.register_id, entry_date=a.date,
                             memo=a.memo))
    p.add_argument("register_id", metavar="REGISTER", help="the posted register's id")
    p.add_argument("--date", type=day, required=True, help="reversal date")
    p.add_argument("--memo", help="why")
    t = _resource(sub, "sales-tax", "sales tax: returns, payments, file, remit",
                  "Sales tax: invoices carry tax at the jurisdiction's rate on 2200. A month's "
                  "return states its gross sales, taxable sales (invoices that carry tax) and "
                  "the tax due, which must be the books' figures; a remittance pays a filed "
                  "return from the bank (Dr 2200, Cr bank), at most what it leaves unpaid.")
    _leaf(t, "returns", "list filed returns (open_amount: tax unpaid)",
          "List filed returns: the jurisdiction (party), the month (reference), the tax due "
          "(total), what is unpaid (open_amount), the due date (due_on) and status (filed, "
          "partially_paid, paid).", ["erp sales-tax returns"],
          lambda a: _get("/v1/tax-returns"))
    _leaf(t, "payments", "list sales-tax payments",
          "List sales-tax payments: the jurisdiction, the amount, the date and the return "
          "paid (reference).", ["erp sales-tax payments"], lambda a: _get("/v1/tax-payments"))
    p = _leaf(t, "file", "file a month's sales-tax return",
              "File JURISDICTION's return for PERIOD on --date with the month's gross sales, "
              "taxable sales and tax due.",
              ["erp sales-tax file ST-EX 2026-05 --date 2026-06-01 --gross-sales 48210.00 "
               "--taxable-sales 41000.00 --tax-due 2972.50"],
              lambda a: _cmd("file-sales-tax-return", jurisdiction_id=a.jurisdiction,
                             period=a.period, entry_date=a.date, gross_sales=a.gross_sales,
                             taxable_sales=a.taxable_sales, tax_due=a.tax_due,
                             return_id=a.new_id))
    p.add_argument("jurisdiction", metavar="JURISDICTION", help="jurisdiction id")
    p.add_argument("period", metavar="PERIOD", help="the month, YYYY-MM")
    p.add_argument("--date", type=day, required=True, help="filing date")
    p.add_argument("--gross-sales", type=money_arg, required=True, help="the month's sales")
    p.add_argument("--taxable-sales", type=money_arg, required=True, help="the taxable part")
    p.add_argument("--tax-due", type=money_arg, required=True, help="the tax due")
    p.add_argument("--id", dest="new_id", help="return id (default: the next free one)")
    p = _leaf(t, "remit", "pay a filed return's tax to the authority",
              "Pay --amount of RETURN's tax from --bank on --date.",
              ["erp sales-tax remit STR-000001 --bank BA-OPER --date 2026-06-01 "
               "--amount 2972.50"],
              lambda a: _cmd("remit-sales-tax", return_id=a.return_id, bank_account_id=a.bank,
                             entry_date=a.date, amount=a.amount, payment_id=a.new_id))
    p.add_argument("return_id", metavar="RETURN", help="the return's id")
    p.add_argument("--bank", required=True, help="bank account id")
    p.add_argument("--date", type=day, required=True, help="payment date")
    p.add_argument("--amount", type=money_arg, required=True, help="amount paid")
    p.add_argument("--id", dest="new_id", help="payment id (default: the next free one)")


_PARSER: list[Parser] = []


def get_parser() -> Parser:
    """The command tree, built once per process."""
    if not _PARSER:
        _PARSER.append(build_parser())
    return _PARSER[0]


def run_command(argv: list[str]) -> int:
    """Parse, call the API, print; raise ``Failure`` on any error."""
    parser = get_parser()
    if not argv or argv[0] in ("help",):
        sys.stdout.write(parser.format_help())
        return EXIT_OK
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        res = getattr(args, "resource_parser", None)
        if res is not None:
            verbs = [a for a in res._actions if isinstance(a, argparse._SubParsersAction)]
            names = ", ".join(verbs[0].choices) if verbs else ""
            raise Failure("usage", f"'erp {args.resource}' needs a verb: {names} (see "
                          f"'erp {args.resource} --help')", status=EXIT_USAGE)
        raise Failure("usage", "name a resource (see 'erp --help')", status=EXIT_USAGE)
    method, path, params, body, *more = handler(args)
    transform = more[0] if more else None
    fmt = args.format
    api, token = find_connection()
    try:
        timeout = float(os.environ.get("ERPSIM_TIMEOUT", "") or DEFAULT_TIMEOUT)
    except ValueError:
        timeout = DEFAULT_TIMEOUT
    client = Client(api, token, timeout)
    if method == "GET" and fmt == "csv" and transform is None:
        params = {**(params or {}), "format": "csv"}
    ctype, payload = client.call(method, path, params, body)
    text = payload.decode("utf-8")
    if "text/csv" in ctype:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        data = json.loads(text) if text else None
    except ValueError:
        sys.stdout.write(text)
        return EXIT_OK
    if transform is not None:
        data = transform(data)
    sys.stdout.write(render(data, fmt))
    return EXIT_OK


def client_main(argv: list[str] | None = None) -> int:
    """Run the client; errors are one line on stderr and a non-zero status."""
    args = sys.argv[1:] if argv is None else argv
    try:
        return run_command(args)
    except Failure as f:
        sys.stderr.write(f.line() + "\n")
        return f.status
    except KeyboardInterrupt:
        sys.stderr.write("erp: interrupted\n")
        return 130
    except BrokenPipeError:
        # Silence the flush at exit: the reader is gone.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # never a traceback for the agent
        sys.stderr.write(f"erp: client_error: {type(e).__name__}: {e}\n")
        return EXIT_REFUSED


def console_main() -> None:
    """Console-script entry point."""
    sys.exit(client_main())


if __name__ == "__main__":
    sys.exit(client_main())

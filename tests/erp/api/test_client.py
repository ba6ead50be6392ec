"""The ``erp`` client: a standalone stdlib script driving the real API over a real socket."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import erp.api.client
from erp.api.client import build_parser, client_main
from erp.api.server import ApiServer, TokenRegistry, create_app
from erp.ledger import Ledger
from tests.erp.api.test_api import CLERK_ACTOR, WORLD_MARKER, Running, build_books, short_dir
from tests.erp.helpers import DAY

CLI = Path(erp.api.client.__file__).resolve()


@pytest.fixture(scope="module")
def api() -> Iterator[Running]:
    work = short_dir()
    ledger = Ledger.open(os.path.join(work, "books.db"), create=True)
    build_books(ledger)
    tokens = TokenRegistry()
    server = ApiServer(create_app(ledger, tokens), uds=Path(work) / "api.sock").start()
    clerk = tokens.issue(CLERK_ACTOR, "clerk", DAY)
    controller = tokens.issue("human:controller", "controller", DAY)
    try:
        yield Running(ledger, tokens, server, clerk, controller, work)
    finally:
        server.stop()
        ledger.close()
        shutil.rmtree(work, ignore_errors=True)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERPSIM_")}
    env.update(extra)
    return env


def erp_cmd(api: Running | None, *args: str, token: str | None = None, url: str | None = None,
            cwd: str | Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real client as a subprocess."""
    if env is None:
        assert api is not None
        env = clean_env(ERPSIM_API=url or api.url, ERPSIM_TOKEN=token or api.clerk)
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60, check=False)


def erp_inproc(api: Running, *args: str, token: str | None = None
               ) -> subprocess.CompletedProcess[str]:
    """The same client code in this process (faster than a subprocess; same real socket)."""
    saved = {k: os.environ.get(k) for k in ("ERPSIM_API", "ERPSIM_TOKEN")}
    os.environ.update(ERPSIM_API=api.url, ERPSIM_TOKEN=token or api.clerk)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = client_main(list(args))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(list(args), status, out.getvalue(), err.getvalue())


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], status: int, code: str) -> str:
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"erp: {code}: "), lines[0]
    assert "Traceback" not in result.stderr
    return lines[0]


# --- help ---------------------------------------------------------------------------


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
            ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if path:
        yield path, parser
    for sub in subs:
        for name, child in sub.choices.items():
            yield from _leaves(child, (*path, name))


def test_top_level_help_explains_the_client(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        client_main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: erp")
    for needle in ("ERPSIM_API", "ERPSIM_TOKEN", ".erpsim/connection.json", "1240.50",
                   "--format", "csv", "json", "exit", "YYYY-MM-DD", "examples:"):
        assert needle in out, needle
    assert client_main([]) == 0  # no arguments: the same help
    assert capsys.readouterr().out.startswith("usage: erp")


def test_every_subcommand_has_help_with_examples() -> None:
    leaves = list(_leaves(build_parser()))
    names = {" ".join(p) for p, _ in leaves}
    for expected in ("invoices list", "invoices show", "invoices write-off",
                     "invoices fee-allowance", "receipts list", "receipts apply",
                     "receipts assign-customer", "receipts reverse-application",
                     "credit-memos issue", "bills list", "bills show", "bills enter",
                     "bills approve", "vendors list", "vendors show", "vendors request-bank-change",
                     "customers list", "customers show", "payments run", "payments pay-vendor",
                     "bank lines", "bank match", "bank fee", "journal post", "journal reverse",
                     "reports aging", "reports trial-balance", "gl", "audit", "periods close",
                     "command"):
        assert expected in names, expected
    for path, parser in leaves:
        out = parser.format_help()
        assert out.startswith(f"usage: erp {' '.join(path)}"), out[:80]
        assert parser.description and len(parser.description) > 30, path
        is_group = any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
        if not is_group:
            assert "examples:\n  erp " in out, path
            assert "--format" in out, path


STATEMENT_CSV = ("date,line_id,description,reference,counterparty,amount,balance\n"
                 "2026-05-04,BL-1,ACH DEPOSIT,INV-000123,Acme Corp,100.00,100.00\n")
"""A statement file as a bank exports it, for the examples that import one."""


def test_every_example_in_the_help_parses_into_a_valid_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each 'examples:' line of every subcommand parses, and a command's body is valid for
    the command's own model (field names, money strings, line syntax). An example that
    names a CSV file in the workspace runs where that file is a bank's statement."""
    from erp.api.naming import kebab
    from erp.commands import COMMANDS

    monkeypatch.chdir(tmp_path)

    by_route = {kebab(n): cls for n, cls in COMMANDS.items()}
    parser = build_parser()
    seen_commands = set()
    examples = 0
    for _path, leaf in _leaves(parser):
        epilog = leaf.epilog or ""
        for line in epilog.splitlines():
            if not line.startswith("  erp "):
                continue
            args = shlex.split(line.strip())[1:]
            if "@entry.json" in args:
                continue
            for arg in args:
                if arg.endswith(".csv") and not arg.startswith("-"):
                    (tmp_path / arg).parent.mkdir(parents=True, exist_ok=True)
                    (tmp_path / arg).write_text(STATEMENT_CSV, encoding="utf-8")
            examples += 1
            ns = parser.parse_args(args)
            method, route, _params, body, *_ = ns.handler(ns)
            if method == "POST":
                name = route.removeprefix("/v1/commands/")
                by_route[name].model_validate(body)  # raises if the client built a bad body
                seen_commands.add(name)
    assert examples > 60
    assert len(seen_commands) >= 25, sorted(seen_commands)


def test_help_goes_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["receipts", "apply", "--help"], ["bank", "--help"], ["gl", "-h"]):
        with pytest.raises(SystemExit) as exit_:
            client_main(args)
        assert exit_.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: erp {args[0]}")


def test_the_client_is_one_standalone_stdlib_file(tmp_path: Path) -> None:
    text = CLI.read_text()
    assert text.startswith("#!/usr/bin/env python3\n")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0
            names = [(node.module or "").split(".")[0]]
        else:
            continue
        for name in names:
            assert name == "__future__" or name in sys.stdlib_module_names, name
    alone = tmp_path / "erp"  # as mounted into a container: one file, no package around it
    shutil.copy(CLI, alone)
    result = subprocess.run([sys.executable, "-I", str(alone), "invoices", "list", "--help"],
                            capture_output=True, text=True, check=False, timeout=60,
                            env=clean_env())
    assert result.returncode == 0 and "usage: erp invoices list" in result.stdout


def test_the_module_entry_point_runs() -> None:
    result = subprocess.run([sys.executable, "-m", "erp.api.client", "--help"],
                            capture_output=True, text=True, check=False, timeout=60,
                            env=clean_env())
    assert result.returncode == 0 and result.stdout.startswith("usage: erp")


# --- reading ------------------------------------------------------------------------


def test_lists_as_table_csv_and_json(api: Running) -> None:
    out = ok(erp_cmd(api, "invoices", "list"))
    header = out.splitlines()[0].split()
    assert header[:3] == ["KIND", "ID", "CUSTOMER"] and "OPEN_AMOUNT" in header
    assert "INV-1" in out and "1000.00" in out and "(3 rows)" in out
    csv_out = ok(erp_cmd(api, "invoices", "list", "--status", "open", "--customer", "C2",
                         "--format", "csv"))
    assert csv_out.splitlines()[0].startswith("kind,id,customer,date,due_on,total")
    assert csv_out.splitlines()[1].startswith("invoice,INV-2,C2,2026-02-01")
    data = json.loads(ok(erp_cmd(api, "--format", "json", "receipts", "list", "--unapplied")))
    assert {r["id"] for r in data["items"]} >= {"RCT-2"}
    assert next(r for r in data["items"] if r["id"] == "RCT-2")["payer"] == "GLOBEX INC"


READING = [
    ("whoami",), ("company",), ("customers", "list"), ("customers", "show", "C1"),
    ("vendors", "list"), ("vendors", "show", "V1"), ("invoices", "show", "INV-1"),
    ("receipts", "show", "RCT-1"), ("bills", "list"), ("bills", "show", "BILL-1"),
    ("credit-memos", "list"), ("vendor-credits", "list"), ("payments", "list"),
    ("bank", "accounts"), ("bank", "lines", "--unmatched"), ("bank", "show", "SL-1"),
    ("journal", "list"), ("reports", "aging"), ("reports", "aging", "--ledger", "ap"),
    ("reports", "trial-balance"), ("reports", "control-ties"),
    ("reports", "open-items", "unapplied_cash"), ("gl", "1000"), ("accounts", "list"),
    ("periods", "list"), ("documents", "list", "--kind", "receipt"),
    ("documents", "show", "bank_change", "BCR-1"), ("audit",), ("command", "--list"),
    ("command", "post-journal-entry", "--fields"),
]


def test_every_reading_subcommand_works_in_each_format(
        api: Running, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # In-process (the same code as the script) to keep the matrix fast; the socket is real.
    monkeypatch.setenv("ERPSIM_API", api.url)
    monkeypatch.setenv("ERPSIM_TOKEN", api.clerk)
    for args in READING:
        for fmt in ("table", "csv", "json"):
            assert client_main([*args, "--format", fmt]) == 0, (args, capsys.readouterr().err)
            captured = capsys.readouterr()
            assert captured.err == "" and captured.out, args
            assert WORLD_MARKER not in captured.out and "world:" not in captured.out
            if fmt == "json":
                json.loads(captured.out)
            elif fmt == "csv":
                assert "," in captured.out.splitlines()[0] or len(captured.out.split()) == 1


def test_command_fields_describe_the_body(api: Running, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ERPSIM_API", api.url)
    monkeypatch.setenv("ERPSIM_TOKEN", api.clerk)
    assert client_main(["command", "ApplyReceipt", "--fields", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    fields = {r["field"]: r for r in data["items"]}
    assert data["command"] == "ApplyReceipt"
    assert fields["amount"]["type"] == "money" and fields["amount"]["required"] == "yes"
    assert fields["entry_date"]["type"] == "date (optional)"
    assert client_main(["command", "post-journal-entry", "--fields"]) == 0
    out = capsys.readouterr().out
    assert "lines[].debit" in out and "money (optional)" in out
    assert client_main(["command", "no-such", "--fields"]) == 1
    assert capsys.readouterr().err.startswith("erp: unknown_command: ")


# --- writing ------------------------------------------------------------------------


def test_writes_go_through_and_are_attributed_to_the_tokens_actor(api: Running) -> None:
    before = api.ledger.store.count()
    out = ok(erp_cmd(api, "receipts", "apply", "RCT-1", "INV-1", "400.00"))
    assert out.startswith("ApplyReceipt: done, 1 event written by agent:turn-1 (clerk)")
    ok(erp_cmd(api, "bills", "enter", "V1", "VI-77", "--date", "2026-03-02",
               "--line", "450.00:6100:Office supplies: paper", "--line", "50.00::Toner"))
    ok(erp_inproc(api, "journal", "post", "--date", "2026-03-02", "--memo", "Accrue rent",
               "--line", "6100:25.00:", "--line", "6000::25.00::reclass"))
    ok(erp_inproc(api, "bank", "match", "SL-1", "--receipt", "RCT-1"))
    ok(erp_inproc(api, "bank", "fee", "--bank", "B-OPER", "--amount", "15.00", "--date",
               "2026-03-02", "--line", "SL-2"))
    ok(erp_inproc(api, "command", "approve-bill", "--json", '{"bill_id": "BILL-1"}'))
    ok(erp_cmd(api, "customers", "register", "New Co", "--id", "C9", "--terms", "15",
               "--credit-limit", "1,000.00"))
    new = [e for e in api.ledger.store.read(after=before)]
    assert [e.command for e in new] == ["ApplyReceipt", "EnterBill", "PostJournalEntry",
                                        "MatchStatementLine", "RecordBankFee", "RecordBankFee",
                                        "ApproveBill", "RegisterCustomer"]
    assert api.ledger.books.customers["C9"].credit_limit == 100000
    assert {(e.actor, e.role, e.realm) for e in new} == {(CLERK_ACTOR, "clerk", "erp")}
    bill = next(b for b in api.ledger.books.bills.values() if b.total == 50000)
    assert bill.vendor_id == "V1"
    entered = next(e for e in new if e.command == "EnterBill").data
    assert entered["lines"][0]["description"] == "Office supplies: paper"
    audit = json.loads(ok(erp_cmd(api, "audit", "--format", "json")))["items"]
    assert [r["command"] for r in audit][-8:] == [e.command for e in new]


def test_the_controller_token_may_do_controller_work(api: Running) -> None:
    line = one_line_error(erp_cmd(api, "vendors", "approve-bank-change", "BCR-1"), 1,
                          "forbidden_for_role")
    assert "clerk" in line
    ok(erp_cmd(api, "vendors", "approve-bank-change", "BCR-1", token=api.controller))
    assert api.ledger.books.bank_changes["BCR-1"].status == "approved"


# --- errors -------------------------------------------------------------------------


def test_refusals_are_one_line_with_exit_1_and_write_nothing(api: Running) -> None:
    head = api.ledger.store.head()
    line = one_line_error(erp_cmd(api, "receipts", "apply", "RCT-3", "INV-3", "999.00"), 1,
                          "over_application")
    assert line.endswith("(field: amount)")
    one_line_error(erp_cmd(api, "periods", "close", "2026-02"), 1, "forbidden_for_role")
    one_line_error(erp_inproc(api, "invoices", "show", "NOPE"), 1, "unknown_invoice")
    one_line_error(erp_inproc(api, "invoices", "show", "../../etc/passwd"), 1,
                   "invalid_parameter")
    one_line_error(erp_inproc(api, "command", "apply-receipt", "--json",
                           '{"receipt_id": "RCT-3", "invoice_id": "INV-3", "amount": 5}'), 1,
                   "money_not_a_string")
    one_line_error(erp_inproc(api, "command", "no-such-command", "--json", "{}"), 1, "not_found")
    one_line_error(erp_inproc(api, "whoami", token="not-a-token"), 1, "unauthorized")
    assert api.ledger.store.head() == head


USAGE_ERRORS = [
    ("bogus",), ("invoices",), ("receipts", "apply", "RCT-1"),
    ("receipts", "apply", "RCT-1", "INV-1", "12.345"), ("receipts", "apply", "R", "I", "1e3"),
    ("journal", "post", "--date", "2026-03-02", "--memo", "m", "--line", "6100:1.00:1.00"),
    ("bills", "enter", "V1", "X", "--date", "03/02/2026", "--line", "1.00::x"),
    ("bank", "match", "SL-1"), ("command",), ("command", "apply-receipt", "--json", "{oops"),
    ("invoices", "list", "--format", "xml"),
]


def test_usage_errors_are_one_line_with_exit_2(api: Running) -> None:
    head = api.ledger.store.head()
    result = erp_cmd(api, "receipts", "apply", "RCT-1", "INV-1", "12.345")  # the script itself
    line = one_line_error(result, 2, "usage")
    assert "12.345" in line and "erp receipts apply --help" in line
    for args in USAGE_ERRORS:  # the rest in-process: the same code
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
            status = client_main(list(args))
        assert status == 2, (args, err.getvalue())
        assert out.getvalue() == "", args
        lines = err.getvalue().splitlines()
        assert len(lines) == 1 and lines[0].startswith("erp: "), (args, lines)
        assert lines[0].startswith("erp: usage: " if "{oops" not in args
                                   else "erp: invalid_json: ")
    assert api.ledger.store.head() == head


def test_cannot_connect_is_exit_3(tmp_path: Path) -> None:
    env = clean_env(ERPSIM_API=f"unix://{tmp_path}/gone.sock", ERPSIM_TOKEN="t")
    line = one_line_error(erp_cmd(None, "invoices", "list", env=env), 3, "cannot_connect")
    assert "gone.sock" in line
    env = clean_env(ERPSIM_API="http://127.0.0.1:9", ERPSIM_TOKEN="t")
    one_line_error(erp_cmd(None, "whoami", env=env), 3, "cannot_connect")
    one_line_error(erp_cmd(None, "whoami", env=clean_env(), cwd=tmp_path), 3, "not_configured")
    env = clean_env(ERPSIM_API="ftp://x", ERPSIM_TOKEN="t")
    one_line_error(erp_cmd(None, "whoami", env=env), 3, "not_configured")


# --- connecting -----------------------------------------------------------------------


def test_the_connection_file_is_found_from_a_subdirectory(api: Running, tmp_path: Path) -> None:
    (tmp_path / ".erpsim").mkdir()
    (tmp_path / ".erpsim" / "connection.json").write_text(json.dumps(
        {"api": api.url, "token": api.clerk}))
    deep = tmp_path / "inbox" / "archive"
    deep.mkdir(parents=True)
    out = ok(erp_cmd(None, "whoami", env=clean_env(), cwd=deep))
    assert CLERK_ACTOR in out
    # the environment wins over the file
    one_line_error(erp_cmd(None, "whoami", env=clean_env(ERPSIM_TOKEN="wrong"), cwd=deep), 1,
                   "unauthorized")


def test_the_client_over_loopback_tcp(api: Running) -> None:
    server = ApiServer(api.server.app, host="127.0.0.1", port=0).start()
    try:
        out = ok(erp_cmd(api, "invoices", "list", "--format", "csv", url=server.url))
        assert "INV-1" in out
    finally:
        server.stop()

"""The ``erp transfers``, ``erp card`` and ``erp bank-errors`` subcommands build the books'
commands of several bank accounts."""

from __future__ import annotations

from pathlib import Path

import pytest

from erp import commands as c
from erp.api.client import Failure, build_parser, statement_file_lines


@pytest.mark.parametrize(("args", "route", "model", "expected"), [
    (["transfers", "send", "--from", "B-SAVE", "--to", "B-OPER", "--amount", "25000.00",
      "--date", "2026-05-28", "--line", "BL-000041", "--memo", "top up"], "transfer-funds",
     c.TransferFunds,
     {"from_bank_account_id": "B-SAVE", "to_bank_account_id": "B-OPER", "amount": "25000.00",
      "entry_date": "2026-05-28", "line_id": "BL-000041", "memo": "top up"}),
    (["transfers", "receive", "TRF-000001", "--date", "2026-05-29", "--line", "BL-000044"],
     "receive-transfer", c.ReceiveTransfer,
     {"transfer_id": "TRF-000001", "entry_date": "2026-05-29", "line_id": "BL-000044"}),
    (["card", "charge", "--card", "B-CARD", "--date", "2026-05-12", "--amount", "84.20",
      "--account", "6450", "--merchant", "Staples", "--line", "BL-000051"],
     "record-card-charge", c.RecordCardCharge,
     {"bank_account_id": "B-CARD", "entry_date": "2026-05-12", "amount": "84.20",
      "account": "6450", "merchant": "Staples", "line_id": "BL-000051"}),
    (["bank-errors", "report", "BL-000060", "--description", "fee posted twice"],
     "report-bank-error", c.ReportBankError,
     {"line_id": "BL-000060", "description": "fee posted twice"}),
])
def test_each_subcommand_builds_its_command(args: list[str], route: str, model: type[c.Command],
                                            expected: dict[str, object]) -> None:
    ns = build_parser().parse_args(args)
    method, path, _params, body, *_ = ns.handler(ns)
    assert (method, path) == ("POST", f"/v1/commands/{route}")
    assert body is not None and {k: body[k] for k in expected} == expected
    model.model_validate(body)


@pytest.mark.parametrize(("resource", "kind"), [("transfers", "transfer_out"),
                                                ("card", "card_charge"),
                                                ("bank-errors", "bank_error")])
def test_the_lists_read_their_documents(resource: str, kind: str) -> None:
    ns = build_parser().parse_args([resource, "list"])
    method, path, params, *_ = ns.handler(ns)
    assert (method, path, params) == ("GET", "/v1/documents", {"kind": kind})


def test_a_transfer_needs_both_accounts() -> None:
    with pytest.raises(Failure, match="the following arguments are required: --to"):
        build_parser().parse_args(["transfers", "send", "--from", "B-SAVE", "--amount", "1.00",
                                   "--date", "2026-05-28"])


def test_statements_import_reads_a_statement_file(tmp_path: Path) -> None:
    path = tmp_path / "savings-statement-2026-05.csv"
    path.write_text("date,line_id,description,reference,counterparty,amount,balance\n"
                    "2026-05-01,,OPENING BALANCE,,,,100.00\n"
                    "2026-05-07,BL-000004,ONLINE TRANSFER TO ...6789,TRX-1,NORTHWIND,-80.00,"
                    "20.00\n"
                    "2026-05-31,,CLOSING BALANCE,,,,20.00\n", encoding="utf-8")
    ns = build_parser().parse_args(["statements", "import", str(path), "--bank", "B-SAVE"])
    method, route, _params, body, *_ = ns.handler(ns)
    assert (method, route) == ("POST", "/v1/commands/import-statement-lines")
    assert body == {"bank_account_id": "B-SAVE", "lines": [
        {"line_id": "BL-000004", "entry_date": "2026-05-07", "amount": "-80.00",
         "description": "ONLINE TRANSFER TO ...6789", "reference": "TRX-1",
         "counterparty": "NORTHWIND"}]}
    c.ImportStatementLines.model_validate(body)


def test_statements_import_refuses_what_is_no_statement(tmp_path: Path) -> None:
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(Failure, match="expected a statement CSV with columns"):
        statement_file_lines(str(other))
    with pytest.raises(Failure, match="cannot read"):
        statement_file_lines(str(tmp_path / "missing.csv"))

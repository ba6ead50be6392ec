"""The ``erp accruals`` and ``erp prepaids`` subcommands build the books' commands."""

from __future__ import annotations

import pytest

from erp import commands as c
from erp.api.client import build_parser


@pytest.mark.parametrize(("args", "route", "model", "expected"), [
    (["accruals", "post", "--date", "2026-05-31", "--memo", "Accrue cleaning May", "--line",
      "6000:4400.00::V001", "--line", "2100::4400.00:V001"], "post-accrual", c.PostAccrual,
     {"entry_date": "2026-05-31", "memo": "Accrue cleaning May"}),
    (["accruals", "reverse", "2026-05"], "reverse-accruals", c.ReverseAccruals,
     {"period": "2026-05"}),
    (["accruals", "reverse", "2026-05", "--entry", "JE-000004", "--entry", "JE-000005"],
     "reverse-accruals", c.ReverseAccruals,
     {"period": "2026-05", "entry_ids": ["JE-000004", "JE-000005"]}),
    (["prepaids", "record", "BILL-000002", "--account", "1300", "--expense-account", "6000",
      "--amount", "12000.00", "--start", "2026-05", "--months", "12"], "record-prepaid",
     c.RecordPrepaid, {"bill_id": "BILL-000002", "amount": "12000.00", "months": 12,
                       "start_period": "2026-05", "expense_account": "6000"}),
    (["prepaids", "record", "BILL-000002", "--account", "1300", "--expense-account", "6200",
      "--amount", "99.99", "--start", "2026-06", "--end", "2026-11"], "record-prepaid",
     c.RecordPrepaid, {"end_period": "2026-11"}),
    (["prepaids", "amortize", "2026-05", "--schedule", "PPD-000001"], "run-amortization",
     c.RunAmortization, {"period": "2026-05", "schedule_ids": ["PPD-000001"]}),
])
def test_each_subcommand_builds_its_command(args: list[str], route: str, model: type[c.Command],
                                            expected: dict[str, object]) -> None:
    ns = build_parser().parse_args(args)
    method, path, _params, body, *_ = ns.handler(ns)
    assert (method, path) == ("POST", f"/v1/commands/{route}")
    assert body is not None and {k: body[k] for k in expected} == expected
    model.model_validate(body)


def test_the_lists_read_the_documents_of_their_kind() -> None:
    for resource, kind in (("accruals", "accrual"), ("prepaids", "prepaid")):
        ns = build_parser().parse_args([resource, "list"])
        method, path, params, *_ = ns.handler(ns)
        assert (method, path, params) == ("GET", "/v1/documents", {"kind": kind})

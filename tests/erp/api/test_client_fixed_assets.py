"""The ``erp assets`` subcommands build the books' fixed-asset commands."""

from __future__ import annotations

import pytest

from erp import commands as c
from erp.api.client import build_parser


@pytest.mark.parametrize(("args", "route", "model", "expected"), [
    (["assets", "capitalize", "--bill", "BILL-000003", "--account", "6000", "--amount",
      "8400.00", "--class", "equipment", "--date", "2026-05-31", "--in-service", "2026-05-12",
      "--life", "60", "--salvage", "400.00"], "capitalize-asset", c.CapitalizeAsset,
     {"bill_id": "BILL-000003", "source_account": "6000", "amount": "8400.00",
      "class_id": "equipment", "entry_date": "2026-05-31", "in_service_date": "2026-05-12",
      "life_months": 60, "salvage": "400.00"}),
    (["assets", "capitalize", "--entry", "JE-000002", "--account", "6200", "--amount", "99.99",
      "--class", "software", "--date", "2026-05-31", "--in-service", "2026-05-01", "--life",
      "36"], "capitalize-asset", c.CapitalizeAsset, {"entry_id": "JE-000002"}),
    (["assets", "depreciate", "2026-05", "--asset", "FA-000001"], "run-depreciation",
     c.RunDepreciation, {"period": "2026-05", "asset_ids": ["FA-000001"]}),
    (["assets", "dispose", "FA-000001", "--date", "2026-06-20", "--proceeds", "1500.00",
      "--proceeds-account", "1250", "--gain-loss-account", "4800", "--reference", "BS-1"],
     "dispose-asset", c.DisposeAsset,
     {"asset_id": "FA-000001", "entry_date": "2026-06-20", "proceeds": "1500.00",
      "proceeds_account": "1250", "gain_loss_account": "4800", "reference": "BS-1"}),
])
def test_each_subcommand_builds_its_command(args: list[str], route: str, model: type[c.Command],
                                            expected: dict[str, object]) -> None:
    ns = build_parser().parse_args(args)
    method, path, _params, body, *_ = ns.handler(ns)
    assert (method, path) == ("POST", f"/v1/commands/{route}")
    assert body is not None and {k: body[k] for k in expected} == expected
    model.model_validate(body)


def test_the_list_reads_the_fixed_asset_documents() -> None:
    ns = build_parser().parse_args(["assets", "list"])
    method, path, params, *_ = ns.handler(ns)
    assert (method, path, params) == ("GET", "/v1/documents", {"kind": "fixed_asset"})

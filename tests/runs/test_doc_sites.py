"""``same_party_doc`` / ``other_party_doc`` (class ``command``) aim a command at another
document of every kind a command names, and at another statement line.

They aimed only at invoices, bills, vendor credits and receipts: resolving another
dispute, receiving goods or matching a bill against another purchase order, disposing of
another asset, receiving another transfer, remitting against another tax return, and
matching a statement line (or recording a fee, a transfer, a card charge with a line)
other than its own were never tried.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import erp.commands as c
from runs import validate as v
from runs.attempt import Recording, run_attempt
from scenarios.loader import find_scenario, load_scenario

D = date(2026, 5, 1)


def test_commands_naming_those_documents_or_a_line_are_candidates() -> None:
    commands = [
        c.ResolveDispute(dispute_id="DSP-1", resolution="rejected", reason="no"),
        c.RecordGoodsReceipt.model_construct(po_id="PO-1", receipt_id="GR-1", entry_date=D),
        c.DisposeAsset.model_construct(asset_id="FA-1", proceeds=10, entry_date=D),
        c.ReceiveTransfer.model_construct(transfer_id="TR-1", line_id="L-1", entry_date=D),
        c.RemitSalesTax.model_construct(return_id="STR-1", amount=10, entry_date=D),
        c.RecordBankFee.model_construct(line_id="L-2", amount=5, entry_date=D),
    ]
    cands = v._candidates(Recording(commands={1: commands}))
    for op in ("same_party_doc", "other_party_doc"):
        assert [m.index for m in cands[op]] == list(range(len(commands))), op
    assert v._DOC_FIELDS[-5:] == (("dispute_id", "dispute"), ("po_id", "purchase_order"),
                                  ("asset_id", "fixed_asset"), ("transfer_id", "transfer_out"),
                                  ("return_id", "tax_return"))


def test_a_dispute_resolved_as_another_is_caught(tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario("collections"))
    rec = Recording()
    ref = run_attempt(loaded, 0, "reference", tmp_path / "ref", record=rec)
    assert ref.summary["verdict"]["status"] == "accepted"
    m = v.Mutation("other_party_doc", 3, 6, "ResolveDispute")
    assert m in v._candidates(rec, ref.out / "turns")["other_party_doc"]
    outcome = v._run_mutant(loaded, 0, rec, ref, m, tmp_path / "m")
    assert outcome.change == "dispute_id DSP-000001 -> DSP-000002"
    assert not outcome.equivalent and outcome.caught
    assert "disputes-resolved-as-ruled" in outcome.failed

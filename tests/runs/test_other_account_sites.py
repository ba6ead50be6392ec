"""The ``other_account`` mutant (class ``coding``) reaches every command that codes a
transaction to accounts of the agent's choosing.

It was drawn only for the commands of the first three templates (bills, invoices, journal
entries, fees, write-offs, credits): a dispute's credit memo, an accrual, a prepaid's
expense account, a card charge, a payroll register's accounts, an asset's capitalization
and disposal accounts were never recoded, so ``validate --mutants`` said nothing of
whether collections, accruals-and-prepaids, bank-reconciliation-multi, payroll-and-sales-tax
or fixed-assets catch an agent coding to the wrong account.
"""

from __future__ import annotations

import inspect
from datetime import date
from pathlib import Path
from typing import Any

import pydantic

import erp.commands as c
from runs import validate as v
from runs.attempt import Recording, run_attempt
from scenarios.loader import find_scenario, load_scenario


def _line_model(annotation: Any) -> type[pydantic.BaseModel] | None:
    for arg in getattr(annotation, "__args__", ()):
        if inspect.isclass(arg) and issubclass(arg, pydantic.BaseModel):
            return arg
    return None


def naming_accounts() -> dict[str, list[str]]:
    """Every command with fields naming GL accounts (not bank accounts): its fields."""
    out: dict[str, list[str]] = {}
    for name, cls in c.COMMANDS.items():
        fields = [f for f in cls.model_fields
                  if f.endswith("account") and not f.endswith("bank_account")]
        for f, info in cls.model_fields.items():
            line = _line_model(info.annotation) if f == "lines" else None
            if line is not None and "account" in line.model_fields:
                fields.append("lines[].account")
        if fields or "accounts" in cls.model_fields:
            out[name] = fields or ["accounts"]
    return out


def test_every_command_naming_accounts_is_recoded_or_set_aside() -> None:
    covered = ({k.__name__ for k in v._LINE_ACCOUNTS} | {k.__name__ for k in v._ACCOUNT_FIELDS}
               | v._NO_CODING)
    missing = {n: f for n, f in naming_accounts().items() if n not in covered}
    assert not missing, f"commands naming accounts that other_account never recodes: {missing}"


def test_the_commands_are_found() -> None:
    found = naming_accounts()
    assert found["ResolveDispute"] == ["account"]
    assert found["PostAccrual"] == ["lines[].account"]
    assert "wage_account" in found["PostPayroll"] and "ApproveBill" not in found


def test_the_listed_fields_are_the_commands_own() -> None:
    for cls, fields in v._ACCOUNT_FIELDS.items():
        assert fields and set(fields) <= set(cls.model_fields), cls.__name__
    for cls in v._LINE_ACCOUNTS:
        line = _line_model(cls.model_fields["lines"].annotation)
        assert line is not None and "account" in line.model_fields, cls.__name__


def test_what_is_recodable() -> None:
    credit = c.ResolveDispute(dispute_id="D-1", resolution="credit_memo", reason="agreed",
                              amount=100)
    rejected = c.ResolveDispute(dispute_id="D-1", resolution="rejected", reason="no")
    assert v._recodable(credit) and v._account_site(credit) == ("account", "sales_returns")
    assert not v._recodable(rejected)
    payroll = c.PostPayroll.model_construct(wage_account="6400")
    assert v._account_site(payroll) == ("wage_account", None)
    prepaid = c.RecordPrepaid.model_construct(account="1300", expense_account="6100")
    assert v._account_site(prepaid) == ("expense_account", None)
    accrual = c.PostAccrual.model_construct(lines=(), entry_date=date(2026, 5, 31))
    assert v._recodable(accrual)
    assert not v._recodable(c.ApproveBill(bill_id="B-1"))


def test_a_transfer_through_another_account_than_transit_is_caught(tmp_path: Path) -> None:
    """bank-reconciliation-multi, seed 0: each transfer sent through 1300 instead of 1090
    Transfers in transit. One received before the month's end nets to zero on both, and
    the card statement's payment is no transfer of the treasury's log: each was accepted
    until the transit account of every transfer sent was checked."""
    loaded = load_scenario(find_scenario("bank-reconciliation-multi"))
    rec = Recording()
    ref = run_attempt(loaded, 0, "reference", tmp_path / "ref", record=rec)
    assert ref.summary["verdict"]["status"] == "accepted"
    through = [m for m in v._candidates(rec, ref.out / "turns")["other_account"]
               if m.command == "TransferFunds"]
    assert len(through) == 4
    failed = {}
    for m in through:
        outcome = v._run_mutant(loaded, 0, rec, ref, m, tmp_path / "m")
        assert outcome.change == "transit_account 1090 -> 1300"
        assert not outcome.equivalent and outcome.caught, outcome
        failed[m.index] = outcome.failed
    # the treasury's transfers (one still in transit: the 1090 balance too) and the
    # card's payment
    assert {i: f for i, f in failed.items() if i != 27} == {
        3: ("transfers-recorded",), 5: ("transfers-recorded",),
        7: ("transfers-recorded",)}
    assert failed[27] == ("card-statement-entered-and-paid",)

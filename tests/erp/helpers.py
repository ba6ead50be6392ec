"""Building blocks for the books' tests: a set-up company and a rejection assertion."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp import queries as q
from erp.charts import chart_commands
from erp.errors import CommandRejected
from erp.events import BankDetails, Policies
from erp.ledger import Ledger, Submission

DAY = date(2026, 3, 2)
SYS = {"actor": "system:setup", "role": "system", "business_date": DAY}
CLERK = {"actor": "agent:turn-1", "role": "clerk", "business_date": DAY}
CONTROLLER = {"actor": "human:controller", "role": "controller", "business_date": DAY}
BANK = "B-OPER"


def set_up_company(ledger: Ledger, policies: Policies | None = None) -> None:
    """A company with the standard chart, Feb-Apr 2026 open, a bank, two customers, a vendor."""
    cmds: list[c.Command] = [c.SetUpCompany(name="Test Co", policies=policies or Policies())]
    cmds += chart_commands("standard-services")
    cmds += [c.OpenPeriod(period=p) for p in ("2026-02", "2026-03", "2026-04")]
    cmds += [
        c.OpenBankAccount(bank_account_id=BANK, name="Operating", number="0001",
                          gl_account="1000", entry_date=DAY, opening_balance="10000.00"),
        c.RegisterCustomer(customer_id="C1", name="Acme", terms_days=30,
                           credit_limit="50000.00"),
        c.RegisterCustomer(customer_id="C2", name="Globex", terms_days=15),
        c.RegisterVendor(vendor_id="V1", name="Initech", terms_days=30,
                         bank=BankDetails(account_name="Initech", routing="111000025",
                                          account_number="123456789")),
    ]
    ledger.execute_batch([Submission(cmd, **SYS) for cmd in cmds])


def fingerprint(ledger: Ledger) -> tuple[Any, ...]:
    """Log length, head hash and every read table: what a rejection must leave unchanged."""
    return (ledger.store.count(), ledger.store.head(), q.table_snapshot(ledger.store))


def assert_rejected(ledger: Ledger, command: c.Command, code: str, *, match: str = "",
                    field: str | None = None, **who: Any) -> CommandRejected:
    """Execute a command that must be rejected with ``code``; nothing may be written."""
    before = fingerprint(ledger)
    with pytest.raises(CommandRejected) as info:
        ledger.execute(command, **(who or CLERK))
    err = info.value
    assert err.code == code, f"expected {code}, got {err.code}: {err.message}"
    if match:
        assert match in err.message, err.message
    if field is not None:
        assert err.field == field
    assert fingerprint(ledger) == before, "a rejected command changed the store"
    return err

"""A built-in workbook check run again on a changed copy of the agent's workbook.

A desk task's custom check can ask whether a workbook's figures *follow* its inputs: a
typed figure, or a formula over cells that are right only today, passes the ``xlsx_*``
checks on the workbook as written. The task's module changes an input in a copy of the
agent's workbook (an invoice aged past 90 days, an account's balance raised), works out
what the reference rows become, and hands both to :func:`check_changed_workbook` with the
built-in check that reads those figures. The changed workbook is written to a temporary
workspace at the check's ``path``, the changed rows to a temporary reference folder at
its ``ref``, and the check runs there on a throwaway store: LibreOffice recalculates the
copy as it does any workbook (``checks.workbook``), so the figures pass only if its
formulas moved with the input. Nothing of the agent's workspace or the task's reference
folder is written.

``desk/tasks/ar-aging-workbook/reference/buckets_follow.py`` and
``desk/tasks/closing-package-tb/reference/totals_follow.py`` use it; each keeps only its
own edit and reference change.
"""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from checks.context import CheckContext
from checks.registry import CheckResult, parse_checks
from checks.verdict import run_check
from erp.store import EventStore


def check_changed_workbook(workbook: Any, rows: Sequence[Mapping[str, str]],
                           spec: Mapping[str, Any]) -> CheckResult:
    """Run the one built-in check ``spec`` on ``workbook`` against the reference ``rows``.

    ``workbook`` is the changed copy (an openpyxl workbook, or anything with
    ``save(path)``), saved at ``spec["path"]`` in a fresh temporary workspace; ``rows``
    are the changed reference rows (their header is the first row's keys, in order),
    written as CSV at ``spec["ref"]`` in a fresh temporary reference folder; ``spec`` is
    the raw check (a mapping as a ``checks:`` list holds it, validated by
    ``parse_checks``). Returns the check's single result, its ``passed`` and
    ``detail`` the check's own; the temporary folders and the store are gone when it
    returns. An invalid spec
    raises ``CheckSpecError``, a check that raises (LibreOffice missing, say) raises
    the same, as a grader error; ``rows`` empty raises ``ValueError``.
    """
    if not rows:
        raise ValueError(f"{spec.get('ref')}: no reference rows to write")
    [parsed] = parse_checks([dict(spec)])
    book, ref = str(spec["path"]), str(spec["ref"])
    with tempfile.TemporaryDirectory(prefix="erpsim-changed-") as tmp:
        work, moved_ref = Path(tmp) / "ws", Path(tmp) / "ref"
        (work / book).parent.mkdir(parents=True)
        (moved_ref / ref).parent.mkdir(parents=True)
        workbook.save(work / book)
        with (moved_ref / ref).open("w", encoding="utf-8", newline="") as f:
            out = csv.DictWriter(f, fieldnames=list(rows[0]))
            out.writeheader()
            out.writerows(rows)
        store = EventStore.open(Path(tmp) / "none.db", create=True)
        try:
            [result] = run_check(parsed, 1, CheckContext(store, workspace=work,
                                                         reference=moved_ref))
        finally:
            store.close()
    return result


__all__ = ["check_changed_workbook"]

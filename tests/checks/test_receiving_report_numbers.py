"""checks.purchasing.report_numbers: the numbers a receiving report's CSV gives in its
``report`` column, which a hold's release may name for the goods receipt it recorded."""

from __future__ import annotations

from checks.purchasing import report_numbers


def test_the_report_column_of_every_row_casefolded() -> None:
    content = ("report,date,vendor,po,line,item,quantity_received\n"
               "RR-000011,2026-07-13,Acme,PO-000009,1,HVAC-31,12\n"
               "RR-000011,2026-07-13,Acme,PO-000009,2,WINDOW-50,3\n")
    assert report_numbers(content) == {"rr-000011"}


def test_no_report_column_or_no_rows_give_none() -> None:
    assert report_numbers("date,po\n2026-07-13,PO-000009\n") == set()
    assert report_numbers("") == set()
    assert report_numbers("report,po\n ,PO-000009\n") == set()  # a blank number is none

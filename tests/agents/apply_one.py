"""The scripted agent's write, run through the CLI's shell tool: apply one receipt.

Applies the first unapplied receipt that has a customer to that customer's first open
invoice (the smaller of the two open amounts) and prints ``APPLIED RECEIPT INVOICE
AMOUNT``, or ``NOTHING`` when no receipt can be applied. Uses only the ``erp`` client.
"""

import json
import subprocess
from decimal import Decimal


def erp(*args: str) -> dict:
    """Run an ``erp`` command with JSON output."""
    return json.loads(subprocess.check_output(["erp", *args, "--format", "json"]))


receipts = [r for r in erp("receipts", "list", "--unapplied")["items"] if r.get("customer")]
invoices = erp("invoices", "list", "--status", "open")["items"]
for receipt in receipts:
    mine = [i for i in invoices if i["customer"] == receipt["customer"]]
    if mine:
        invoice = mine[0]
        amount = min(Decimal(receipt["open_amount"]), Decimal(invoice["open_amount"]))
        erp("receipts", "apply", receipt["id"], invoice["id"], str(amount))
        print("APPLIED", receipt["id"], invoice["id"], amount)
        break
else:
    print("NOTHING")

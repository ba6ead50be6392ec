"""The scripted agent's exceptions list, run through the CLI's shell tool: every receipt
still unapplied, one row each, in ``out/unapplied.csv`` with the columns the scenario
asks for (``line_id``: the receipt, ``reason``). Uses only the ``erp`` client.
"""

import csv
import json
import subprocess

found = json.loads(subprocess.check_output(
    ["erp", "receipts", "list", "--unapplied", "--format", "json"]))["items"]
with open("out/unapplied.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["line_id", "customer", "open_amount", "reason"])
    for r in found:
        out.writerow([r["id"], r.get("customer") or "", r["open_amount"],
                      "no open invoice of the customer matched" if r.get("customer")
                      else "payer not identified"])
print("LISTED", len(found))

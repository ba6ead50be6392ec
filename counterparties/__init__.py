"""counterparties: the outside world's actors (customers, vendors, the bank) and their documents.

May import: sim, erp.
"""

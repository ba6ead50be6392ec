"""sim: time. The business calendar, seeded random streams, the SimPy engine and the world.

May import: erp.
"""

"""The tables of a store: the event log and the read tables the projectors write.

Table shapes are declared with SQLAlchemy Core so that SQLite and PostgreSQL get
the same schema. Money columns are integer cents (BIGINT); dates are ISO strings.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

STORE_FORMAT = "erpsim-store-1"

metadata = MetaData()

events = Table(
    "events", metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("stream", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("type", String(64), nullable=False),
    Column("schema_version", Integer, nullable=False),
    Column("realm", String(8), nullable=False),
    Column("business_date", String(10), nullable=False),
    Column("sim_time", Float, nullable=True),
    Column("actor", String(128), nullable=False),
    Column("role", String(16), nullable=False),
    Column("command", String(64), nullable=False),
    Column("causation_id", String(64), nullable=True),
    Column("correlation_id", String(64), nullable=True),
    Column("payload", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    UniqueConstraint("stream", "version", name="events_stream_version"),
)

store_meta = Table(
    "store_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

gl_lines = Table(
    "gl_lines", metadata,
    Column("position", BigInteger, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("entry_date", String(10), nullable=False),
    Column("account", String(16), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("party", String(64), nullable=True),
    Column("doc_id", String(64), nullable=False),
    PrimaryKeyConstraint("position", "seq"),
)

subledger = Table(
    "subledger", metadata,
    Column("position", BigInteger, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("ledger", String(16), nullable=False),
    Column("account", String(16), nullable=False),
    Column("party", String(64), nullable=True),
    Column("doc_kind", String(32), nullable=False),
    Column("doc_id", String(64), nullable=False),
    Column("entry_date", String(10), nullable=False),
    Column("amount", BigInteger, nullable=False),
    PrimaryKeyConstraint("position", "seq"),
)

documents = Table(
    "documents", metadata,
    Column("kind", String(32), nullable=False),
    Column("doc_id", String(64), nullable=False),
    Column("party", String(64), nullable=True),
    Column("account", String(16), nullable=True),
    Column("doc_date", String(10), nullable=True),
    Column("due_on", String(10), nullable=True),
    Column("total", BigInteger, nullable=False),
    Column("open_amount", BigInteger, nullable=False),
    Column("status", String(32), nullable=False),
    Column("reference", Text, nullable=False),
    Column("last_position", BigInteger, nullable=False),
    PrimaryKeyConstraint("kind", "doc_id"),
)

doc_history = Table(
    "doc_history", metadata,
    Column("position", BigInteger, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("doc_id", String(64), nullable=False),
    Column("entry_date", String(10), nullable=False),
    Column("status", String(32), nullable=False),
    Column("open_amount", BigInteger, nullable=False),
    PrimaryKeyConstraint("position", "kind", "doc_id"),
)

statement_lines = Table(
    "statement_lines", metadata,
    Column("line_id", String(64), primary_key=True),
    Column("bank_account_id", String(64), nullable=False),
    Column("entry_date", String(10), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("description", Text, nullable=False),
    Column("reference", Text, nullable=False),
    Column("counterparty", Text, nullable=False),
    Column("bank_ref", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("matched_to", Text, nullable=False),
    Column("last_position", BigInteger, nullable=False),
)

PROJECTION_TABLES = (gl_lines, subledger, documents, doc_history, statement_lines)
"""Read tables that ``rebuild()`` recreates from the log (in this order)."""

AUDIT_VIEW = (
    "CREATE VIEW audit_trail AS SELECT position, business_date, actor, role, command, "
    "causation_id, correlation_id, type, stream FROM events WHERE realm = 'erp'"
)
"""The audit trail (who did what, when, by which command) is a view over the log."""

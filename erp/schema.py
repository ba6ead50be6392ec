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
    Table,
    Text,
    UniqueConstraint,
)

STORE_FORMAT = "erpsim-store-1"

metadata = MetaData()

POSITION = BigInteger().with_variant(Integer(), "sqlite")
"""A log position: BIGINT, and on SQLite INTEGER, so that the events table's primary key
is its rowid (one b-tree, reads by position range walk it directly) rather than a rowid
table beside a unique index on position."""

events = Table(
    "events", metadata,
    Column("position", POSITION, primary_key=True, autoincrement=False),
    Column("stream", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("type", Text, nullable=False),
    Column("schema_version", Integer, nullable=False),
    Column("realm", Text, nullable=False),
    Column("business_date", Text, nullable=False),
    Column("sim_time", Float, nullable=True),
    Column("actor", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("command", Text, nullable=False),
    Column("causation_id", Text, nullable=True),
    Column("correlation_id", Text, nullable=True),
    Column("payload", Text, nullable=False),
    Column("prev_hash", Text, nullable=False),
    Column("hash", Text, nullable=False),
    UniqueConstraint("stream", "version", name="events_stream_version"),
)

store_meta = Table(
    "store_meta", metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

gl_lines = Table(
    "gl_lines", metadata,
    Column("position", BigInteger, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("entry_date", Text, nullable=False),
    Column("account", Text, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("party", Text, nullable=True),
    Column("doc_id", Text, nullable=False),
    PrimaryKeyConstraint("position", "seq"),
    sqlite_with_rowid=False,
)

subledger = Table(
    "subledger", metadata,
    Column("position", BigInteger, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("ledger", Text, nullable=False),
    Column("account", Text, nullable=False),
    Column("party", Text, nullable=True),
    Column("doc_kind", Text, nullable=False),
    Column("doc_id", Text, nullable=False),
    Column("entry_date", Text, nullable=False),
    Column("amount", BigInteger, nullable=False),
    PrimaryKeyConstraint("position", "seq"),
    sqlite_with_rowid=False,
)

documents = Table(
    "documents", metadata,
    Column("kind", Text, nullable=False),
    Column("doc_id", Text, nullable=False),
    Column("party", Text, nullable=True),
    Column("account", Text, nullable=True),
    Column("doc_date", Text, nullable=True),
    Column("due_on", Text, nullable=True),
    Column("total", BigInteger, nullable=False),
    Column("open_amount", BigInteger, nullable=False),
    Column("status", Text, nullable=False),
    Column("reference", Text, nullable=False),
    Column("last_position", BigInteger, nullable=False),
    PrimaryKeyConstraint("kind", "doc_id"),
    sqlite_with_rowid=False,
)

doc_history = Table(
    "doc_history", metadata,
    Column("position", BigInteger, nullable=False),
    Column("kind", Text, nullable=False),
    Column("doc_id", Text, nullable=False),
    Column("entry_date", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("open_amount", BigInteger, nullable=False),
    Column("party", Text, nullable=True),
    PrimaryKeyConstraint("position", "kind", "doc_id"),
    sqlite_with_rowid=False,
)

statement_lines = Table(
    "statement_lines", metadata,
    Column("line_id", Text, primary_key=True),
    Column("bank_account_id", Text, nullable=False),
    Column("entry_date", Text, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("description", Text, nullable=False),
    Column("reference", Text, nullable=False),
    Column("counterparty", Text, nullable=False),
    Column("bank_ref", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("matched_to", Text, nullable=False),
    Column("last_position", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)

PROJECTION_TABLES = (gl_lines, subledger, documents, doc_history, statement_lines)
"""Read tables that ``rebuild()`` recreates from the log (in this order). On SQLite they
are ``WITHOUT ROWID``: each is one b-tree ordered by its primary key, so a row written
touches one b-tree rather than a rowid table and its key's index (a commit writes half
the pages; every page a commit dirties is written to the WAL again)."""

AUDIT_VIEW = (
    "CREATE VIEW audit_trail AS SELECT position, business_date, actor, role, command, "
    "causation_id, correlation_id, type, stream FROM events WHERE realm = 'erp'"
)
"""The audit trail (who did what, when, by which command) is a view over the log."""

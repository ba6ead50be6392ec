"""The event store on SQLite and PostgreSQL: appends, reads, the hash chain, opening errors."""

from __future__ import annotations

import sqlite3
import threading
from datetime import date
from pathlib import Path

import orjson
import pytest

from erp import commands as c
from erp import queries as q
from erp.errors import ConcurrencyConflict, IntegrityError, StoreError
from erp.ledger import Ledger
from erp.store import GENESIS, EventStore, NewEvent, StoredEvent, chain_hash
from tests.conftest import PG_URL, pg_schema, require_postgres
from tests.erp.helpers import BANK, CLERK, set_up_company

DAY = "2026-03-02"


def ev(stream: str, n: int = 0, **kw: object) -> NewEvent:
    """A small event for ``stream``; ``n`` makes its payload distinct."""
    kw.setdefault("business_date", DAY)
    return NewEvent(stream=stream, type=kw.pop("type", "thing_happened"),  # type: ignore[arg-type]
                    payload=orjson.dumps({"n": n, "stream": stream}).decode(), **kw)  # type: ignore[arg-type]


def state(store: EventStore) -> tuple[int, tuple[int, str], list[StoredEvent]]:
    """What a failed append must leave unchanged."""
    return store.count(), store.head(), list(store.read())


def execute_sql(store: EventStore, sql: str, params: tuple[object, ...] = ()) -> int:
    """Run one statement behind the store's back (as an attacker or a broken tool would)."""
    with store.engine.begin() as conn:
        return conn.exec_driver_sql(store.sql(sql), params).rowcount


def seeded(store: EventStore, n: int = 9) -> list[StoredEvent]:
    """``n`` events over three streams, two realms and two actors, in one append."""
    batch = [ev(f"s:{i % 3}", i, realm="world" if i % 4 == 3 else "erp",
                type="b_happened" if i % 2 else "a_happened",
                actor="agent:turn-1" if i % 3 == 0 else "system:bank-feed")
             for i in range(n)]
    return store.append(batch)


# --- the table --------------------------------------------------------------------------------


def test_on_sqlite_the_position_is_the_events_tables_rowid(tmp_path: Path) -> None:
    """SQLite keeps the log in one b-tree keyed by position (an ``INTEGER PRIMARY KEY`` is
    the rowid): a read by position range walks it, with no second index to look up; a
    position taken twice is still refused."""
    store = EventStore.open(f"sqlite:///{tmp_path / 'books.db'}", create=True)
    try:
        seeded(store, 3)
        conn = sqlite3.connect(tmp_path / "books.db")
        plan = " ".join(str(r[-1]) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT payload FROM events WHERE position > 1 "
            "ORDER BY position LIMIT 10"))
        indexes = [(r[2], r[3]) for r in conn.execute("PRAGMA index_list(events)")]
        conn.close()
        assert "INTEGER PRIMARY KEY" in plan, plan
        assert indexes == [(1, "u")], indexes  # only (stream, version)'s; none for position
        columns = "position, 'other', version, type, schema_version, realm, business_date, " \
                  "sim_time, actor, role, command, causation_id, correlation_id, payload, " \
                  "prev_hash, hash"
        with pytest.raises(Exception, match=r"UNIQUE constraint failed: events\.position"):
            execute_sql(store, f"INSERT INTO events SELECT {columns} FROM events "
                               "WHERE position = 1")
    finally:
        store.close()


def test_on_sqlite_each_read_table_is_one_btree_on_its_key(tmp_path: Path) -> None:
    """The read tables are ``WITHOUT ROWID`` on SQLite: a row is kept in its primary key's
    b-tree alone, so there is no index beside the table (a commit writes those pages)."""
    from erp.schema import PROJECTION_TABLES

    store = EventStore.open(tmp_path / "books.db", create=True)
    store.close()
    conn = sqlite3.connect(tmp_path / "books.db")
    try:
        for table in PROJECTION_TABLES:
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                               (table.name,)).fetchone()[0]
            assert sql.rstrip().endswith("WITHOUT ROWID"), table.name
            assert [r for r in conn.execute(f"PRAGMA index_list({table.name})")
                    if r[3] != "pk"] == [], table.name
    finally:
        conn.close()


# --- another writer holding the lock --------------------------------------------------------


def test_a_writer_kept_waiting_past_the_lock_wait_gets_a_clear_error(
        store: EventStore, store_target: tuple[str, str | None]) -> None:
    """While another writer holds the store's write lock, an append waits ``lock_wait_s``
    (SQLite's busy timeout, PostgreSQL's lock_timeout on the advisory lock) and then fails
    with a ``StoreError`` naming the store and the wait, never hanging; nothing is
    written, and once the lock is free the same handle appends."""
    seeded(store, 2)
    target, schema = store_target
    before = state(store)
    impatient = EventStore.open(target, schema=schema, lock_wait_s=0.3)
    holder = store.engine.connect()
    try:
        with store.write_transaction(holder), pytest.raises(StoreError) as caught:
            impatient.append([ev("s:late")])
        message = str(caught.value)
        assert message.startswith(f"{impatient.label}: another writer held the store's "
                                  "write lock for 0.3 s (")
        assert message.endswith("); nothing was written")
        assert state(impatient) == before
        assert impatient.append([ev("s:late")])[0].position == before[1][0] + 1
    finally:
        holder.close()
        impatient.close()


@pytest.mark.parametrize("wait", [0, -1.0, float("nan")])
def test_a_lock_wait_that_is_not_a_positive_number_is_refused(tmp_path: Path,
                                                              wait: float) -> None:
    with pytest.raises(StoreError, match=r"lock_wait_s .*: expected a number of seconds > 0"):
        EventStore.open(tmp_path / "books.db", create=True, lock_wait_s=wait)
    assert not (tmp_path / "books.db").exists()


# --- appending -----------------------------------------------------------------------------


def test_an_empty_store_is_at_genesis(store: EventStore) -> None:
    assert store.count() == 0
    assert store.head() == (0, GENESIS)
    assert list(store.read()) == []
    report = store.verify()
    assert report.ok and report.events == 0 and report.head_hash == GENESIS


def test_append_gives_positions_versions_and_a_chain(store: EventStore) -> None:
    out = store.append([ev("a:1", 1), ev("b:1", 2), ev("a:1", 3)], {"a:1": 0, "b:1": 0})
    assert [(e.position, e.stream, e.version) for e in out] == [
        (1, "a:1", 1), (2, "b:1", 1), (3, "a:1", 2)]
    assert out[0].prev_hash == GENESIS
    assert [e.prev_hash for e in out[1:]] == [e.hash for e in out[:-1]]
    more = store.append([ev("a:1", 4)], {"a:1": 2, "b:1": 1})
    assert (more[0].position, more[0].version, more[0].prev_hash) == (4, 3, out[-1].hash)
    assert store.head() == (4, more[0].hash)
    assert list(store.read()) == [*out, *more]


def test_an_append_is_one_transaction(store: EventStore) -> None:
    store.append([ev("a:1", 1)])
    before = state(store)
    # The last event of the batch cannot be stored (no business date): none of it lands.
    batch = [ev("b:1", 2), ev("a:1", 3), NewEvent(stream="c:1", type="t", payload="{}",
                                                 business_date=None)]  # type: ignore[arg-type]
    with pytest.raises(Exception):  # noqa: B017 - which error is the next test's subject
        store.append(batch)
    assert state(store) == before
    assert store.append([ev("b:1", 2)])[0].position == 2


def test_a_row_the_schema_refuses_is_not_reported_as_a_conflict(store: EventStore) -> None:
    with pytest.raises(StoreError) as info:
        store.append([NewEvent(stream="c:1", type="t", payload="{}",
                               business_date=None)])  # type: ignore[arg-type]
    assert not isinstance(info.value, ConcurrencyConflict), str(info.value)
    assert "the database refused event rows 1..1" in str(info.value)
    assert "business_date" in str(info.value)
    assert store.count() == 0


def test_insert_rows_is_all_or_nothing(store: EventStore) -> None:
    store.append([ev("a:1", 1)])
    before = state(store)
    # Three rows in one insert; the third takes a version another writer already holds.
    with pytest.raises(ConcurrencyConflict), store.write_transaction() as conn:
        prev = store.head(conn)[1]
        rows = []
        for pos, stream, version in [(2, "b:1", 1), (3, "c:1", 1), (4, "a:1", 1)]:
            row = (pos, stream, version, "t", 1, "erp", DAY, None, "x", "system", "", None, None,
                   "{}")
            digest = chain_hash(prev, *row)
            rows.append((*row, prev, digest))
            prev = digest
        store.insert_rows(conn, rows)
    assert state(store) == before


def test_a_version_clash_names_the_stream_and_both_versions(store: EventStore) -> None:
    store.append([ev("invoice:INV-1", 1), ev("invoice:INV-1", 2), ev("other", 3)])
    before = state(store)
    with pytest.raises(ConcurrencyConflict) as info:
        store.append([ev("other", 4), ev("invoice:INV-1", 5)],
                     {"other": 1, "invoice:INV-1": 1})
    err = info.value
    assert (err.stream, err.expected, err.actual) == ("invoice:INV-1", 1, 2)
    assert str(err) == ("stream 'invoice:INV-1': expected version 1, but the store is at "
                        "version 2; reload and retry")
    assert state(store) == before


def test_expecting_a_new_stream_that_exists_is_a_clash(store: EventStore) -> None:
    store.append([ev("a:1", 1)])
    before = state(store)
    with pytest.raises(ConcurrencyConflict) as info:
        store.append([ev("a:1", 2)], {"a:1": 0})
    assert (info.value.stream, info.value.expected, info.value.actual) == ("a:1", 0, 1)
    assert state(store) == before


def test_an_expected_version_of_a_stream_not_in_the_batch_is_checked(store: EventStore) -> None:
    store.append([ev("guard", 1)])
    before = state(store)
    with pytest.raises(ConcurrencyConflict) as info:
        store.append([ev("a:1", 2)], {"guard": 7})
    assert (info.value.stream, info.value.expected, info.value.actual) == ("guard", 7, 1)
    assert state(store) == before
    store.append([ev("a:1", 2)], {"guard": 1})
    assert store.count() == 2


def test_a_duplicate_stream_version_inserted_directly_is_a_conflict(store: EventStore) -> None:
    first = store.append([ev("a:1", 1), ev("a:1", 2)])
    before = state(store)
    # A second writer that skipped the version check: same (stream, version), next position.
    row = (3, "a:1", 2, "thing_happened", 1, "erp", DAY, None, "x", "system", "", None, None,
           "{}")
    with pytest.raises(ConcurrencyConflict) as info, store.write_transaction() as conn:
        store.insert_rows(conn, [(*row, first[-1].hash, chain_hash(first[-1].hash, *row))])
    assert (info.value.stream, info.value.expected, info.value.actual) == ("a:1", 1, 2)
    assert state(store) == before


def test_a_duplicate_position_inserted_directly_is_a_conflict(store: EventStore) -> None:
    first = store.append([ev("a:1", 1)])
    before = state(store)
    row = (1, "b:1", 1, "thing_happened", 1, "erp", DAY, None, "x", "system", "", None, None,
           "{}")
    with pytest.raises(ConcurrencyConflict) as info, store.write_transaction() as conn:
        store.insert_rows(conn, [(*row, GENESIS, chain_hash(GENESIS, *row))])
    assert info.value.stream == "<log head>"
    assert first[0].position == 1
    assert state(store) == before


def test_appends_from_two_threads_never_fork_the_chain(store_target: tuple[str, str | None]
                                                       ) -> None:
    target, schema = store_target
    stores = [EventStore.open(target, schema=schema, create=True) for _ in range(2)]
    errors: list[BaseException] = []

    def writer(s: EventStore, name: str) -> None:
        try:
            for i in range(40):
                s.append([ev(f"{name}:{i % 4}", i), ev(f"{name}:x", i)])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(s, n)) for s, n in zip(stores, "AB",
                                                                             strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert stores[0].count() == 160
        assert stores[0].verify().ok
        assert [e.version for e in stores[0].read(stream="A:x")] == list(range(1, 41))
    finally:
        for s in stores:
            s.close()


# --- reading -------------------------------------------------------------------------------


def test_read_by_stream(store: EventStore) -> None:
    out = seeded(store)
    got = list(store.read(stream="s:1"))
    assert got == [e for e in out if e.stream == "s:1"]
    assert [e.version for e in got] == [1, 2, 3]
    assert list(store.read(stream="nope")) == []


def test_read_by_position_range(store: EventStore) -> None:
    out = seeded(store)
    assert [e.position for e in store.read(after=3)] == [4, 5, 6, 7, 8, 9]
    assert [e.position for e in store.read(until=3)] == [1, 2, 3]
    assert [e.position for e in store.read(after=2, until=5)] == [3, 4, 5]
    assert list(store.read(after=5, until=5)) == []
    assert list(store.read(after=9)) == []
    assert list(store.read(after=2, until=5)) == out[2:5]


def test_a_statement_with_a_literal_percent_reads_the_same_on_both_backends(
        store: EventStore) -> None:
    """``store.sql`` adapts a ``?`` statement to the driver, ``%`` in a literal included:
    psycopg reads a bare ``%`` as a placeholder, so ``LIKE 'agent:%'`` failed on
    PostgreSQL only (a check's grader error there, accepted on SQLite)."""
    out = seeded(store)
    sql = ("SELECT position FROM events WHERE business_date = ? AND actor LIKE 'agent:%' "
           "AND type <> '100%' ORDER BY position")
    with store.engine.connect() as conn:
        got = [r[0] for r in conn.exec_driver_sql(store.sql(sql), (DAY,))]
        without_params = conn.exec_driver_sql(store.sql(
            "SELECT COUNT(*) FROM events WHERE actor LIKE '%bank%'")).scalar_one()
    assert got == [e.position for e in out if e.actor.startswith("agent:")]
    assert without_params == sum(e.actor == "system:bank-feed" for e in out)


def test_read_by_realm_type_and_actor(store: EventStore) -> None:
    out = seeded(store)
    assert list(store.read(realm="world")) == [e for e in out if e.realm == "world"]
    assert [e.position for e in store.read(realm="world")] == [4, 8]
    assert list(store.read(types=["a_happened"])) == [e for e in out if e.type == "a_happened"]
    assert list(store.read(types=["a_happened", "b_happened"])) == out
    assert list(store.read(types=["nothing"])) == []
    assert list(store.read(actor="agent:turn-1")) == [e for e in out
                                                       if e.actor == "agent:turn-1"]
    assert [e.position for e in store.read(actor="agent:turn-1", realm="erp",
                                           types=["a_happened"], after=1)] == [7]


def test_read_pages_through_the_log(store: EventStore) -> None:
    out = seeded(store, 23)
    assert list(store.read(page=4)) == out
    assert list(store.read(page=1, stream="s:2")) == [e for e in out if e.stream == "s:2"]
    assert list(store.read(page=5, after=3, until=17)) == out[3:17]


def test_the_envelope_round_trips_exactly(store: EventStore) -> None:
    payload = orjson.dumps({"memo": "Zürich — 東京 ✓ 🧾", "quote": "he said \"no\"\\",
                            "amount": 123456789012, "nested": {"z": [1, None, True]}}).decode()
    new = [
        NewEvent(stream="vendor:V-ü", type="payment_sent", payload=payload,
                 business_date="2026-12-31", realm="world", schema_version=3,
                 actor="counterparty:C-0012", role="clerk", command="PayVendor",
                 sim_time=12.345678901234567, causation_id="cmd-41", correlation_id="corr/7"),
        NewEvent(stream="vendor:V-ü", type="payment_sent", payload="{}", business_date=DAY,
                 sim_time=None, causation_id=None, correlation_id=None),
        NewEvent(stream="x", type="t", payload='{"a":1}', business_date=DAY, sim_time=0.0),
        NewEvent(stream="y", type="t", payload="[]", business_date=DAY, sim_time=1e-300),
    ]
    out = store.append(new)
    back = list(store.read())
    assert back == out
    first = back[0]
    assert first.payload == payload
    assert first.data["memo"] == "Zürich — 東京 ✓ 🧾"
    assert first.sim_time == 12.345678901234567
    assert (first.realm, first.schema_version, first.actor, first.role, first.command) == (
        "world", 3, "counterparty:C-0012", "clerk", "PayVendor")
    assert (first.causation_id, first.correlation_id) == ("cmd-41", "corr/7")
    assert first.business_date == "2026-12-31"
    assert back[1].sim_time is None
    assert back[1].causation_id is None and back[1].correlation_id is None
    assert back[2].sim_time == 0.0 and back[2].sim_time is not None
    assert back[3].sim_time == 1e-300
    assert store.verify().ok


def test_a_reopened_store_reads_what_was_written(store_target: tuple[str, str | None]) -> None:
    target, schema = store_target
    first = EventStore.open(target, schema=schema, create=True)
    out = seeded(first)
    first.close()
    again = EventStore.open(target, schema=schema)
    try:
        assert list(again.read()) == out
        assert again.head() == (9, out[-1].hash)
        assert again.verify().ok
    finally:
        again.close()


def test_create_on_an_existing_store_keeps_its_events(store_target: tuple[str, str | None]
                                                      ) -> None:
    target, schema = store_target
    s = EventStore.open(target, schema=schema, create=True)
    out = seeded(s)
    s.close()
    s = EventStore.open(target, schema=schema, create=True)
    try:
        assert list(s.read()) == out
    finally:
        s.close()


# --- the hash chain ------------------------------------------------------------------------


def test_verify_accepts_a_good_log(store: EventStore) -> None:
    out = seeded(store, 12)
    report = store.verify()
    assert report.ok
    assert report.events == 12
    assert report.head_hash == out[-1].hash == store.head()[1]
    assert report.first_bad_position is None
    assert store.require_valid() == report


def test_one_changed_byte_of_a_payload_is_found_at_its_position(store: EventStore) -> None:
    out = seeded(store, 12)
    target = out[6]
    assert '"n":6' in target.payload
    tampered = target.payload.replace('"n":6', '"n":7')
    assert len(tampered) == len(target.payload)
    assert sum(a != b for a, b in zip(tampered, target.payload, strict=True)) == 1
    assert execute_sql(store, "UPDATE events SET payload = ? WHERE position = ?",
                       (tampered, 7)) == 1
    report = store.verify()
    assert not report.ok
    assert report.first_bad_position == 7
    assert report.events == 6
    assert report.head_hash == out[5].hash
    assert report.message.startswith("position 7: stored hash")
    assert "changed after it was written" in report.message


def test_a_changed_envelope_field_is_found_at_its_position(store: EventStore) -> None:
    out = seeded(store, 8)
    original = out[2]
    for column, value in (("actor", "agent:turn-9"), ("business_date", "2026-03-03"),
                          ("sim_time", 2.5), ("realm", "world"), ("correlation_id", "forged"),
                          ("type", "thing_unhappened"), ("hash", "f" * 64)):
        execute_sql(store, f"UPDATE events SET {column} = ? WHERE position = ?", (value, 3))
        report = store.verify()
        assert (report.ok, report.first_bad_position) == (False, 3), column
        assert report.message.startswith("position 3:"), column
        execute_sql(store, f"UPDATE events SET {column} = ? WHERE position = ?",
                    (getattr(original, column), 3))
        assert store.verify().ok, column


def test_a_rewritten_row_with_a_fresh_hash_is_found_at_the_next_link(store: EventStore) -> None:
    out = seeded(store, 8)
    e = out[3]
    forged = chain_hash(e.prev_hash, e.position, e.stream, e.version, e.type, e.schema_version,
                        e.realm, e.business_date, e.sim_time, "agent:forger", e.role, e.command,
                        e.causation_id, e.correlation_id, e.payload)
    execute_sql(store, "UPDATE events SET actor = ?, hash = ? WHERE position = ?",
                ("agent:forger", forged, 4))
    report = store.verify()
    assert (report.ok, report.first_bad_position) == (False, 5)
    assert "does not link to the hash of position 4" in report.message


@pytest.mark.parametrize("deleted", [1, 5])
def test_a_deleted_row_is_named(store: EventStore, deleted: int) -> None:
    seeded(store, 9)
    assert execute_sql(store, "DELETE FROM events WHERE position = ?", (deleted,)) == 1
    report = store.verify()
    assert not report.ok
    assert report.first_bad_position == deleted + 1
    assert report.message == (f"position {deleted + 1}: expected position {deleted} "
                              "(a row is missing)")


def test_require_valid_raises_integrity_error_with_the_position(store: EventStore) -> None:
    seeded(store, 10)
    execute_sql(store, "UPDATE events SET payload = ? WHERE position = ?", ('{"n":99}', 8))
    with pytest.raises(IntegrityError) as info:
        store.require_valid()
    assert info.value.position == 8
    assert str(info.value).startswith(f"{store.label}: position 8: stored hash")
    assert isinstance(info.value, StoreError)


# --- opening -------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["a%20b", "a?b", "a#b", "a%zz b ü"])
def test_an_sqlite_store_opens_at_its_path_whatever_characters_it_holds(
        tmp_path: Path, folder: str) -> None:
    """The path is the file, never parsed as a URL: ``erpsim run --out 'x%20y'`` failed
    (the books opened at ``x y``, which does not exist), and ``--out 'x?y'`` put them
    in a file ``x`` beside the folder, where the next such attempt found another's."""
    path = tmp_path / folder / "books.db"
    store = EventStore.open(path, create=True)
    try:
        seeded(store, 3)
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]
    assert path.is_file()
    again = EventStore.open(path)
    try:
        assert again.count() == 3
    finally:
        again.close()


def test_a_missing_sqlite_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "books.db"
    for target in (path, str(path), f"sqlite:///{path}"):
        with pytest.raises(StoreError) as info:
            EventStore.open(target)
        assert str(info.value) == f"no store at {path}: the file does not exist"
    assert not path.parent.exists(), "opening without create made the directory"


def test_create_makes_the_directory_and_the_store(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "books.db"
    s = EventStore.open(path, create=True)
    s.close()
    s = EventStore.open(f"sqlite:///{path}")
    try:
        assert s.count() == 0
    finally:
        s.close()


def _not_a_store(path: Path) -> None:
    path.write_text("debit,credit\n1,2\n" * 50)


def _empty_sqlite(path: Path) -> None:
    sqlite3.connect(path).close()


def _other_sqlite(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE invoices (id TEXT PRIMARY KEY, total INTEGER)")
    con.execute("INSERT INTO invoices VALUES ('INV-1', 100)")
    con.commit()
    con.close()


@pytest.mark.parametrize("make", [_not_a_store, _empty_sqlite, _other_sqlite],
                         ids=["text-file", "empty-sqlite", "other-sqlite"])
def test_a_file_that_is_not_an_erpsim_store_is_refused(tmp_path: Path, make: object) -> None:
    path = tmp_path / "books.db"
    make(path)  # type: ignore[operator]
    with pytest.raises(StoreError) as info:
        EventStore.open(path)
    assert str(info.value).startswith(f"{path} is not an erpsim store (")


def test_a_store_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "books.db"
    EventStore.open(path, create=True).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE store_meta SET value = 'erpsim-store-0' WHERE key = 'format'")
    con.commit()
    con.close()
    with pytest.raises(StoreError) as info:
        EventStore.open(path)
    assert str(info.value) == (f"{path} is not an erpsim store (format 'erpsim-store-0', "
                               "expected 'erpsim-store-1')")


@pytest.mark.parametrize("make", [_empty_sqlite, _other_sqlite],
                         ids=["empty-sqlite", "other-sqlite"])
def test_refusing_a_foreign_sqlite_file_leaves_it_untouched(tmp_path: Path,
                                                            make: object) -> None:
    path = tmp_path / "books.db"
    make(path)  # type: ignore[operator]
    before = path.read_bytes()
    with pytest.raises(StoreError):
        EventStore.open(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["books.db"]
    assert path.read_bytes() == before


def test_an_unreachable_postgres_url_is_named() -> None:
    url = "postgresql://postgres:s3cret@127.0.0.1:1/test"
    with pytest.raises(StoreError) as info:
        EventStore.open(url, schema="erpsim")
    msg = str(info.value)
    assert msg.startswith("cannot connect to PostgreSQL at "
                          "postgresql+psycopg://postgres:***@127.0.0.1:1/test: ")
    assert "s3cret" not in msg


def test_a_bad_postgres_schema_name_is_refused() -> None:
    with pytest.raises(StoreError, match=r"PostgreSQL schema 'a; DROP TABLE x': expected "
                                         r"letters, digits and _"):
        EventStore.open("postgresql://postgres@127.0.0.1:1/test", schema="a; DROP TABLE x")


@pytest.mark.postgres
def test_a_missing_postgres_schema_is_not_a_store(request: pytest.FixtureRequest) -> None:
    require_postgres()
    schema = pg_schema(request.node.nodeid)
    made = EventStore.open(PG_URL, schema=schema, create=True)
    made.drop()
    made.close()
    with pytest.raises(StoreError) as info:
        EventStore.open(PG_URL, schema=schema)
    assert f"schema {schema} is not an erpsim store (" in str(info.value)


# --- several ledgers over one store -------------------------------------------------------


def test_a_second_ledger_catches_up_before_it_decides(store_target: tuple[str, str | None]
                                                       ) -> None:
    target, schema = store_target
    a = Ledger.open(target, schema=schema, create=True)
    b = Ledger.open(target, schema=schema)
    try:
        set_up_company(a)
        a.execute(c.IssueInvoice(invoice_id="INV-1", customer_id="C1", entry_date=date(2026, 3, 2),
                                 lines=(c.InvoiceLineIn(description="Audit",
                                                        unit_price="1200.00"),)), **CLERK)
        a.execute(c.RecordReceipt(receipt_id="R-2", customer_id="C1", bank_account_id=BANK,
                                  entry_date=date(2026, 3, 10), amount="1000.00"), **CLERK)
        # B opened on an empty log; its receipt and application need A's customer and invoice.
        b.execute(c.RecordReceipt(receipt_id="R-1", customer_id="C1", bank_account_id=BANK,
                                  entry_date=date(2026, 3, 9), amount="500.00"), **CLERK)
        b.execute(c.ApplyReceipt(receipt_id="R-1", invoice_id="INV-1", amount="500.00"), **CLERK)
        # A last saw 1,200.00 open; it must see B's application before deciding.
        rejected = a.try_execute(c.ApplyReceipt(receipt_id="R-2", invoice_id="INV-1",
                                                amount="1000.00"), **CLERK)
        assert getattr(rejected, "code", None) == "exceeds_open_balance", rejected
        assert "has 700.00 open" in rejected.message  # type: ignore[union-attr]
        a.execute(c.ApplyReceipt(receipt_id="R-2", invoice_id="INV-1", amount="700.00"), **CLERK)
        # Ids the books assign come from the shared log, not from a stale copy.
        b_inv = b.execute(c.IssueInvoice(customer_id="C2", entry_date=date(2026, 3, 11),
                                         lines=(c.InvoiceLineIn(description="x",
                                                                unit_price="1.00"),)), **CLERK)
        a_inv = a.execute(c.IssueInvoice(customer_id="C2", entry_date=date(2026, 3, 11),
                                         lines=(c.InvoiceLineIn(description="y",
                                                                unit_price="2.00"),)), **CLERK)
        assert b_inv[0].stream != a_inv[0].stream

        store = a.store
        report = store.verify()
        assert report.ok
        assert report.events == store.count() == a.position
        assert (a.position, a.head_hash) == store.head()
        doc = q.document(store, "invoice", "INV-1")
        assert doc is not None and (doc["status"], doc["open_amount"]) == ("paid", 0)
        assert q.document(store, "receipt", "R-2")["open_amount"] == 30000  # type: ignore[index]
        assert all(t.difference == 0 for t in q.control_ties(store))
        # The read tables two writers built equal a fold of the log by one.
        live = q.table_snapshot(store)
        b.rebuild()
        assert q.table_snapshot(store) == live
    finally:
        a.close()
        b.close()


def test_an_unsupported_store_url_is_refused(tmp_path: Path) -> None:
    url = "mysql://root@127.0.0.1/books"
    with pytest.raises(StoreError) as info:
        EventStore.open(url, create=True)
    assert str(info.value).startswith(f"{url}: unsupported store URL")


def test_decoded_payloads_are_kept_by_their_text_and_equal_a_fresh_decode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``StoredEvent.event`` decodes a payload once and hands the same (frozen) object to
    every later read of that text; another text is decoded on its own; the store of
    decoded payloads starts again empty once it holds ``DECODED_KEEP`` of them."""
    import erp.store as store_module
    from erp.events import decode_event

    led = Ledger.open(tmp_path / "books.db", create=True)
    set_up_company(led)
    events = list(led.store.read(realm="erp"))
    first = [e.event for e in events]
    again = [e.event for e in led.store.read(realm="erp")]
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert first == [decode_event(e.type, e.schema_version, e.payload) for e in events]
    e = events[0]
    other = orjson.dumps({**orjson.loads(e.payload)}, option=orjson.OPT_INDENT_2).decode()
    assert other != e.payload
    x = store_module.decoded("erp", e.type, e.schema_version, other, decode_event)
    assert x == first[0] and x is not first[0]
    monkeypatch.setattr(store_module, "DECODED_KEEP", 1)
    store_module.decoded("erp", e.type, e.schema_version, e.payload + " ", decode_event)
    assert len(store_module._DECODED) == 1  # a new text found it full: emptied first
    y = store_module.decoded("erp", e.type, e.schema_version, e.payload, decode_event)
    assert y == first[0] and y is not first[0]  # emptied: decoded afresh
    assert len(store_module._DECODED) == 1
    led.close()

"""The PostgreSQL test fixtures cannot stall a run: a schema held by a leaked session drops."""

from __future__ import annotations

import pytest

import tests.conftest as conftest
from tests.conftest import PG_URL, drop_pg_schema, pg_schema, require_postgres

pytestmark = pytest.mark.postgres


def test_a_schema_locked_by_a_session_left_in_a_transaction_is_still_dropped(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    import psycopg

    schema = pg_schema(request.node.nodeid)
    url = PG_URL.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute(f'CREATE SCHEMA "{schema}"')
        setup.execute(f'CREATE TABLE "{schema}".t (x int)')
    leaked = psycopg.connect(url)  # not autocommit: the SELECT opens a transaction
    try:
        leaked.execute(f'SELECT * FROM "{schema}".t').fetchall()
        monkeypatch.setattr(conftest, "DROP_LOCK_TIMEOUT", "1s")
        with pytest.warns(UserWarning, match=f"schema {schema}: sessions left open"):
            drop_pg_schema(schema)
        with psycopg.connect(url) as check:
            assert check.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s",
                                 (schema,)).fetchone() == (0,)
    finally:
        leaked.close()


def test_a_free_schema_drops_without_a_warning(request: pytest.FixtureRequest,
                                               recwarn: pytest.WarningsRecorder) -> None:
    require_postgres()
    import psycopg

    schema = pg_schema(request.node.nodeid)
    with psycopg.connect(PG_URL.replace("postgresql+psycopg", "postgresql"),
                         autocommit=True) as setup:
        setup.execute(f'CREATE SCHEMA "{schema}"')
    drop_pg_schema(schema)
    drop_pg_schema(schema)  # a second drop of what is gone is fine
    assert not [w for w in recwarn if "sessions left open" in str(w.message)]

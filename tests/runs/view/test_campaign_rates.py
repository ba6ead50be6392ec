"""The campaign page's pass^k is the report's: one definition (``all_k_accepted``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from runs.campaigns.metrics import all_k_accepted, by_system
from runs.campaigns.reading import open_campaign
from runs.cli import main
from runs.view.campaign import read_campaign_view
from tests.runs.campaigns.test_metrics import row


def test_a_unit_counts_toward_pass_hat_k_only_with_every_repetition_accepted() -> None:
    ok = [row("s", 0, "A", i, passed=4) for i in (1, 2, 3)]
    no = row("s", 0, "A", 4, passed=1)
    assert all_k_accepted(ok, 3)
    assert not all_k_accepted([*ok, no], 3)  # a rejected 4th is not outvoted
    assert not all_k_accepted(ok[:2], 3)  # fewer than k recorded
    assert not all_k_accepted(ok, 0)


def test_the_page_counts_a_rejected_repetition_beyond_the_matrix_as_the_report_does(
        tmp_path: Path) -> None:
    results = tmp_path / "res"
    r = CliRunner().invoke(main, ["sweep", "cash-application", "--seeds", "0-1", "--systems",
                                  "reference", "--runs", "2", "--label", "t",
                                  "--results-dir", str(results)])
    assert r.exit_code == 0, r.output
    db = results / "t" / "results.db"
    with sqlite3.connect(db) as conn:  # a third, rejected repetition of seed 0's unit
        cols = [c[1] for c in conn.execute("PRAGMA table_info(attempts)")]
        rep2 = dict(zip(cols, conn.execute(
            "SELECT * FROM attempts WHERE seed = 0 AND repetition = 2").fetchone(),
            strict=True))
        rep2.update(repetition=3, verdict_status="rejected", accepted=0)
        conn.execute(f"INSERT INTO attempts ({', '.join(cols)}) VALUES "
                     f"({', '.join('?' for _ in cols)})", [rep2[c] for c in cols])
    c = open_campaign(results, "t")
    report = by_system(c.rows, k=c.matrix.k)["reference"]
    assert (report.all_k_units, report.units) == (1, 2)
    page = read_campaign_view(results, "t")
    (rate,) = page.rates
    assert rate["pass_hat_k"]["value"] == report.pass_hat_k == 0.5

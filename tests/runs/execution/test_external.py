"""External agents end to end: an adapter that acts through the real `erp` client and API,
in local mode and in docker mode, with timeouts, attribution and what the agent can see."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from runs.cli import main
from scenarios.loader import find_scenario

LIB = find_scenario("cash-application").parent

# Applies the first unapplied receipt that names a customer to that customer's oldest open
# invoice, through `erp` only; lists what it can see; then, if asked, sleeps.
APPLY = r"""#!/bin/sh
set -e
ws=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --workspace) ws="$2"; shift 2;;
    --output-dir) out="$2"; shift 2;;
    --prompt-file) shift 2;;
    *) shift;;
  esac
done
cd "$ws"
erp whoami --format json > "$out/whoami.json"
ls -laR "$ws" > "$out/listing.txt"
erp receipts list --unapplied --format json > "$out/receipts.json"
python3 - "$out" <<'PY'
import json, subprocess, sys
out = sys.argv[1]
receipts = [r for r in json.load(open(f"{out}/receipts.json"))["items"] if r.get("customer")]
done = []
for r in receipts:
    inv = json.loads(subprocess.run(["erp", "invoices", "list", "--status", "open",
                                     "--customer", r["customer"], "--format", "json"],
                                    capture_output=True, text=True, check=True).stdout)["items"]
    if inv:
        amount = min(float(r["open_amount"]), float(inv[0]["open_amount"]))
        subprocess.run(["erp", "receipts", "apply", r["id"], inv[0]["id"], f"{amount:.2f}"],
                       check=True)
        done.append([r["id"], inv[0]["id"], f"{amount:.2f}"])
        break
json.dump(done, open(f"{out}/applied.json", "w"))
PY
printf 'line_id,reason\n' > "$out/unapplied.csv"
if [ -n "$SLEEP_S" ]; then sleep "$SLEEP_S"; fi
"""


def scenario(tmp_path: Path, days: int = 3, **turns: object) -> Path:
    folder = tmp_path / "sc"
    shutil.copytree(LIB, folder)
    data = yaml.safe_load((folder / "scenario.yaml").read_text())
    data["calendar"] = {"start": "2026-03-02", "business_days": days, "holidays": []}
    data["company"]["opening"]["ar_open_invoices"] = 80
    data["population"]["customers"]["count"] = 40
    data["injections"] = []
    data["checks"] = [{"type": "csv_columns", "path": "out/unapplied.csv",
                       "columns": ["line_id", "reason"]},
                      {"type": "attribution"}]
    data["turns"].update(turns)
    (folder / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / "scenario.yaml"


def adapter(tmp_path: Path, sleep: str | None = None) -> Path:
    path = tmp_path / "adapters" / "apply"
    path.parent.mkdir(parents=True, exist_ok=True)
    # a sleeper first writes something (a new customer), so that its write can be traced
    text = APPLY if sleep is None else APPLY.replace(
        'if [ -n "$SLEEP_S" ]',
        f'erp customers register "Sleepy $(date +%N) Ltd"; SLEEP_S={sleep}; '
        'if [ -n "$SLEEP_S" ]')
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def events_by(out: Path, actor_prefix: str) -> list[tuple[str, str, str]]:
    con = sqlite3.connect(out / "books.db")
    try:
        return con.execute("SELECT actor, role, type FROM events WHERE actor LIKE ? "
                           "ORDER BY position", (actor_prefix + "%",)).fetchall()
    finally:
        con.close()


def check_attempt(out: Path, mode: str) -> None:
    summary = json.loads((out / "summary.json").read_text())
    turns = summary["turns"]
    assert [t["status"] for t in turns] == ["completed"] * 3
    for t in turns:
        assert t["process"]["mode"] == mode and t["process"]["exit_code"] == 0
        assert (out / t["process"]["stdout_log"]).is_file()
    applied = [json.loads((out / "turns" / f"{n:02d}" / "outputs" / "applied.json").read_text())
               for n in (1, 2, 3)]
    assert any(applied), "the fake agent found nothing to apply"
    writes = events_by(out, "agent:")
    assert writes, "no write of the agent reached the books"
    turn_of = {f"agent:turn-{n}" for n in (1, 2, 3)}
    assert {a for a, _, _ in writes} <= turn_of
    assert {r for _, r, _ in writes} == {"clerk"}
    assert "receipt_applied" in {t for _, _, t in writes}
    who = json.loads((out / "turns" / "01" / "outputs" / "whoami.json").read_text())
    assert who["actor"] == "agent:turn-1" and who["role"] == "clerk"
    listing = (out / "turns" / "01" / "outputs" / "listing.txt").read_text()
    for hidden in ("books.db", "verdict.json", "summary.json", "scenario.yaml", "reference"):
        assert hidden not in listing
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["status"] == "accepted", verdict
    # the token was revoked and the connection file removed
    assert not (out / "turns" / "01" / "workspace" / ".erpsim" / "connection.json").exists()


def test_a_fake_external_agent_works_through_erp_in_local_mode(tmp_path: Path) -> None:
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path)), "--agent-cmd",
                                    str(adapter(tmp_path)), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    check_attempt(out, "local")


def test_a_sleeping_agent_is_stopped_and_recorded_as_a_timeout(tmp_path: Path) -> None:
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path, on_timeout="end")),
                                    "--agent-cmd", str(adapter(tmp_path, sleep="30")),
                                    "--turn-timeout", "2", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    turns = summary["turns"]
    assert len(turns) == 1  # on_timeout: end -> no second turn
    t = turns[0]
    assert t["status"] == "timeout" and t["process"]["timed_out"] is True
    assert t["process"]["exit_code"] is None and t["process"]["wall_s"] < 15
    # what it wrote before the kill stays, attributed to its turn
    assert ("agent:turn-1", "clerk", "customer_registered") in events_by(out, "agent:")
    assert {a for a, _, _ in events_by(out, "agent:")} == {"agent:turn-1"}


def test_after_a_timeout_the_attempt_goes_on_when_the_scenario_says_so(tmp_path: Path) -> None:
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path)), "--agent-cmd",
                                    str(adapter(tmp_path, sleep="30")), "--turn-timeout", "2",
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    turns = json.loads((out / "summary.json").read_text())["turns"]
    assert [t["status"] for t in turns] == ["timeout"] * 3


def test_bad_agent_options_are_refused(tmp_path: Path) -> None:
    sc = str(scenario(tmp_path))
    res = CliRunner().invoke(main, ["run", sc, "--agent-cmd", str(tmp_path / "none"),
                                    "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "is not a file" in res.output
    res = CliRunner().invoke(main, ["run", sc, "--docker", "img", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--docker needs --agent-cmd" in res.output
    res = CliRunner().invoke(main, ["run", sc, "--agent-cmd", str(adapter(tmp_path)),
                                    "--agent-env", "1BAD", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "expected NAME or NAME=VALUE" in res.output
    assert not (tmp_path / "x").exists()


def docker_ready() -> bool:
    host = os.environ.get("DOCKER_HOST")
    if not host:
        return False
    import docker

    try:
        client = docker.DockerClient(base_url=host)
        client.images.get("erpsim-agent:bookworm")
        return True
    except Exception:
        return False


@pytest.mark.docker
def test_a_fake_external_agent_works_through_erp_in_docker_mode(tmp_path: Path) -> None:
    if not docker_ready():
        if os.environ.get("CI") == "true":
            pytest.fail("docker engine or image erpsim-agent:bookworm unavailable under CI "
                        "(.ci/run starts them with .ci/docker-up)")
        pytest.skip('docker mode needs an engine and the image: eval "$(.ci/docker-up)"')
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path)), "--agent-cmd",
                                    str(adapter(tmp_path)), "--docker", "erpsim-agent:bookworm",
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    check_attempt(out, "docker")

"""External agents end to end: an adapter that acts through the real `erp` client and API,
in local mode and in docker mode, with timeouts, attribution and what the agent can see."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
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


# A sleeper writes first (a new customer, its output file), so that its write can be traced
# and the verdict does not depend on how far it got; then it sleeps past the turn's timeout.
SLEEPER = r"""#!/bin/sh
set -e
ws=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --workspace) ws="$2"; shift 2;;
    --output-dir) out="$2"; shift 2;;
    *) shift;;
  esac
done
cd "$ws"
printf 'line_id,reason\n' > "$out/unapplied.csv"
erp customers register "Sleepy $(date +%N) Ltd"
: > "$out/written"
sleep "$SLEEP_S"
"""


def adapter(tmp_path: Path, sleep: str | None = None) -> Path:
    path = tmp_path / "adapters" / "apply"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = APPLY if sleep is None else SLEEPER.replace('"$SLEEP_S"', sleep)
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
                                    "--agent-cmd", str(adapter(tmp_path, sleep="300")),
                                    "--turn-timeout", "15", "--out", str(out), "--quiet"])
    assert (out / "turns" / "01" / "outputs" / "written").is_file(), res.output
    assert res.exit_code == 1, res.output  # no turn completed
    assert "turn 1 (2026-03-02): timeout after" in res.output
    assert "no turn completed" in res.output
    summary = json.loads((out / "summary.json").read_text())
    turns = summary["turns"]
    assert len(turns) == 1  # on_timeout: end -> no second turn
    t = turns[0]
    assert t["status"] == "timeout" and t["process"]["timed_out"] is True
    assert t["process"]["exit_code"] is None and t["process"]["wall_s"] < 200
    # what it wrote before the kill stays, attributed to its turn
    assert ("agent:turn-1", "clerk", "customer_registered") in events_by(out, "agent:")
    assert {a for a, _, _ in events_by(out, "agent:")} == {"agent:turn-1"}


def test_after_a_timeout_the_attempt_goes_on_when_the_scenario_says_so(tmp_path: Path) -> None:
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path)), "--agent-cmd",
                                    str(adapter(tmp_path, sleep="30")), "--turn-timeout", "2",
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 1, res.output  # every turn timed out: not a success
    assert "turns not completed: 3 of 3 (3 timeout)" in " ".join(res.output.split())
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


# --- every agent action recorded; loud harness faults; home templates ----------------------

# Applies one receipt (through apply_one.py), then tries an application that is refused,
# reads the home template's file into out/, and leaves the file the scenario asks for.
RECORDING = r"""#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --output-dir) out="$2"; shift 2;;
    *) shift 2;;
  esac
done
python3 "$APPLY_ONE" > "$out/applied.txt"
erp receipts apply NO-SUCH-RECEIPT NO-SUCH-INVOICE 1.00 2> "$out/refused.txt" || true
cat "$HOME/.agentrc" > "$out/home.txt" 2>/dev/null || echo none > "$out/home.txt"
echo "x" > "$HOME/.agentrc"
printf 'line_id,reason\n' > "$out/unapplied.csv"
"""

APPLY_ONE = Path(__file__).resolve().parents[2] / "agents" / "apply_one.py"


def recording_adapter(tmp_path: Path) -> Path:
    path = tmp_path / "rec" / "agent"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RECORDING)
    path.chmod(0o755)
    return path


def read_jsonl(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_every_request_of_an_external_agent_is_in_api_jsonl_and_counted(
        tmp_path: Path) -> None:
    out = tmp_path / "a"
    home = tmp_path / "home-template"
    home.mkdir()
    (home / ".agentrc").write_text("from the template\n")
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path)), "--agent-cmd",
                                    str(recording_adapter(tmp_path)), "--agent-env",
                                    f"APPLY_ONE={APPLY_ONE}", "--home-template", str(home),
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    turns = json.loads((out / "summary.json").read_text())["turns"]
    total = sum(t["commands"] for t in turns)
    assert f"agent commands │ {total} " in flat and "agent commands refused │ 3 " in flat
    writes = {p for p, in sqlite3.connect(out / "books.db").execute(
        "SELECT position FROM events WHERE actor LIKE 'agent:%'")}
    logged: set[int] = set()
    for t in turns:
        n = t["turn"]
        assert t["api_log"] == f"turns/{n:02d}/agent/api.jsonl"
        lines = read_jsonl(out / t["api_log"])
        assert t["requests"] == len(lines) >= 3
        commands = [x for x in lines if x["command"]]
        assert {x["command"] for x in commands} == {"ApplyReceipt"}
        assert t["commands"] == len(commands) in (1, 2)
        applied = (out / "turns" / f"{n:02d}" / "outputs" / "applied.txt").read_text()
        assert (len(commands) == 2) == applied.startswith("APPLIED")
        *ok, refused = commands
        assert all(x["status"] == 200 and x["events"] and x["method"] == "POST" for x in ok)
        assert refused["status"] == 404 and refused["error"] == "unknown_receipt"
        assert t["rejections"] == [{"command": "ApplyReceipt", "code": "unknown_receipt",
                                    "message": refused["message"]}]
        logged |= {p for x in lines for p in x["events"]}
        # the template reaches every turn's fresh HOME; what a turn wrote there does not
        home_seen = (out / "turns" / f"{n:02d}" / "outputs" / "home.txt").read_text()
        assert home_seen == "from the template\n"
    assert writes and logged == writes  # every write of the agent is on a line of api.jsonl


def test_a_built_in_agent_gets_the_same_record(tmp_path: Path) -> None:
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path)), "--agent", "reference",
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    turns = json.loads((out / "summary.json").read_text())["turns"]
    assert sum(t["commands"] for t in turns) > 0
    for t in turns:
        lines = read_jsonl(out / t["api_log"])
        assert len([x for x in lines if x["command"]]) == t["commands"] == t["requests"]
        assert all(x["method"] is None and x["route"] is None for x in lines)
        assert len([x for x in lines if x["status"] >= 400]) == len(t["rejections"])


def test_an_adapter_that_cannot_start_stops_the_run_with_exit_3(tmp_path: Path) -> None:
    path = recording_adapter(tmp_path)
    path.chmod(0o644)
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(scenario(tmp_path)), "--agent-cmd", str(path),
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 3, res.output
    flat = " ".join(res.output.split())
    assert f"turn 1 (2026-03-02): error: adapter {path} is not executable" in flat
    assert "the attempt stopped at turn 1; nothing was graded" in flat
    assert not (out / "summary.json").exists() and not (out / "turns" / "02").exists()
    assert "is not executable" in (out / "error.txt").read_text()
    again = CliRunner().invoke(main, ["run", str(tmp_path / "sc" / "scenario.yaml"),
                                      "--agent-cmd", str(path), "--out", str(out), "--quiet",
                                      "--replace"])
    assert again.exit_code == 3, again.output  # a stopped attempt's folder can be replaced


def test_an_adapter_reporting_a_dead_model_endpoint_stops_the_run(tmp_path: Path) -> None:
    path = tmp_path / "ad" / "agent"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\necho 'starting' >&2\necho 'fake adapter: infrastructure "
                    "error: model endpoint http://127.0.0.1:9 refused the connection' >&2\n"
                    "exit 75\n")
    path.chmod(0o755)
    out = tmp_path / "a"
    res = subprocess.run([sys.executable, "-m", "runs.cli", "run", str(scenario(tmp_path)),
                          "--agent-cmd", str(path), "--out", str(out), "--quiet"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 3, res.stdout + res.stderr
    assert "model endpoint http://127.0.0.1:9 refused the connection" in res.stdout
    assert "infrastructure error" in res.stderr and "turn 1" in res.stderr
    assert not (out / "turns" / "02").exists()


def test_a_home_template_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    sc = str(scenario(tmp_path))
    res = CliRunner().invoke(main, ["run", sc, "--agent-cmd",
                                    str(recording_adapter(tmp_path)), "--home-template",
                                    str(tmp_path / "nope"), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--home-template" in res.output
    assert "is not a directory" in res.output and not (tmp_path / "x").exists()
    res = CliRunner().invoke(main, ["run", sc, "--home-template", str(tmp_path), "--out",
                                    str(tmp_path / "x")])
    assert res.exit_code == 2 and "--home-template needs --agent-cmd" in res.output

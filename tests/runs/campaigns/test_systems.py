"""Configured systems: the strict systems file, identity hashes, and external adapters in a
sweep (exit codes, timeouts and usage summed over turns, unknown usage staying unknown)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runs.campaigns.plan import plan_campaign
from runs.campaigns.run import read_campaign, run_campaign
from runs.campaigns.systems import (
    SystemsError,
    builtin_system,
    load_systems_file,
    parse_system_names,
    resolve_systems,
)
from tests.runs.campaigns.test_campaign import ledger_rows, small_scenario, sweep
from tests.runs.execution.test_docker_mode import engine  # noqa: F401  (the docker fixture)

# Leaves the file the scenario asks for; writes usage.json when USAGE is "always", or on
# the first turn only when USAGE is "first" (out/ carries over to later turns); exits
# with EXIT on the turn number EXIT_TURN; sleeps SLEEP seconds.
ADAPTER = r"""#!/bin/sh
out=""; prompt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --output-dir) out="$2"; shift 2;;
    --prompt-file) prompt="$2"; shift 2;;
    *) shift 2;;
  esac
done
printf 'line_id,reason\n' > "$out/unapplied.csv"
if [ "$USAGE" = always ] || { [ "$USAGE" = first ] && [ ! -f "$out/.seen" ]; }; then
  printf '{"input_tokens": 1000, "output_tokens": 50, "cost_usd": 0.25, "model": "m"}' \
    > "$ERPSIM_USAGE_FILE"
fi
touch "$out/.seen"
if [ -n "$EXIT_TURN" ] && grep -q "turn $EXIT_TURN " "$prompt" 2>/dev/null; then exit "$EXIT"; fi
if [ -n "$SLEEP" ]; then sleep "$SLEEP"; fi
exit 0
"""


def write_adapter(folder: Path, name: str = "agent") -> Path:
    path = folder / "adapters" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ADAPTER)
    path.chmod(0o755)
    return path


def write_systems(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "systems.yaml"
    path.write_text(text)
    return path


def test_usage_is_summed_over_turns_and_unknown_stays_unknown(tmp_path: Path) -> None:
    write_adapter(tmp_path)
    systems = write_systems(tmp_path, """\
paid:
  adapter: adapters/agent
  env: {USAGE: always}
silent:
  adapter: adapters/agent
partly:
  adapter: adapters/agent
  env: {USAGE: first}
""")
    sc = small_scenario(tmp_path, days=3)
    res = sweep(str(sc), "--seeds", "0", "--systems", "paid,silent,partly,null",
                "--systems-file", str(systems), "--label", "u", "--results-dir",
                str(tmp_path / "r"), "--quiet")
    assert res.exit_code == 0, res.output
    by = {r.system: r for r in ledger_rows(tmp_path / "r" / "u")}
    paid = by["paid"]
    assert (paid.input_tokens, paid.output_tokens, paid.cost_usd) == (3000, 150, 0.75)
    assert paid.exit_codes == (0, 0, 0) and paid.status == "completed" and paid.accepted
    for name in ("silent", "partly", "null"):  # a turn without usage: unknown, not zero
        r = by[name]
        assert (r.input_tokens, r.output_tokens, r.cost_usd) == (None, None, None), name
    assert by["silent"].outputs == paid.outputs  # usage.json is never an output


def test_exit_codes_crashes_and_timeouts_are_recorded_per_turn(tmp_path: Path) -> None:
    write_adapter(tmp_path)
    systems = write_systems(tmp_path, """\
crashes:
  adapter: adapters/agent
  env: {EXIT_TURN: "2", EXIT: "3"}
sleeps:
  adapter: adapters/agent
  timeout_s: 0.5
  env: {SLEEP: "5"}
""")
    sc = small_scenario(tmp_path, days=2)
    res = sweep(str(sc), "--seeds", "0", "--systems", "crashes,sleeps", "--systems-file",
                str(systems), "--label", "x", "--results-dir", str(tmp_path / "r"), "--quiet")
    assert res.exit_code == 0, res.output
    by = {r.system: r for r in ledger_rows(tmp_path / "r" / "x")}
    assert by["crashes"].exit_codes == (0, 3) and by["crashes"].status == "crashed"
    assert by["crashes"].accepted  # execution and acceptance are separate
    assert by["sleeps"].exit_codes == (None, None) and by["sleeps"].status == "timeout"
    assert all(d >= 0.5 for d in by["sleeps"].turn_durations)


def test_a_turn_that_cannot_run_is_an_infrastructure_error(tmp_path: Path) -> None:
    write_adapter(tmp_path)
    systems = write_systems(tmp_path, "gone:\n  adapter: adapters/agent\n")
    resolved = resolve_systems(["gone"], systems)
    (tmp_path / "adapters" / "agent").unlink()  # vanishes after planning
    sc = small_scenario(tmp_path, days=2)
    plan = plan_campaign("g", scenarios=[str(sc)], seeds=[0], systems=resolved)
    # (the preflight would refuse the sweep: this is what an adapter gone mid-sweep gives)
    [row] = run_campaign(plan, tmp_path / "g", check_first=False).recorded
    assert row.status == "infrastructure_error" and not row.accepted
    assert row.error is not None
    assert row.error.startswith("AttemptAborted: turn 1 (2026-03-02): infrastructure error: "
                                "adapter ")
    assert "does not exist" in row.error
    folder = tmp_path / "g" / row.attempt_dir
    assert "does not exist" in (folder / "error.txt").read_text()
    assert not (folder / "turns" / "02").exists()  # the attempt stopped at its first turn


def test_campaign_json_records_external_systems_without_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = write_adapter(tmp_path)
    monkeypatch.setenv("ERPSIM_TEST_SECRET", "s3cret")
    systems = write_systems(tmp_path, """\
ext:
  adapter: adapters/agent
  timeout_s: 30
  env: {ERPSIM_TEST_SECRET: null, USAGE: always}
""")
    [ext] = resolve_systems(["ext"], systems)
    assert ext.env == {"ERPSIM_TEST_SECRET": "s3cret", "USAGE": "always"}
    sc = small_scenario(tmp_path, days=2)
    plan = plan_campaign("e", scenarios=[str(sc)], seeds=[0], systems=[ext])
    run_campaign(plan, tmp_path / "e", command=["erpsim", "sweep"])
    text = (tmp_path / "e" / "campaign.json").read_text()
    assert "s3cret" not in text
    [record] = read_campaign(tmp_path / "e")["matrix"]["systems"]
    import hashlib

    assert record == {"name": "ext", "builtin": False, "sha256": ext.sha256, "declaration": {
        "adapter": "agent", "mode": "local", "image": None, "cpus": None, "memory": None,
        "network": None, "timeout_s": 30.0,
        "env": {"ERPSIM_TEST_SECRET": None, "USAGE": "always"}, "home": False,
        "adapter_sha256": hashlib.sha256(adapter.read_bytes()).hexdigest(),
        "adapter_folder_sha256": ext.declaration["adapter_folder_sha256"],
        "home_sha256": None}}
    monkeypatch.setenv("ERPSIM_TEST_SECRET", "other")  # a copied value is not hashed
    assert resolve_systems(["ext"], systems)[0].sha256 == ext.sha256
    # the identity changes with the adapter's bytes, and with the declaration
    adapter.write_text(adapter.read_text() + "\n# changed\n")
    assert resolve_systems(["ext"], systems)[0].sha256 != ext.sha256
    systems.write_text(systems.read_text().replace("timeout_s: 30", "timeout_s: 31"))
    adapter.write_text(adapter.read_text().removesuffix("\n# changed\n"))
    assert resolve_systems(["ext"], systems)[0].sha256 != ext.sha256


@pytest.mark.parametrize(("text", "message"), [
    ("ext:\n  adapter: adapters/agent\n  timout_s: 3\n",
     "ext.timout_s: unknown field (allowed: adapter, mode, image, cpus, memory, network, "
     "network_mode, timeout_s, env, home, price)"),
    ("ext:\n  adapter: adapters/agent\n  network_mode: 'a b'\n",
     "ext.network_mode: 'a b' is not valid (String should match pattern "
     "'^[A-Za-z0-9][A-Za-z0-9_.:-]*$')"),
    ("ext:\n  adapter: adapters/agent\n  mode: cloud\n",
     "ext.mode: 'cloud' is not valid (Input should be 'local' or 'docker')"),
    ("ext:\n  adapter: adapters/agent\n  timeout_s: -1\n",
     "ext.timeout_s: -1 is not valid (Input should be greater than 0)"),
    ("ext:\n  adapter: adapters/agent\n  timeout_s: .inf\n",
     "ext.timeout_s: inf is not valid (Input should be a finite number)"),
    ("ext:\n  adapter: adapters/agent\n  price: {input: .nan, cached_input: 0, output: 1}\n",
     "ext.price.input: nan is not valid (Input should be a finite number)"),
    ("ext:\n  mode: local\n", "ext.adapter: missing (required)"),
    ("ext:\n  adapter: adapters/nothing\n",
     "ext.adapter: {tmp}/adapters/nothing is not a file (expected an adapter executable)"),
    ("ext:\n  adapter: adapters/agent\n  image: x\n", "ext.image: only for mode: docker"),
    ("ext:\n  adapter: adapters/agent\n  home: homes/none\n",
     "ext.home: {tmp}/homes/none is not a directory (expected a folder copied into each "
     "turn's HOME)"),
    ("ext:\n  adapter: adapters/agent\n  env: {ERPSIM_NOT_SET_ANYWHERE: null}\n",
     "ext.env.ERPSIM_NOT_SET_ANYWHERE: null copies it from this environment, where it is "
     "not set"),
    ("reference:\n  adapter: adapters/agent\n",
     "reference: is a built-in agent's name; choose another name"),
    ("'a b':\n  adapter: adapters/agent\n", "'a b': not a usable system name"),
    ("ext: adapters/agent\n", "ext: expected a mapping (adapter: PATH, ...), got str"),
    ("- ext\n", "expected a mapping of system names to declarations"),
    ("ext:\n  adapter: a\n  adapter: b\n", "not valid YAML"),
])
def test_systems_file_errors_name_the_file_and_the_field(tmp_path: Path, text: str,
                                                         message: str) -> None:
    write_adapter(tmp_path)
    path = write_systems(tmp_path, text)
    with pytest.raises(SystemsError) as e:
        load_systems_file(path)
    assert str(e.value).startswith(f"systems file {path}: ")
    assert message.format(tmp=tmp_path) in str(e.value)


def test_a_not_executable_adapter_is_refused(tmp_path: Path) -> None:
    adapter = write_adapter(tmp_path)
    adapter.chmod(0o644)
    path = write_systems(tmp_path, "ext:\n  adapter: adapters/agent\n")
    with pytest.raises(SystemsError, match=r"ext\.adapter: .* is not executable"):
        load_systems_file(path)


def test_system_names(tmp_path: Path) -> None:
    assert parse_system_names("reference, null") == ["reference", "null"]
    with pytest.raises(SystemsError, match="'null' is named twice"):
        parse_system_names("null,null")
    with pytest.raises(SystemsError, match=r"system 'codex': unknown \(known, built-in; "
                                           r"declare others with --systems-file: reference, "
                                           r"oracle, null\)"):
        resolve_systems(["codex"])
    assert builtin_system("null").sha256 != builtin_system("reference").sha256
    assert builtin_system("null").sha256 == resolve_systems(["null"])[0].sha256


def test_sweep_reports_a_bad_systems_file_and_writes_nothing(tmp_path: Path) -> None:
    path = write_systems(tmp_path, "ext:\n  adapter: adapters/none\n")
    res = sweep("cash-application", "--systems", "ext", "--systems-file", str(path),
                "--label", "bad", "--results-dir", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert res.output.startswith(f"error: systems file {path}: ext.adapter: ")
    assert not (tmp_path / "r").exists()
    assert os.listdir(tmp_path) == ["systems.yaml"]


@pytest.mark.docker
@pytest.mark.usefixtures("engine")
def test_a_docker_system_runs_in_its_image_and_the_image_id_is_recorded(
        tmp_path: Path) -> None:
    from tests.runs.execution.test_docker_mode import IMAGE

    write_adapter(tmp_path)
    systems = write_systems(tmp_path, f"""\
boxed:
  adapter: adapters/agent
  mode: docker
  image: {IMAGE}
  cpus: 1
  memory: 1g
  env: {{USAGE: always}}
""")
    sc = small_scenario(tmp_path, days=2)
    res = sweep(str(sc), "--seeds", "0", "--systems", "boxed", "--systems-file", str(systems),
                "--label", "dock", "--results-dir", str(tmp_path / "r"), "--quiet")
    assert res.exit_code == 0, res.output
    [row] = ledger_rows(tmp_path / "r" / "dock")
    assert row.status == "completed" and row.exit_codes == (0, 0) and row.accepted
    assert (row.input_tokens, row.output_tokens) == (2000, 100)
    images = read_campaign(tmp_path / "r" / "dock")["environment"]["docker_images"]
    assert images[IMAGE].startswith("sha256:")

"""A sweep's preflight (the store, the docker engine and image, the adapters, the model
endpoints: each problem naming its setting, nothing created), the system identity over the
whole adapter folder and the home template, home templates in a sweep, the first
infrastructure error at the end of a sweep, and the CLI versions in campaign.json."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runs.campaigns.plan import plan_campaign
from runs.campaigns.preflight import preflight
from runs.campaigns.run import read_campaign
from runs.campaigns.systems import load_systems_file, resolve_systems
from runs.errors import PreflightFailed
from tests.runs.campaigns.test_campaign import ledger_rows, small_scenario, sweep
from tests.runs.campaigns.test_systems import write_adapter, write_systems
from tests.runs.execution.test_docker_mode import engine  # noqa: F401  (the docker fixture)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    """A real loopback HTTP server that answers 404 to everything (a model endpoint's
    base URL usually has no page of its own): it answers, so the preflight passes."""
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def run_sweep(tmp_path: Path, systems: Path, names: str, *extra: str) -> object:
    sc = small_scenario(tmp_path, days=2)
    return sweep(str(sc), "--seeds", "0", "--systems", names, "--systems-file", str(systems),
                 "--label", "p", "--results-dir", str(tmp_path / "r"), "--quiet", *extra)


def flat(text: str) -> str:
    return " ".join(text.split())


# --- the preflight ------------------------------------------------------------------------

def test_a_store_url_that_does_not_connect_is_refused_before_the_label(
        tmp_path: Path) -> None:
    res = sweep(str(small_scenario(tmp_path, days=2)), "--seeds", "0", "--systems", "null",
                "--label", "p", "--results-dir", str(tmp_path / "r"), "--quiet",
                "--store-url", f"postgresql://postgres:pw@127.0.0.1:{closed_port()}/test")
    assert res.exit_code == 2, res.output
    out = flat(res.output)
    assert "error: the sweep cannot start (nothing was created)" in out
    assert "--store-url postgresql://postgres:***@127.0.0.1:" in out
    assert "does not connect" in out and "pw@" not in out
    assert not (tmp_path / "r").exists()


def test_every_adapter_and_endpoint_problem_is_listed_at_once(tmp_path: Path) -> None:
    write_adapter(tmp_path)
    bare = tmp_path / "adapters" / "bare"
    bare.write_text("echo no shebang\n")
    bare.chmod(0o755)
    wrong = tmp_path / "adapters" / "wrong"
    wrong.write_text("#!/no/such/python3\n")
    wrong.chmod(0o755)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    systems = write_systems(tmp_path, f"""\
gone:
  adapter: adapters/agent
bare:
  adapter: adapters/bare
wrong:
  adapter: adapters/wrong
dead:
  adapter: adapters/agent
  env: {{ERPSIM_MODEL_BASE_URL: "{dead}"}}
""")
    resolved = resolve_systems(["gone", "bare", "wrong", "dead"], systems)
    (tmp_path / "adapters" / "agent").chmod(0o644)  # no longer executable after planning
    plan = plan_campaign("p", scenarios=[str(small_scenario(tmp_path, days=2))], seeds=[0],
                         systems=resolved)
    with pytest.raises(PreflightFailed) as e:
        preflight(plan)
    problems = e.value.problems
    adapter = tmp_path / "adapters" / "agent"
    assert problems[0] == f"system gone.adapter: {adapter} is not executable (chmod +x {adapter})"
    assert problems[1] == (f"system bare.adapter: {bare} has no '#!' line (a script needs "
                           "one, e.g. #!/bin/sh)")
    assert problems[2] == (f"system wrong.adapter: {wrong} names the interpreter "
                           "/no/such/python3 in its '#!' line, which does not exist")
    assert problems[3].startswith(f"system dead.adapter: {adapter} is not executable")
    assert problems[4].startswith(f"system dead.env.ERPSIM_MODEL_BASE_URL: {dead} does not "
                                  "answer (")
    assert len(problems) == 5


def test_a_model_endpoint_that_answers_passes(tmp_path: Path, http_server: str) -> None:
    write_adapter(tmp_path)
    systems = write_systems(tmp_path, f"""\
live:
  adapter: adapters/agent
  env: {{ERPSIM_MODEL_BASE_URL: "{http_server}"}}
""")
    res = run_sweep(tmp_path, systems, "live")
    assert res.exit_code == 0, res.output


def test_a_dead_model_endpoint_stops_the_sweep_before_its_label(tmp_path: Path) -> None:
    write_adapter(tmp_path)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    systems = write_systems(tmp_path, f"""\
dead:
  adapter: adapters/agent
  env: {{ERPSIM_MODEL_BASE_URL: "{dead}"}}
""")
    res = run_sweep(tmp_path, systems, "dead")
    assert res.exit_code == 2, res.output
    assert f"system dead.env.ERPSIM_MODEL_BASE_URL: {dead} does not answer" in flat(res.output)
    assert not (tmp_path / "r").exists()


def test_an_unreachable_docker_engine_is_named(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    write_adapter(tmp_path)
    systems = write_systems(tmp_path, "boxed:\n  adapter: adapters/agent\n  mode: docker\n")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    res = run_sweep(tmp_path, systems, "boxed")
    assert res.exit_code == 2, res.output
    assert (f"system boxed (mode: docker): the docker engine does not answer at "
            f"DOCKER_HOST=unix://{tmp_path}/no-docker.sock") in flat(res.output)
    assert not (tmp_path / "r").exists()


@pytest.mark.docker
@pytest.mark.usefixtures("engine")
def test_a_missing_image_and_a_docker_system_without_network_are_named(
        tmp_path: Path, http_server: str) -> None:
    write_adapter(tmp_path)
    systems = write_systems(tmp_path, f"""\
noimage:
  adapter: adapters/agent
  mode: docker
  image: erpsim-no-such-image:0
offline:
  adapter: adapters/agent
  mode: docker
  env: {{ERPSIM_MODEL_BASE_URL: "{http_server}"}}
""")
    res = run_sweep(tmp_path, systems, "noimage,offline")
    assert res.exit_code == 2, res.output
    out = flat(res.output)
    assert "system noimage.image: erpsim-no-such-image:0 is not on the docker engine" in out
    # without a network the model relay reaches the endpoint: nothing to say of offline
    assert "system offline" not in out
    assert not (tmp_path / "r").exists()


# --- identity: the whole adapter folder and the home template -------------------------------

def test_the_identity_covers_the_adapter_folder_and_the_home_template(tmp_path: Path) -> None:
    write_adapter(tmp_path)
    home = tmp_path / "homes" / "h"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text("model = 'a'\n")
    systems = write_systems(tmp_path, "ext:\n  adapter: adapters/agent\n  home: homes/h\n")

    def identity() -> str:
        return load_systems_file(systems)["ext"].sha256

    first = identity()
    assert load_systems_file(systems)["ext"].home_template == home.resolve()
    assert first == identity()
    cmd = tmp_path / "adapters" / "script.cmd"  # what the script adapter runs beside itself
    cmd.write_text("echo one\n")
    with_cmd = identity()
    assert with_cmd != first
    cmd.write_text("echo two\n")
    assert identity() != with_cmd
    cmd.chmod(0o755)  # the executable bit too
    changed_mode = identity()
    assert changed_mode not in (with_cmd, first)
    cache = tmp_path / "adapters" / "__pycache__"
    cache.mkdir()
    (cache / "x.pyc").write_bytes(b"\0")
    assert identity() == changed_mode  # bytecode caches are not the adapter
    (home / ".codex" / "config.toml").write_text("model = 'b'\n")
    assert identity() != changed_mode
    decl = load_systems_file(systems)["ext"].declaration
    assert decl["home"] is True and len(decl["home_sha256"]) == 64


def test_a_home_template_reaches_every_turn_of_a_sweep(tmp_path: Path) -> None:
    adapter = tmp_path / "adapters" / "homely"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in --output-dir) "
                       "out=\"$2\";; esac; shift 2; done\n"
                       "cat \"$HOME/.agentrc\" > \"$out/seen.txt\"\necho mine >> "
                       "\"$HOME/.agentrc\"\nprintf 'line_id,reason\\n' > \"$out/unapplied.csv\"\n")
    adapter.chmod(0o755)
    (tmp_path / "homes" / "h").mkdir(parents=True)
    (tmp_path / "homes" / "h" / ".agentrc").write_text("template\n")
    systems = write_systems(tmp_path, "homely:\n  adapter: adapters/homely\n  home: homes/h\n")
    res = run_sweep(tmp_path, systems, "homely")
    assert res.exit_code == 0, res.output
    [row] = ledger_rows(tmp_path / "r" / "p")
    for n in ("01", "02"):
        seen = tmp_path / "r" / "p" / row.attempt_dir / "turns" / n / "outputs" / "seen.txt"
        assert seen.read_text() == "template\n"  # a fresh copy each turn
    assert (tmp_path / "homes" / "h" / ".agentrc").read_text() == "template\n"


# --- the end of a sweep: the first infrastructure error; CLI versions ----------------------

def test_the_sweep_ends_with_the_first_infrastructure_error_and_its_file(
        tmp_path: Path) -> None:
    adapter = tmp_path / "adapters" / "down"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("#!/bin/sh\necho 'down adapter: infrastructure error: model endpoint "
                       "refused the connection' >&2\nexit 75\n")
    adapter.chmod(0o755)
    systems = write_systems(tmp_path, "down:\n  adapter: adapters/down\n")
    res = run_sweep(tmp_path, systems, "down,null")
    assert res.exit_code == 1, res.output
    [row] = [r for r in ledger_rows(tmp_path / "r" / "p") if r.system == "down"]
    error_file = tmp_path / "r" / "p" / row.attempt_dir / "error.txt"
    out = flat(res.output)
    assert ("first infrastructure error: AttemptAborted: turn 1 (2026-03-02): infrastructure "
            "error: down adapter: model endpoint refused the connection") in out
    squeezed = "".join(res.output.split())  # rich folds a long path anywhere
    assert f"(errorfile:{error_file})" in squeezed and error_file.is_file()
    assert "--resume" in out


def test_cli_versions_reach_the_turns_and_campaign_json(tmp_path: Path) -> None:
    adapter = tmp_path / "adapters" / "versioned"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in --output-dir) "
                       "out=\"$2\";; esac; shift 2; done\n"
                       "printf '{\"output_tokens\": 5, \"cli_version\": \"2.1.332 (Claude "
                       "Code)\"}' > \"$ERPSIM_USAGE_FILE\"\n"
                       "printf 'line_id,reason\\n' > \"$out/unapplied.csv\"\n")
    adapter.chmod(0o755)
    systems = write_systems(tmp_path, "versioned:\n  adapter: adapters/versioned\n")
    res = run_sweep(tmp_path, systems, "versioned,null")
    assert res.exit_code == 0, res.output
    [row] = [r for r in ledger_rows(tmp_path / "r" / "p") if r.system == "versioned"]
    summary = json.loads((tmp_path / "r" / "p" / row.attempt_dir / "summary.json").read_text())
    assert [t["cli_version"] for t in summary["turns"]] == ["2.1.332 (Claude Code)"] * 2
    assert read_campaign(tmp_path / "r" / "p")["cli_versions"] == {
        "versioned": ["2.1.332 (Claude Code)"]}
    assert os.path.isdir(tmp_path / "r" / "p")

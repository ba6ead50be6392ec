"""``erpsim freeze``: a pre-registration manifest of the scorer, written before any run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from runs.cli.common import OUT_FILE, fail
from runs.errors import RunsError


@click.command("freeze")
@click.argument("name")
@click.argument("scenarios", nargs=-1)
@click.option("--desk", default=None, metavar="NAMES|all",
              help="Desk tasks too (comma-separated names or paths, or all).")
@click.option("--seeds", "seeds_text", default=None, metavar="RANGE",
              help="The seeds the campaign will run, listed in the manifest (e.g. 0-49).")
@click.option("--sealed-seeds", "sealed", type=click.IntRange(1, 10_000), default=None,
              metavar="N", help="Instead of --seeds: N seeds derived from the salt in "
                                "--salt-file; the manifest holds only the salt's sha256.")
@click.option("--salt-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The salt of --sealed-seeds (keep it apart until the sweep).")
@click.option("--out", "out", type=OUT_FILE, default=None,
              help="Where the manifest goes [default: freezes/NAME.json].")
def freeze_command(name: str, scenarios: tuple[str, ...], desk: str | None,
                   seeds_text: str | None, sealed: int | None, salt_file: Path | None,
                   out: Path | None) -> None:
    """Freeze the scorer before the runs: a manifest binding every check definition.

    Writes every check definition in full, each scenario's and desk task's files by
    sha256, the engine version and the seed set (listed, or sealed by a salt kept apart),
    closed by the manifest's own sha256. `erpsim sweep --frozen MANIFEST` holds a
    campaign to it.
    """
    from runs.campaigns.freeze import build_manifest
    from runs.cli.campaign import _read_salt, plan_from_options
    from runs.files import write_text_atomic

    if seeds_text is not None and sealed is not None:
        raise click.UsageError(f"--seeds {seeds_text} and --sealed-seeds {sealed}: give one "
                               "(listed seeds, or sealed ones derived from --salt-file)")
    if seeds_text is None and sealed is None and scenarios:
        raise click.UsageError("give the campaign's seeds: --seeds RANGE or --sealed-seeds N "
                               "with --salt-file")
    if sealed is not None and salt_file is None:
        raise click.UsageError("--sealed-seeds needs --salt-file (the salt the seeds derive "
                               "from; keep it apart until the sweep)")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise click.BadParameter(f"{name!r}: expected letters, digits, '.', '_' or '-', "
                                 "starting with a letter or digit", param_hint="NAME")
    plan = plan_from_options("freeze", scenarios, desk, seeds_text or "0", "reference", None, 1)
    try:
        manifest = build_manifest(name, plan, sealed_count=sealed, salt=_read_salt(salt_file))
    except RunsError as e:
        fail(e)
    target = out or Path("freezes") / f"{name}.json"
    if target.exists():
        fail(f"--out {target}: a manifest is there already; a frozen scorer is never "
             "overwritten (choose another NAME or --out)")
    write_text_atomic(target, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    seeds = manifest["seeds"]
    what = (f"{len(seeds['seeds'])} listed seed(s)" if seeds["rule"] == "listed"
            else f"{seeds['count']} sealed seed(s)")
    click.echo(f"frozen: {target} ({len(manifest['targets'])} scenario(s)/task(s), {what}, "
               f"scorer {manifest['scorer_sha256'][:16]}...)")
    click.echo(f"manifest_sha256: {manifest['manifest_sha256']}")

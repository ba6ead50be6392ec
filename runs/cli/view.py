"""``erpsim view``: an attempt's or a campaign's pages, as self-contained HTML or served on
loopback. Exit 0 when written (or when the server stops), 2 on bad input."""

from __future__ import annotations

from pathlib import Path

import click

from runs.cli.common import EXIT_BAD_INPUT, OUT_FILE, errors, fail

ATTEMPT_FILES = ("summary.json", "verdict.json", "books.db", "turns", "error.txt")
"""What marks a folder as an attempt's (any one; the others may be missing or corrupt)."""


def resolve_target(target: str, results_dir: Path) -> tuple[str, Path, str | None]:
    """``("attempt", folder, None)`` or ``("campaign", results_dir, label)`` for TARGET
    (click's ``BadParameter`` when it is neither)."""
    from runs.campaigns.plan import CAMPAIGN_FILE
    from runs.campaigns.reading import known_labels

    p = Path(target)
    if p.is_dir() and (p / CAMPAIGN_FILE).is_file():
        return "campaign", p.resolve().parent, p.resolve().name
    if p.is_dir():
        if not any((p / f).exists() for f in ATTEMPT_FILES):
            raise click.BadParameter(
                f"{target}: not an attempt folder (expected one of {', '.join(ATTEMPT_FILES)}) "
                "nor a campaign folder (expected campaign.json)", param_hint="TARGET")
        return "attempt", p, None
    if "/" not in target and (results_dir / target / CAMPAIGN_FILE).is_file():
        return "campaign", results_dir, target
    labels = known_labels(results_dir)
    known = f"labels there: {', '.join(labels)}" if labels else f"{results_dir} has no label"
    raise click.BadParameter(f"{target!r} is neither an attempt folder nor a campaign label "
                             f"under {results_dir} ({known}; --results-dir changes where to "
                             "look)", param_hint="TARGET")


@click.command("view")
@click.argument("target", metavar="ATTEMPT|LABEL")
@click.option("--out", type=OUT_FILE, default=None,
              help="The HTML file to write (default: ATTEMPT/view.html; for a campaign "
                   "RESULTS_DIR/LABEL/view/index.html, each attempt's page under "
                   "attempts/ beside it).")
@click.option("--reference", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=None,
              help="The reference agent's attempt on the same scenario and seed to diff "
                   "the books against (default: run it into a temporary folder).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("results"), show_default=True,
              help="Where campaign labels are.")
@click.option("--serve", is_flag=True,
              help="Serve the pages on 127.0.0.1 instead of writing files, each built when "
                   "first asked for (for large campaigns); Ctrl-C stops.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="The port of --serve (0: any free port).")
def view_command(target: str, out: Path | None, reference: Path | None, results_dir: Path,
                 serve: bool, port: int) -> None:
    """Write the page of an attempt or a campaign: one self-contained HTML file each.

    An attempt's page: a timeline across business dates (world events by kind, each
    agent turn with its prompt, new inbox files, transcript and API calls, the events
    its actor wrote and the outputs left), the control status per date and the first
    date each daily check broke, the verdict with every check's detail, the
    reconciliation with its items, a filterable event-log browser (paged: the log is
    embedded as compressed chunks, never as a whole), and where the books first
    diverged from the reference agent's on the same seed.

    A campaign's page (results/LABEL/ of `erpsim sweep`): pass@1 and pass^k per system
    with bootstrap intervals, the scenario x seed grid of outcomes linking to each
    attempt's page, failure rates per check and system, cost and tokens against
    acceptance, durations.

    No page loads anything from the network. A missing or corrupt attempt file is
    marked in the page as a gap.
    """
    from runs.errors import RunsError

    kind, where, label = resolve_target(target, results_dir)
    if reference is not None and kind == "campaign":
        raise click.UsageError("--reference is for an attempt; a campaign diffs against "
                               "its own reference system (or runs the reference agent)")
    try:
        if serve:
            _serve(kind, where, label, reference, port)
            return
        if kind == "attempt":
            from runs.view.pages import write_attempt_view

            page = write_attempt_view(where, out or where / "view.html", reference=reference)
            click.echo(f"view: {page} ({page.stat().st_size / 1e6:.1f} MB)")
            return
        from runs.view.pages import write_campaign_view

        assert label is not None
        dest = out or where / label / "view" / "index.html"

        def tick(i: int, n: int, rel: str) -> None:
            click.echo(f"# [{i}/{n}] {rel}", err=True)

        written = write_campaign_view(where, label, dest, on_attempt=tick)
        size = sum(p.stat().st_size for p in written)
        click.echo(f"view: {dest} (and {len(written) - 1} attempt page(s) under "
                   f"{dest.parent / 'attempts'}; {size / 1e6:.1f} MB in all)")
    except RunsError as e:
        fail(e)
    except OSError as e:
        fail(f"cannot write the page: {e}", code=EXIT_BAD_INPUT)


def _serve(kind: str, where: Path, label: str | None, reference: Path | None,
           port: int) -> None:
    from runs.view.serve import ViewSite, serve_site

    site = (ViewSite(attempt=where, reference=reference) if kind == "attempt"
            else ViewSite(results_dir=where, label=label))
    try:
        serve_site(site, port, lambda url: click.echo(f"serving {url} (Ctrl-C stops)"))
    except OSError as e:
        fail(f"cannot serve on 127.0.0.1:{port}: {e}", code=EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        click.echo("stopped")


@click.command("view")
@click.option("--customers", type=click.IntRange(min=1), default=6800, show_default=True,
              help="month-end-close's customers (6,800 give about 100,000 events).")
@click.option("--vendors", type=click.IntRange(min=0), default=680, show_default=True)
@click.option("--loads", type=click.IntRange(1, 50), default=3, show_default=True,
              help="Page loads measured.")
@click.option("--attempt", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=None, help="Measure this attempt's page instead of building one.")
def bench_view(customers: int, vendors: int, loads: int, attempt: Path | None) -> None:
    """Browser time to first render an attempt page of ~100,000 events (headless Chromium).

    Prints view_events, view_build_s, view_page_mb, view_first_render_ms (navigation
    start to the tables and the first page of the log shown; the median of --loads)
    and view_charts_drawn_ms (to every chart drawn). Target: first render under 2,000 ms.
    """
    from runs.view.bench import CHROMIUM, run_view_bench

    if attempt is not None and not (attempt / "summary.json").is_file():
        fail(f"--attempt {attempt}: no summary.json (expected a finished attempt folder, as "
             "erpsim run writes)", code=EXIT_BAD_INPUT)
    if not Path(CHROMIUM).is_file():
        fail(f"{CHROMIUM} is missing (apt-get install chromium; .ci/setup installs it)",
             code=EXIT_BAD_INPUT)
    with errors():
        result = run_view_bench(customers=customers, vendors=vendors, loads=loads,
                                attempt=attempt)
    for line in result.lines():
        click.echo(line)

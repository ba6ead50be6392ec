"""``erpsim view ... --serve``: the pages served on loopback, rendered when asked for.

For a campaign too large to write out page by page: ``/`` is the campaign's page (or the
attempt's), ``/attempts/<scenario>/<system>/seed-<s>/rep-<r>.html`` an attempt's, built
on first request and kept (the last :data:`KEEP` attempts); plotly.js is served once as
``/assets/plotly.min.js`` and each attempt's event log as ``/chunks/<page>/<n>``, fetched
by the page as the browser pages through it. The server binds 127.0.0.1 only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from runs.view.attempt import AttemptData
from runs.view.campaign import CampaignData, attempt_rows, read_campaign_view, reference_folder
from runs.view.diff import ReferenceRuns
from runs.view.pages import attempt_page_data, plotly_js, render_attempt, render_campaign

KEEP = 16
"""Attempt pages kept in memory."""

PLOTLY_PATH = "/assets/plotly.min.js"


class ViewSite:
    """What the server serves: one attempt, or a campaign and its attempts."""

    def __init__(self, *, attempt: Path | None = None, results_dir: Path | None = None,
                 label: str | None = None, reference: Path | None = None) -> None:
        self.attempt = attempt
        self.reference = reference
        self.campaign: CampaignData | None = None
        self.folders: dict[str, tuple[Path, Path | None]] = {}
        if label is not None and results_dir is not None:
            self.campaign = read_campaign_view(results_dir, label)
            for rel, folder, row in attempt_rows(self.campaign):
                self.folders["/" + rel] = (folder, reference_folder(self.campaign, row))
        self.runs = ReferenceRuns()
        self._pages: OrderedDict[str, tuple[str, AttemptData]] = OrderedDict()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Remove the reference attempts run for diffs."""
        self.runs.close()

    def _attempt(self, path: str) -> tuple[str, AttemptData] | None:
        with self._lock:
            if path in self._pages:
                self._pages.move_to_end(path)
                return self._pages[path]
            if path == "/" and self.attempt is not None and self.campaign is None:
                folder, ref, back = self.attempt, self.reference, None
            elif path in self.folders:
                folder, ref = self.folders[path]
                back = "/"
            else:
                return None
            data = attempt_page_data(folder, reference=ref, runs=self.runs)
            html = render_attempt(data, plotly_src=PLOTLY_PATH,
                                  chunk_url=f"/chunks{path}/", back=back)
            self._pages[path] = (html, data)
            while len(self._pages) > KEEP:
                self._pages.popitem(last=False)
            return html, data

    def get(self, raw_path: str) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` for a request path."""
        path = unquote(urlsplit(raw_path).path)
        if path in ("/index.html", ""):
            path = "/"
        if path == PLOTLY_PATH:
            return 200, "text/javascript; charset=utf-8", plotly_js().encode()
        if path == "/" and self.campaign is not None:
            return 200, "text/html; charset=utf-8", render_campaign(
                self.campaign, plotly_src=PLOTLY_PATH).encode()
        if path.startswith("/chunks/"):
            page, _, n = path[len("/chunks"):].rpartition("/")
            found = self._attempt(page)
            if found is None or found[1].events is None or not n.isdigit() \
                    or int(n) >= len(found[1].events.chunks):
                return 404, "text/plain; charset=utf-8", f"no chunk {path}\n".encode()
            return 200, "text/plain; charset=ascii", found[1].events.chunks[int(n)].encode()
        found = self._attempt(path)
        if found is None:
            return 404, "text/plain; charset=utf-8", f"no page {path}\n".encode()
        return 200, "text/html; charset=utf-8", found[0].encode()


def make_server(site: ViewSite, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``site`` on 127.0.0.1:``port`` (0: any free port)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                status, ctype, body = site.get(self.path)
            except Exception as e:  # a page that cannot be built: say so, keep serving
                status, ctype = 500, "text/plain; charset=utf-8"
                body = f"could not build {self.path}: {type(e).__name__}: {e}\n".encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def serve_site(site: ViewSite, port: int, on_ready: Callable[[str], None]) -> None:
    """Serve until interrupted; ``on_ready`` gets the URL."""
    server = make_server(site, port)
    try:
        on_ready(f"http://127.0.0.1:{server.server_address[1]}/")
        server.serve_forever()
    finally:
        server.server_close()
        site.close()

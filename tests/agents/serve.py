"""Run the scripted model server by hand (tests only): the cash-application script on a
loopback port, each response's token counts appended to a JSON-lines file.

    .venv/bin/python -m tests.agents.serve --port 8765 --served /tmp/served.jsonl

Then point an adapter at it (``ERPSIM_MODEL_BASE_URL=http://127.0.0.1:8765`` for
claude-code, ``.../v1`` for codex; ``ERPSIM_MODEL=erpsim-test-model``; any key). Stops on
Ctrl-C or SIGTERM. Used to check the README's commands against a real CLI offline.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from tests.agents.conftest import cash_script
from tests.agents.model_server import ModelServer, Served


class RecordingServer(ModelServer):
    """A :class:`ModelServer` on a chosen port that appends each response to a file."""

    def __init__(self, port: int, served_file: Path | None) -> None:
        """Serve the cash script on ``port`` (0: any free one)."""
        super().__init__(cash_script())
        self.wanted_port = port
        self.served_file = served_file
        self._write_lock = threading.Lock()

    def _record(self, served: Served) -> None:
        super()._record(served)
        if self.served_file is not None:
            line = json.dumps(dataclasses.asdict(served)) + "\n"
            with self._write_lock, self.served_file.open("a", encoding="utf-8") as f:
                f.write(line)

    def start(self) -> RecordingServer:
        """Listen on the wanted port."""
        from http.server import ThreadingHTTPServer

        from tests.agents.model_server import _handler

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.wanted_port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self


def main(argv: list[str]) -> int:
    """Serve until interrupted."""
    p = argparse.ArgumentParser(prog="python -m tests.agents.serve")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--served", type=Path, default=None,
                   help="append each response (model, session, usage as sent) here")
    args = p.parse_args(argv)
    server = RecordingServer(args.port, args.served).start()
    print(f"scripted model server: claude-code ERPSIM_MODEL_BASE_URL={server.base_url}, "
          f"codex ERPSIM_MODEL_BASE_URL={server.openai_base_url}, "
          f"ERPSIM_MODEL=erpsim-test-model", flush=True)
    return serve_until_stopped(server)


def serve_until_stopped(server: Any) -> int:
    """Serve until SIGTERM or Ctrl-C, then stop ``server`` (a started model server)."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with contextlib.suppress(KeyboardInterrupt):
        done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

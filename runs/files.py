"""Writing files so that a reader sees the old content or the new, never a part.

``atomic_path`` is runs' one atomic writer: the caller writes a temporary file in the
target's folder, which is flushed to disk and renamed into place when the block ends
without an error, and removed when it ends with one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path, *, mode: int = 0o644) -> Iterator[Path]:
    """A temporary path to write; renamed to ``path`` (with ``mode``) when the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with tmp.open("rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # mkstemp makes it private; these files are for every reader
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")

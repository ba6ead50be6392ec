"""An attempt page reads JSON Lines as JSON Lines: a line ends at "\\n" only."""

from __future__ import annotations

import json
from pathlib import Path

from runs.view.attempt import MAX_TRANSCRIPT_LINES, AttemptData, jsonl_objects


def test_separators_json_holds_raw_inside_a_string_do_not_cut_a_line(tmp_path: Path) -> None:
    texts = ["a\u2028b", "c\u2029d", "e\u0085f", "g\x0ch", "crlf"]
    body = "".join(json.dumps({"kind": "message", "text": t}, ensure_ascii=False)
                   + ("\r\n" if t == "crlf" else "\n") for t in texts)
    assert "\u2028" in body  # written raw, as json.dumps(ensure_ascii=False) does
    path = tmp_path / "transcript.jsonl"
    path.write_text(body + "\n", encoding="utf-8")
    data = AttemptData(folder=tmp_path, name="a")
    out = jsonl_objects(data, "transcript", path)
    assert out is not None and [o["text"] for o in out] == texts
    assert data.gaps == []


def test_lines_beyond_the_limit_are_counted_without_the_blank_ones(tmp_path: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    n = MAX_TRANSCRIPT_LINES + 3
    path.write_text("".join('{"kind": "message"}\n\n' for _ in range(n)), encoding="utf-8")
    out = jsonl_objects(AttemptData(folder=tmp_path, name="a"), "transcript", path)
    assert out is not None and out[-1] == {"kind": "more", "text": "3 more lines not shown"}

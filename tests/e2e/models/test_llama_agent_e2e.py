"""End to end: `newt -p ... -c` against the real llama-server until it compacts, then `-r`.

The server runs with a 1,024-token window and replies capped at 40 tokens, so a
handful of turns passes the 819-token budget and TokenBudget must compact. A
reply stopped at that cap makes print mode exit 1 (finish_reason "length");
the turn is still complete and saved, which is all this test needs of it.
The summary a fold owes is written by a detached newt after the run exits; the
test waits for it, since its landing changes the fullness a reopen restores.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from newt.local.server import LocalLlamaServer
from tests.support.llama_server import obtain_llama_server
from tests.support.processes import summary_writers, wait_gone
from tests.support.session_helpers import newt_cmd

pytestmark = pytest.mark.llama


@pytest.fixture(scope="module")
def small_llama() -> Iterator[LocalLlamaServer]:
    binary, model = obtain_llama_server()
    with LocalLlamaServer(
        model, binary=binary, ctx=1024, extra_args=["-n", "40", "--temp", "0"]
    ) as server:
        yield server


TOPICS = [
    "Tell me about the lighthouse keeper Ada Quist, who kept the Skerry light from 1901 to 1933.",
    "Her logbook records 412 storms and a whale that beached itself near the north jetty.",
    "In 1919 she rescued the crew of the schooner Marigold; the mate was named Tobias Fenn.",
    "The light used a first-order Fresnel lens, paraffin-fuelled, visible for 21 nautical miles.",
    "Ada kept goats, grew potatoes in kelp beds, and wrote letters to her sister in Bergen.",
    "After 1933 the light was automated and the cottage became a small museum with her logs.",
    "Visitors today can read the Marigold rescue entry, dated 14 March 1919, in her own hand.",
    "The museum also keeps the paraffin cans, her oilskin coat and a brass telescope from 1905.",
    "Each summer the island holds a small festival with boat races named after the Marigold.",
    "Summarise what you know about Ada Quist, the Marigold and the Skerry light in a line.",
]


def _turn_output(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The --json output of a whole reply, or of one stopped at the 40-token cap
    (exit 1 by design, a complete turn saved as it is); anything else fails."""
    data: dict[str, Any] = json.loads(result.stdout) if result.stdout else {}
    if result.returncode == 1 and data.get("finish_reason") == "length":
        assert "length limit" in result.stderr, result.stderr
        assert data["status"] == "complete" and data["error"] is None, data
    else:
        assert result.returncode == 0, result.stderr
    return data


def test_conversation_compacts_and_resumes_with_the_same_fullness(
    small_llama: LocalLlamaServer, _isolated_home: Path
) -> None:
    base = ["--base-url", small_llama.base_url, "--model", "gemma"]
    outputs = []
    for i, text in enumerate(TOPICS):
        argv = [*base, *(["-c"] if i else []), "-p", text, "--json"]
        outputs.append(_turn_output(newt_cmd(*argv, home=_isolated_home, timeout=300)))
    conv_ids = {o["conversation_id"] for o in outputs}
    assert len(conv_ids) == 1
    last = outputs[-1]
    assert last["memory"]["source"] == "backend"  # llama-server /props n_ctx
    assert last["memory"]["budget"] == int(1024 * 0.8)
    assert all(o["usage"]["prompt_tokens"] for o in outputs)
    compactions = sum(len(o["compactions"]) for o in outputs)
    assert compactions >= 1, [o["memory"] for o in outputs]
    assert last["memory"]["used"] <= last["memory"]["budget"]

    conv_id = last["conversation_id"]
    # A detached writer may still be storing the summary the last fold owes;
    # once it lands, the newest record's fullness is the conversation's.
    for pid in summary_writers(conv_id):
        assert wait_gone(pid, 240), "the detached summary writer did not finish"
    export = json.loads(newt_cmd("export", conv_id, "--format", "json", home=_isolated_home).stdout)
    kinds = [t["kind"] for t in export["turns"]]
    assert kinds.count("turn") == len(TOPICS) and "compaction" in kinds
    newest = export["turns"][-1]
    expected = newest["used_after"] if newest["kind"] == "compaction" else last["memory"]["used"]

    resumed = newt_cmd(
        *base, "-r", conv_id[:8], "-p", "And the goats?", "--json", home=_isolated_home, timeout=300
    )
    data = _turn_output(resumed)
    assert data["conversation_id"] == conv_id
    assert data["resumed_memory"]["used"] == expected
    assert data["resumed_memory"]["budget"] == last["memory"]["budget"]

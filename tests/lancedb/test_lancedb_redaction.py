"""Secrets never reach LanceDB's memories table, its journal or the provider (issue 14.5).

Every write path is tried: the ``memory_store`` tool, auto-capture of a turn, and a rebuild
from a journal someone edited by hand; the real LanceDB table, the journal file, the raw
files of the database and every text the provider embedded are searched for the secrets.
"""

from __future__ import annotations

from pathlib import Path

from lancedb_helpers import Build
from memwell.contract.messages import TurnMessage
from memwell.testing import HashEmbeddingProvider
from memwell_lancedb import tools
from memwell_lancedb.journal import format_entry
from memwell_lancedb.memory import Memory

SECRETS = {
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github": "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "url_password": "Hunter2Hunter2",
    "phrase": "Tr0ub4dor&3",
    "journal": "ghs_JournalEditedByHand0123456789abcd",
}
TEXTS = {
    "store": f"Remember: deploy key {SECRETS['aws_id']} and aws secret {SECRETS['aws_secret']}",
    "store2": f"I always push with {SECRETS['github']} and bill with {SECRETS['stripe']}",
    "capture": f"Remember the db is postgres://app:{SECRETS['url_password']}@db.internal/app",
    "capture2": f"Remember that my password is {SECRETS['phrase']} for the vault",
}


def test_no_write_path_keeps_a_secret(
    build: Build, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    embedded: list[str] = []
    provider.fail = embedded.extend
    memory = build(workspace, lance={"auto_capture": True})
    for key in ("store", "store2"):
        assert tools.memory_store(memory, TEXTS[key])["action"] == "created"
    outcomes = memory.capture_turn(
        [TurnMessage("user", TEXTS["capture"]), TurnMessage("user", TEXTS["capture2"])],
        session_key=f"agent:main:direct:{SECRETS['github']}",
    )
    assert [outcome for _, outcome in outcomes] == ["created", "created"]
    stored = memory.memories.list()
    assert len(stored) == 4 and all("***" in m.text or "…" in m.text for m in stored)
    assert journal_text(memory).count("## ") == 4

    # A hand-edited entry with a secret, then a rebuild: the table gets it masked.
    assert memory.journal is not None
    edited = Memory(
        "0b0c7a9e-3f0e-4a8c-9d51-2f8e6b7c1a00", f"token {SECRETS['journal']}", "fact", 0.7, 0
    )
    with memory.journal.path.open("a", encoding="utf-8") as handle:
        handle.write(format_entry(edited))
    assert memory.memories.rebuild_from_journal().count == 5
    rows = "\n".join(m.text + str(m.session) for m in memory.memories.list())
    assert "token ghs_Jo" in rows

    files = b"".join(p.read_bytes() for p in Path(memory.uri).rglob("*") if p.is_file())
    journal = journal_text(memory)
    sent = "\n".join(embedded)
    for name, secret in SECRETS.items():
        assert secret not in rows, name
        assert secret.encode() not in files, name
        assert secret not in sent, name
        if name != "journal":  # the hand-written line stays as its author wrote it
            assert secret not in journal, name
    recalled = memory.memories.recall("deploy key aws secret")
    assert recalled and SECRETS["aws_id"] not in recalled[0].memory.text


def journal_text(memory: object) -> str:
    journal = getattr(memory, "journal", None)
    assert journal is not None
    text: str = journal.path.read_text(encoding="utf-8")
    return text

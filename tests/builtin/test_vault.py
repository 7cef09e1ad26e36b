"""The vault: ``memory/vault/`` never decays, dated or not, and its hits are marked pinned."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

from memwell.agent.tools import memory_search
from memwell.contract.manager import MemorySearchManager

OpenFn = Callable[..., MemorySearchManager]
TEXT = "The backup passphrase lives in the red notebook on the top shelf.\n"


def test_a_400_day_old_vault_note_outranks_a_90_day_old_daily_note(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    ws = tmp_path / "vaulted"
    today = date.today()
    vault = ws / f"memory/vault/{today - timedelta(days=400)}.md"
    daily = ws / f"memory/{today - timedelta(days=90)}.md"
    for path in (vault, daily):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TEXT)
    decay = {"temporal_decay": {"enabled": True, "half_life_days": 30}}
    memory = open_ws(ws, provider="none", query={"hybrid": decay})
    memory.sync(reason="test")
    hits = memory.search("backup passphrase red notebook", min_score=0.0)
    rel_vault, rel_daily = (str(p.relative_to(ws)) for p in (vault, daily))
    assert [h.path for h in hits] == [rel_vault, rel_daily]
    assert hits[0].score > 4 * hits[1].score  # the daily note decayed three half-lives
    assert [h.pinned for h in hits] == [True, False]
    payload = memory_search(memory, "backup passphrase red notebook", min_score=0.0)
    assert [r.get("pinned") for r in payload["results"]] == [True, None]  # only vault hits

"""Reader process of the concurrency test: search in a loop until told to stop.

Usage: ``python reader_child.py WORKSPACE STOP_FILE MAX_SECONDS SEED``

Prints ``ready`` after its first search, then ``result <json>`` with the number of searches,
the errors met (exceptions, empty results while memory files exist, indexes taken for
damaged) when ``STOP_FILE`` appears or ``MAX_SECONDS`` have passed.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reliability_helpers import WORDS, build_manager, make_registry, make_settings

workspace, stop_file, max_seconds, seed = (
    Path(sys.argv[1]),
    Path(sys.argv[2]),
    float(sys.argv[3]),
    int(sys.argv[4]),
)
rng = random.Random(seed)
manager = build_manager(workspace, make_settings(), make_registry())
searches = 0
errors: list[str] = []
deadline = time.monotonic() + max_seconds
while time.monotonic() < deadline:
    query = " ".join(rng.sample(WORDS, 2))
    try:
        if not manager.search(query, min_score=0.0):
            errors.append(f"no results for {query!r}")
        if searches % 10 == 0:
            manager.status()
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    searches += 1
    if searches == 1:
        os.write(1, b"ready\n")
    if stop_file.exists():
        break
recovered = manager.status().custom["recovered"]
errors += [f"index taken for damaged: {r}" for r in recovered]
manager.close()
os.write(1, ("result " + json.dumps({"searches": searches, "errors": errors[:20]}) + "\n").encode())

"""Memory that curates itself: recall tracking, promotion into MEMORY.md, session deltas.

- :mod:`memwell.curation.tracking`: every search records the hits it returned, and every
  read of a hit grounds it, in a sidecar of the index directory;
- :mod:`memwell.curation.promotion`: ranks recalled daily-note snippets by the reference's
  weighted score and appends the qualified ones to ``MEMORY.md`` (``memwell promote``);
- :mod:`memwell.curation.session_delta`: transcript growth per file, and the sessions-only
  sync it triggers past ``[sync.sessions]`` thresholds or after a compaction.
"""

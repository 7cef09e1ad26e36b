"""memwell-e5: the ``e5`` embedding provider (multilingual-e5-small, 4-bit, offline)."""

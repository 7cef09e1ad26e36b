"""Recall in front of every backend: the tiered recall cache, batch search, warm-up and the
injection budget.

``open_memory`` wraps each manager in :class:`~memwell.recall.manager.RecallCachedManager`.
Backends take part through three optional methods (see :mod:`memwell.contract.recall_protocols`):
``content_version()`` (caching is off without it), ``query_embedder()`` (the semantic tier is
off without it) and ``search_many()`` (a loop over ``search`` without it).
"""

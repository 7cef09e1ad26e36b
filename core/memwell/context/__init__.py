"""Context compression: fit a conversation into a token budget by the design's policy.

:func:`memwell.context.compress.compress` picks a level from the context usage (tokens of the
conversation over the budget): below 0.6 nothing changes; below 0.8 a light, deterministic
pass (duplicates and near-duplicates dropped, long tool outputs collapsed, every user decision
and preference kept); below 0.9 a summary of the older turns (at most about 300 words keeping
requirements, decisions and open tasks) before the recent ones; above that a structured digest
(JSON of entities, decisions, preferences, requirements and open tasks).
"""

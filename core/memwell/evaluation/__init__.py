"""Retrieval-quality evaluation: BEIR-layout datasets and LoCoMo conversations.

``memwell.evaluation`` was one module; its names now live in :mod:`memwell.evaluation.beir`
(served from here, with a DeprecationWarning, for one release).
"""

from memwell.util.moved_paths import moved_attributes

__getattr__ = moved_attributes(__name__, "memwell.evaluation.beir")

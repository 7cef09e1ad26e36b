"""From settings and installed plugins to a working memory manager: ``open_memory``, the backend
base class, the fallback backend, the rerank stage.
"""

"""The memory layout every backend and tool shares: the root files and the pinned vault."""

ROOT_MEMORY_FILES = ("MEMORY.md", "memory.md")
"""The workspace's long-term memory file (either spelling)."""
VAULT_PREFIX = "memory/vault/"
"""Files under this directory are pinned by the user: they never decay, dated or not."""

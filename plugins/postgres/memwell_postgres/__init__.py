"""memwell-postgres: a memwell backend on PostgreSQL + pgvector, shared by many writers."""

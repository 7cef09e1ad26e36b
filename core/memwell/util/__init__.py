"""Small helpers with no memwell imports: lazy imports, BLAS threads, SQLite error classes,
debounce, the sync gate, entry-point reading.
"""

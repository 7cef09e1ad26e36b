"""Embedding providers at run time: selection, fallback, retries, input limits and normalisation,
and the shared machinery of remote (HTTP API) providers.
"""

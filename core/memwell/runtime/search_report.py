"""What every search result payload says about how the search ran.

The ``memory_search`` tool, ``memwell search --json`` and the MCP server all attach
:func:`search_report` of the manager's status taken right after the search, so a degraded
search (keyword-only after a query embedding failure, a file scan without FTS5, a provider
or backend fallback) is never presented as a normal hybrid one.
"""

from __future__ import annotations

from typing import Any

from memwell.contract.models import FallbackStatus, MemoryStatus


def _fallback(status: FallbackStatus | None) -> dict[str, Any] | None:
    return status.model_dump(by_alias=True) if status is not None else None


def search_report(status: MemoryStatus) -> dict[str, Any]:
    """``mode`` actually used, ``degraded`` with its ``degraded_reason``, and both fallbacks.

    ``degraded`` is true when the search ran below the configured mode or a fallback serves
    in place of the configured provider or backend; the reasons are joined in that order.
    """
    degraded = status.degraded
    reasons = [degraded.reason] if degraded is not None else []
    provider_fb = status.provider_fallback
    if provider_fb is not None and not any(provider_fb.reason in r for r in reasons):
        reasons.append(
            f"embedding provider {provider_fb.from_} -> {provider_fb.to}: {provider_fb.reason}"
        )
    if status.fallback is not None:
        reasons.append(
            f"backend {status.fallback.from_} -> {status.fallback.to}: {status.fallback.reason}"
        )
    return {
        "provider": status.provider,
        "model": status.model,
        "mode": degraded.mode if degraded is not None else status.search_mode,
        "degraded": bool(reasons),
        "degraded_reason": "; ".join(reasons) or None,
        "fallback": _fallback(status.fallback),
        "provider_fallback": _fallback(status.provider_fallback),
    }

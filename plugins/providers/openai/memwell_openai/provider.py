"""The OpenAI embeddings client: ``POST {base}/embeddings`` and the Batch API."""

from __future__ import annotations

from collections.abc import Sequence

import openai
from memwell.plugin import ProviderContext, ProviderError, RemoteEndpoint
from memwell.plugin_sdk import (
    BatchError,
    BatchingRemoteProvider,
    collect_batch_vectors,
    jsonl,
    parse_openai_batch_line,
    status_error,
    transport_error,
)

DONE = frozenset({"completed"})
FAILED = frozenset({"failed", "expired", "cancelled", "canceled"})


def openai_client(endpoint: RemoteEndpoint, base_url: str) -> openai.OpenAI:
    """The official client for ``endpoint``, with SDK retries off (the core retries)."""
    return openai.OpenAI(
        api_key=endpoint.api_key,
        base_url=base_url,
        default_headers=endpoint.headers or None,
        timeout=endpoint.timeout_seconds,
        max_retries=0,
    )


def openai_sdk_error(
    provider: str, exc: Exception, *, what: str = "embeddings"
) -> ProviderError | None:
    """An ``openai`` SDK exception as a :class:`ProviderError`; ``None`` if not the SDK's."""
    if isinstance(exc, openai.APIStatusError):
        return status_error(provider, exc.status_code, exc.message, what=what)
    if isinstance(exc, openai.APIConnectionError):
        return transport_error(provider, exc, what=what)
    return None


class OpenAIEmbeddingProvider(BatchingRemoteProvider):
    """Embeddings through the official ``openai`` client (which never retries here)."""

    id = "openai"
    model_prefixes = ("openai/",)
    default_base_url = "https://api.openai.com/v1"

    def __init__(self, ctx: ProviderContext, endpoint: RemoteEndpoint) -> None:
        super().__init__(ctx, endpoint)
        self.client = openai_client(endpoint, self.base_url)

    def _request(self, texts: list[str], *, query: bool) -> Sequence[Sequence[float] | None]:
        response = self.client.embeddings.create(
            model=self.model,
            input=texts,
            dimensions=self.output_dimensionality or openai.omit,
        )
        return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        return openai_sdk_error(self.id, exc)

    def _run_batch(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, object] = {"model": self.model}
        if self.output_dimensionality:
            body["dimensions"] = self.output_dimensionality
        lines = jsonl(
            {
                "custom_id": str(index),
                "method": "POST",
                "url": "/v1/embeddings",
                "body": {**body, "input": text},
            }
            for index, text in enumerate(texts)
        )
        upload = self.client.files.create(
            file=("memwell-embeddings.jsonl", lines, "application/jsonl"), purpose="batch"
        )
        job = self.client.batches.create(
            input_file_id=upload.id,
            endpoint="/v1/embeddings",
            completion_window="24h",
            metadata={"source": "memwell"},
        )
        job_id = job.id
        job = self.batch.wait_for(
            job_id,
            job,
            lambda: self.client.batches.retrieve(job_id),
            lambda status: status.status,
            done=DONE,
            failed=FAILED,
            failure_detail=self._failure_detail,
        )
        if not job.output_file_id:
            raise BatchError(
                f"openai batch {job.id} completed without an output file", provider=self.id
            )
        output = self.client.files.content(job.output_file_id).text
        return collect_batch_vectors(
            self.id, job.id, output.splitlines(), len(texts), parse_openai_batch_line
        )

    def _failure_detail(self, job: openai.types.Batch) -> str | None:
        errors = job.errors.data if job.errors is not None else None
        messages = [error.message for error in errors or [] if error.message]
        if job.error_file_id:
            messages.append(self.client.files.content(job.error_file_id).text.strip())
        return "; ".join(message for message in messages if message) or None

"""The Voyage AI embeddings client (``voyageai``): ``POST {base}/embeddings`` and batch jobs.

Queries use ``input_type="query"``, documents ``"document"``. Requests go through the SDK's
resource layer (``voyageai.Embedding`` and its ``APIRequestor``) rather than ``voyageai.Client``,
because the client runs some models (``voyage-4-nano``) locally and this provider is remote; the
batch flow (files, batches) uses the same requestor. The SDK drops every request header except
``Authorization`` and ``Content-Type``, so custom headers cannot be honoured and are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from memwell.plugin import ProviderContext, ProviderError, ProviderUnavailableError, RemoteEndpoint
from memwell.plugin_sdk import (
    BatchError,
    BatchingRemoteProvider,
    collect_batch_vectors,
    jsonl,
    parse_openai_batch_line,
    status_error,
    transport_error,
)
from voyageai import error
from voyageai.api_resources import Embedding
from voyageai.api_resources.api_requestor import APIRequestor
from voyageai.util import get_default_base_url

# The voyageai resource layer has no annotations; these aliases give its entry points types.
_create_embedding: Callable[..., Any] = Embedding.create
_new_requestor = cast(Callable[[str, str], Any], APIRequestor)

DONE = frozenset({"completed"})
FAILED = frozenset({"failed", "expired", "cancelled", "canceled"})


class VoyageEmbeddingProvider(BatchingRemoteProvider):
    """Embeddings through the official ``voyageai`` package, which never retries here."""

    id = "voyage"
    model_prefixes = ("voyage/",)

    def __init__(self, ctx: ProviderContext, endpoint: RemoteEndpoint) -> None:
        if endpoint.headers:
            names = ", ".join(sorted(endpoint.headers))
            raise ProviderUnavailableError(
                f"voyage cannot send custom headers ({names}): the voyageai client drops them; "
                "remove them from remote.headers / providers.voyage.headers",
                provider=self.id,
            )
        super().__init__(ctx, endpoint)
        self.requestor = _new_requestor(endpoint.api_key, self.base_url)

    def provider_default_base_url(self) -> str:
        # The SDK's own rule: keys starting with ``al-`` belong to MongoDB Atlas.
        return get_default_base_url(self.endpoint.api_key)

    def _request(self, texts: list[str], *, query: bool) -> Sequence[Sequence[float] | None]:
        response = _create_embedding(
            input=texts,
            model=self.model,
            input_type="query" if query else "document",
            truncation=True,
            output_dimension=self.output_dimensionality,
            api_key=self.endpoint.api_key,
            base_url=self.base_url,
            request_timeout=self.endpoint.timeout_seconds,
        )
        data = sorted(response.data, key=lambda item: item.get("index", 0))
        return [item.get("embedding") for item in data]

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        if isinstance(exc, (error.Timeout, error.APIConnectionError)):
            return transport_error(self.id, exc)
        if isinstance(exc, error.VoyageError):
            message = exc.user_message or str(exc)
            body = exc.http_body if isinstance(exc.http_body, str) else ""
            if body and body not in message:
                message = f"{message} {body[:500]}"
            if exc.http_status is None:
                return ProviderError(
                    f"voyage embeddings request failed: {message}", provider=self.id
                )
            return status_error(self.id, exc.http_status, message)
        return None

    def _call_api(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self.requestor.request(
            method,
            path,
            request_timeout=self.endpoint.timeout_seconds,
            **kwargs,
        )
        return cast(dict[str, Any], response.data)

    def _file_text(self, file_id: str) -> str:
        response = self.requestor.request_raw(
            "get",
            f"/files/{file_id}/content",
            request_timeout=self.endpoint.timeout_seconds,
        )
        if response.status_code >= 400:
            raise status_error(self.id, response.status_code, response.text[:500])
        return str(response.text)

    def _run_batch(self, texts: list[str]) -> list[list[float]]:
        lines = jsonl(
            {"custom_id": str(index), "body": {"input": [text]}} for index, text in enumerate(texts)
        )
        upload = self._call_api(
            "post",
            "/files",
            params={"purpose": "batch"},
            files={"file": ("memwell-embeddings.jsonl", lines, "application/jsonl")},
        )
        request_params: dict[str, Any] = {"model": self.model, "input_type": "document"}
        if self.output_dimensionality:
            request_params["output_dimension"] = self.output_dimensionality
        job = self._call_api(
            "post",
            "/batches",
            params={
                "input_file_id": upload["id"],
                "endpoint": "/v1/embeddings",
                "completion_window": "12h",
                "request_params": request_params,
                "metadata": {"source": "memwell"},
            },
        )
        job_id = str(job["id"])
        job = self.batch.wait_for(
            job_id,
            job,
            lambda: self._call_api("get", f"/batches/{job_id}"),
            lambda status: str(status.get("status", "unknown")),
            done=DONE,
            failed=FAILED,
            failure_detail=self._failure_detail,
        )
        output = job.get("output_file_id")
        if not output:
            raise BatchError(
                f"voyage batch {job_id} completed without an output file", provider=self.id
            )
        return collect_batch_vectors(
            self.id,
            job_id,
            self._file_text(output).splitlines(),
            len(texts),
            parse_openai_batch_line,
        )

    def _failure_detail(self, job: Mapping[str, Any]) -> str | None:
        error_file = job.get("error_file_id")
        return self._file_text(error_file).strip() or None if error_file else None

"""The Gemini embeddings client (``google-genai``): ``:batchEmbedContents`` and batch jobs.

Queries use task type ``RETRIEVAL_QUERY``, documents ``RETRIEVAL_DOCUMENT``. A configured base
URL may end in its API version (``.../v1beta``, as in the reference) or be the bare host.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
from google import genai
from google.genai import errors, types
from memwell.plugin import ProviderContext, ProviderError, RemoteEndpoint
from memwell.plugin_sdk import (
    BatchError,
    BatchingRemoteProvider,
    BatchLine,
    collect_batch_vectors,
    jsonl,
    status_error,
    transport_error,
)

DEFAULT_API_VERSION = "v1beta"
DONE = frozenset({"JOB_STATE_SUCCEEDED"})
FAILED = frozenset({"JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"})
_VERSIONED = re.compile(r"^(?P<root>.*?)/(?P<version>v1(?:alpha|beta)?)(?:/openai)?/*$")


def split_api_version(base_url: str) -> tuple[str, str]:
    """``https://host/v1beta`` -> (``https://host``, ``v1beta``); no version -> v1beta."""
    match = _VERSIONED.match(base_url)
    if match is None:
        return base_url.rstrip("/"), DEFAULT_API_VERSION
    return match["root"], match["version"]


def parse_gemini_batch_line(line: Mapping[str, Any]) -> BatchLine:
    """Parse a Gemini batch output line: ``{key, response: {embedding: {values}}}``."""
    key = line.get("key", line.get("custom_id", line.get("request_id")))
    response = line.get("response") or {}
    error = line.get("error") or response.get("error")
    embedding = line.get("embedding") or response.get("embedding") or {}
    message = None
    if error:
        message = str(error.get("message") or error) if isinstance(error, Mapping) else str(error)
    return (str(key) if key is not None else None, embedding.get("values"), message)


def gemini_client(endpoint: RemoteEndpoint, base_url: str) -> tuple[genai.Client, str]:
    """The official client for ``endpoint`` (SDK retries off) and the versioned base URL."""
    root, version = split_api_version(base_url)
    client = genai.Client(
        api_key=endpoint.api_key,
        http_options=types.HttpOptions(
            base_url=root,
            api_version=version,
            headers=endpoint.headers or None,
            timeout=max(1, round(endpoint.timeout_seconds * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
        ),
    )
    return client, f"{root}/{version}"


def gemini_sdk_error(
    provider: str, exc: Exception, *, what: str = "embeddings"
) -> ProviderError | None:
    """A ``google-genai`` exception as a :class:`ProviderError`; ``None`` if not the SDK's."""
    if isinstance(exc, errors.APIError):
        return status_error(provider, exc.code, exc.message or str(exc), what=what)
    if isinstance(exc, httpx2.TransportError):
        return transport_error(provider, exc, what=what)
    return None


class GeminiEmbeddingProvider(BatchingRemoteProvider):
    """Embeddings through the official ``google-genai`` client, with SDK retries disabled."""

    id = "gemini"
    model_prefixes = ("models/", "gemini/", "google/")
    default_base_url = f"https://generativelanguage.googleapis.com/{DEFAULT_API_VERSION}"

    def __init__(self, ctx: ProviderContext, endpoint: RemoteEndpoint) -> None:
        super().__init__(ctx, endpoint)
        # Keep the client referenced: a collected client closes its HTTP session.
        self.client, self.base_url = gemini_client(endpoint, self.base_url)

    def _request(self, texts: list[str], *, query: bool) -> Sequence[Sequence[float] | None]:
        response = self.client.models.embed_content(
            model=self.model,
            contents=[types.Content(parts=[types.Part(text=text)]) for text in texts],
            config=types.EmbedContentConfig(
                task_type="RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT",
                output_dimensionality=self.output_dimensionality,
            ),
        )
        return [embedding.values for embedding in response.embeddings or []]

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        return gemini_sdk_error(self.id, exc)

    def _run_batch(self, texts: list[str]) -> list[list[float]]:
        request: dict[str, Any] = {
            "model": f"models/{self.model}",
            "taskType": "RETRIEVAL_DOCUMENT",
        }
        if self.output_dimensionality:
            request["outputDimensionality"] = self.output_dimensionality
        lines = jsonl(
            {"key": str(index), "request": {**request, "content": {"parts": [{"text": text}]}}}
            for index, text in enumerate(texts)
        )
        upload = self.client.files.upload(
            file=io.BytesIO(lines),
            config=types.UploadFileConfig(mime_type="jsonl", display_name="memwell-embeddings"),
        )
        try:
            # The SDK marks this call experimental; that warning is noise for memwell users.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", errors.ExperimentalWarning)
                job = self.client.batches.create_embeddings(
                    model=self.model,
                    src=types.EmbeddingsBatchJobSource(file_name=upload.name),
                    config=types.CreateEmbeddingsBatchJobConfig(display_name="memwell-embeddings"),
                )
        except errors.APIError as exc:
            if exc.code == 404:
                raise BatchError(
                    f"gemini batch embeddings (asyncBatchEmbedContent) not available for "
                    f"model {self.model}: {exc.message or exc}",
                    provider=self.id,
                    disable_batch=True,
                ) from exc
            raise
        name = job.name or ""
        job = self.batch.wait_for(
            name,
            job,
            lambda: self.client.batches.get(name=name),
            lambda status: status.state.value if status.state else "JOB_STATE_UNSPECIFIED",
            done=DONE,
            failed=FAILED,
            failure_detail=lambda status: status.error.message if status.error else None,
        )
        output = job.dest.file_name if job.dest else None
        if not output:
            raise BatchError(
                f"gemini batch {name} succeeded without an output file", provider=self.id
            )
        content = self.client.files.download(file=output).decode()
        return collect_batch_vectors(
            self.id, name, content.splitlines(), len(texts), parse_gemini_batch_line
        )

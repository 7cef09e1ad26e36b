"""Batch-API flows of openai, gemini and voyage through the real SDK clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import remote_harness as h
from fake_embedding_server import BatchPlan, FakeEmbeddingServer, Reply
from memwell.contract.errors import ProviderError
from memwell.providers.remote import BatchError, BatchingRemoteProvider
from memwell.providers.runtime import EmbeddingRuntime

server = pytest.fixture(h.serve)
_clean_env = pytest.fixture(autouse=True)(h.clean_env)

batch_providers = pytest.mark.parametrize("pid", h.BATCH_PROVIDERS)

#: (running, done, failed) job states as each API spells them.
STATES = {
    "openai": ("in_progress", "completed", "failed"),
    "voyage": ("in_progress", "completed", "failed"),
    "gemini": ("BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED"),
}
#: Route suffixes of each flow's steps: upload(s), create, poll, download.
CREATE = {"openai": "/v1/batches", "voyage": "/v1/batches", "gemini": ":asyncBatchEmbedContent"}
UPLOAD = {"openai": "/v1/files", "voyage": "/v1/files", "gemini": "/upload/v1beta/files"}
DOWNLOAD = {"openai": "/content", "voyage": "/content", "gemini": ":download"}


def batch_runtime(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path, **batch: Any
) -> tuple[EmbeddingRuntime, list[float]]:
    """A runtime with batching on; returns it and the list of poll sleeps."""
    runtime, _ = h.runtime_for(
        server, pid, tmp_path, remote={"batch": {"enabled": True, "poll_interval_ms": 10, **batch}}
    )
    provider = runtime.provider
    assert isinstance(provider, BatchingRemoteProvider)
    sleeps: list[float] = []
    provider.batch.sleep = sleeps.append
    return runtime, sleeps


def plan(pid: str, *steps: str, **kwargs: Any) -> BatchPlan:
    running, done, failed = STATES[pid]
    names = {"running": running, "done": done, "failed": failed}
    return BatchPlan(states=[names[step] for step in steps], **kwargs)


@batch_providers
def test_batch_flow_uploads_creates_polls_and_downloads(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "running", "running", "done")
    runtime, sleeps = batch_runtime(server, pid, tmp_path)
    texts = ["first doc", "second doc", "third doc"]

    matrix = runtime.embed_documents(texts)

    np.testing.assert_allclose(matrix, h.expected_matrix(texts), rtol=1e-5)
    assert server.calls(h.EMBED_ROUTE[pid]) == []  # nothing went through the normal path
    assert len(server.calls(UPLOAD[pid])) == 1
    assert len(server.calls(CREATE[pid])) == 1
    assert len(server.calls(DOWNLOAD[pid])) == 1
    assert sleeps == [0.01, 0.01]  # poll_interval_ms, once per unfinished poll
    assert runtime.batch.failures == 0 and not runtime.batch.disabled
    assert runtime.provider is not None and runtime.provider.dims == 8


def test_openai_batch_request_format(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    runtime, _ = batch_runtime(server, "openai", tmp_path)
    runtime.embed_documents(["a", "b"])
    lines = server.uploaded_lines()
    assert lines == [
        {
            "custom_id": str(i),
            "method": "POST",
            "url": "/v1/embeddings",
            "body": {"model": "text-embedding-3-small", "input": text},
        }
        for i, text in enumerate(["a", "b"])
    ]
    create = server.calls("/v1/batches")[0].json
    assert create["endpoint"] == "/v1/embeddings" and create["completion_window"] == "24h"
    upload = server.calls("/v1/files")[0]
    assert b'name="purpose"' in upload.body and b"batch" in upload.body


def test_voyage_batch_request_format(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    runtime, _ = batch_runtime(server, "voyage", tmp_path)
    runtime.embed_documents(["a", "b"])
    assert server.uploaded_lines() == [
        {"custom_id": "0", "body": {"input": ["a"]}},
        {"custom_id": "1", "body": {"input": ["b"]}},
    ]
    create = server.calls("/v1/batches")[0]
    assert create.json["completion_window"] == "12h"
    assert create.json["request_params"] == {"model": "voyage-3.5", "input_type": "document"}
    assert create.headers["authorization"] == "Bearer test-key"


def test_gemini_batch_request_format(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    server.batch_plan = plan("gemini", "running", "done")
    runtime, _ = h.runtime_for(
        server,
        "gemini",
        tmp_path,
        remote={"batch": {"enabled": True}},
        section={"output_dimensionality": 8},
    )
    assert isinstance(runtime.provider, BatchingRemoteProvider)
    runtime.provider.batch.sleep = lambda seconds: None
    runtime.embed_documents(["a"])
    (line,) = server.uploaded_lines()
    assert line == {
        "key": "0",
        "request": {
            "model": "models/gemini-embedding-001",
            "taskType": "RETRIEVAL_DOCUMENT",
            "outputDimensionality": 8,
            "content": {"parts": [{"text": "a"}]},
        },
    }
    create = server.calls(":asyncBatchEmbedContent")[0]
    assert create.route == "/v1beta/models/gemini-embedding-001:asyncBatchEmbedContent"
    assert create.json["batch"]["inputConfig"]["file_name"].startswith("files/")


@batch_providers
def test_failed_batch_falls_back_to_normal_requests_and_two_failures_disable(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "running", "failed", error_file="quota exhausted for batches")
    runtime, _ = batch_runtime(server, pid, tmp_path)

    first = runtime.embed_documents(["one", "two"])

    np.testing.assert_allclose(first, h.expected_matrix(["one", "two"]), rtol=1e-5)
    assert runtime.batch.failures == 1 and not runtime.batch.disabled
    error = runtime.batch.last_error or ""
    assert "batch" in error and "failed" in error.lower()
    if pid != "gemini":  # the error file's content is part of the message
        assert "quota exhausted for batches" in error
    assert len(server.calls(h.EMBED_ROUTE[pid])) == 1

    runtime.embed_documents(["three"])
    assert runtime.batch.disabled
    jobs = len(server.calls(CREATE[pid]))
    runtime.embed_documents(["four"])
    assert len(server.calls(CREATE[pid])) == jobs == 2  # no third batch once disabled
    assert len(server.calls(h.EMBED_ROUTE[pid])) == 3


@batch_providers
def test_success_resets_the_failure_count(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "failed")
    runtime, _ = batch_runtime(server, pid, tmp_path)
    runtime.embed_documents(["one"])
    assert runtime.batch.failures == 1
    server.batch_plan = plan(pid, "done")
    runtime.embed_documents(["two"])
    assert runtime.batch.failures == 0 and not runtime.batch.disabled


@batch_providers
def test_per_line_error_fails_the_batch(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "done", line_errors={"1": "input exceeds the token limit"})
    runtime, _ = batch_runtime(server, pid, tmp_path)
    provider = runtime.provider
    assert isinstance(provider, BatchingRemoteProvider)
    with pytest.raises(BatchError, match="1: input exceeds the token limit"):
        provider.batch_embed(["a", "b", "c"])


@batch_providers
def test_missing_output_line_fails_the_batch(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "done", drop={"2"})
    runtime, _ = batch_runtime(server, pid, tmp_path)
    provider = runtime.provider
    assert isinstance(provider, BatchingRemoteProvider)
    with pytest.raises(BatchError, match="missing 1 embedding responses"):
        provider.batch_embed(["a", "b", "c"])


@batch_providers
def test_wait_disabled_fails_clearly_and_disables_batching(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "running")
    runtime, sleeps = batch_runtime(server, pid, tmp_path, wait=False)

    runtime.embed_documents(["a"])  # served by the normal path

    assert "enable remote.batch.wait" in (runtime.batch.last_error or "")
    assert runtime.batch.disabled and runtime.batch.failures == 1
    assert sleeps == [] and len(server.calls(h.EMBED_ROUTE[pid])) == 1


@batch_providers
def test_batch_times_out_after_timeout_minutes(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "running")
    runtime, _ = batch_runtime(server, pid, tmp_path, poll_interval_ms=20_000, timeout_minutes=1)
    provider = runtime.provider
    assert isinstance(provider, BatchingRemoteProvider)
    now = [0.0]
    sleeps: list[float] = []

    def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    provider.batch.sleep = fake_sleep
    provider.batch.clock = lambda: now[0]

    with pytest.raises(BatchError, match="timed out after 1 minutes"):
        provider.batch_embed(["a"])
    assert sleeps == [20.0, 20.0, 20.0]


def test_gemini_batch_not_available_disables_at_once(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    runtime, _ = batch_runtime(server, "gemini", tmp_path)
    # upload start, upload data, then the create call answers 404
    server.push(Reply(), Reply(), Reply.error(404, "Method not found: asyncBatchEmbedContent"))

    matrix = runtime.embed_documents(["a"])

    np.testing.assert_allclose(matrix, h.expected_matrix(["a"]), rtol=1e-5)
    assert runtime.batch.disabled and runtime.batch.failures == 1
    assert "not available" in (runtime.batch.last_error or "")


@batch_providers
def test_batch_upload_errors_are_mapped(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, _ = batch_runtime(server, pid, tmp_path)
    provider = runtime.provider
    assert isinstance(provider, BatchingRemoteProvider)
    server.push(Reply.error(503, "files service unavailable"))
    with pytest.raises(ProviderError) as info:
        provider.batch_embed(["a"])
    assert info.value.status_code == 503 and info.value.retryable
    assert server.calls(CREATE[pid]) == []


@batch_providers
def test_large_inputs_are_split_into_groups_run_concurrently(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    server.batch_plan = plan(pid, "done")
    runtime, _ = batch_runtime(server, pid, tmp_path, concurrency=2)
    provider = runtime.provider
    assert isinstance(provider, BatchingRemoteProvider)
    provider.batch.max_requests = 2
    texts = [f"text {i}" for i in range(5)]

    vectors = provider.batch_embed(texts)

    assert len(server.calls(CREATE[pid])) == 3
    np.testing.assert_allclose(
        np.asarray(vectors) / np.linalg.norm(vectors, axis=1, keepdims=True),
        h.expected_matrix(texts),
        rtol=1e-5,
    )


def test_mistral_has_no_batch_api(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    runtime, _ = h.runtime_for(server, "mistral", tmp_path, remote={"batch": {"enabled": True}})
    runtime.embed_documents(["a"])
    assert not hasattr(runtime.provider, "batch_embed")
    assert len(server.calls("/v1/embeddings")) == 1 and runtime.batch.failures == 0

"""The core provider conformance suite, run against each remote provider and the fake server."""

from __future__ import annotations

from pathlib import Path

import pytest
import remote_harness as h
from fake_embedding_server import FakeEmbeddingServer
from memwell.providers.remote import RemoteEmbeddingProvider
from memwell.testing.conformance import ProviderConformance

server = pytest.fixture(h.serve)
_clean_env = pytest.fixture(autouse=True)(h.clean_env)


class _RemoteConformance(ProviderConformance):
    pid: str

    @pytest.fixture
    def provider(self, server: FakeEmbeddingServer, tmp_path: Path) -> RemoteEmbeddingProvider:
        return h.create_provider(
            self.pid, tmp_path, providers={self.pid: h.section(server, self.pid)}
        )


class TestOpenAIConformance(_RemoteConformance):
    pid = "openai"


class TestGeminiConformance(_RemoteConformance):
    pid = "gemini"


class TestMistralConformance(_RemoteConformance):
    pid = "mistral"


class TestVoyageConformance(_RemoteConformance):
    pid = "voyage"


class TestOllamaConformance(_RemoteConformance):
    pid = "ollama"

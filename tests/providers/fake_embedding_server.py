"""A scriptable fake of the OpenAI, Gemini, Mistral, Voyage and Ollama embedding APIs.

It also answers text generation: OpenAI and Mistral ``/chat/completions`` and Gemini
``:generateContent``, with the next text pushed to ``generations`` or :func:`fake_generation`.

A ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) speaking the wire formats the real SDK clients
use (see ``reference/feasibility.md`` section 4), plus the batch endpoints: OpenAI/Voyage
``/files`` + ``/batches``, Gemini resumable upload + ``:asyncBatchEmbedContent`` + ``batches/``.

Every request is recorded. Each request first takes the next scripted :class:`Reply` (if any):
an error status, a raw body, a delay, or different vector dimensions; otherwise it gets a correct
answer. Vectors are a deterministic function of the input text (:func:`fake_vector`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_DIMS = 8


def fake_vector(text: str, dims: int = DEFAULT_DIMS) -> list[float]:
    """The server's embedding of ``text``: deterministic, non-zero, text-dependent."""
    digest = hashlib.shake_256(text.encode()).digest(dims)
    return [(byte + 1) / 257 for byte in digest]


def fake_generation(prompt: str) -> str:
    """The server's default answer to ``prompt``: deterministic and prompt-dependent."""
    words = prompt.split()
    return "fake answer: " + " ".join(words[-6:])


@dataclass
class Reply:
    """One scripted answer. The defaults mean "answer correctly"."""

    status: int = 200
    body: bytes | None = None
    delay: float = 0.0
    dims: int | None = None
    content_type: str = "application/json"

    @classmethod
    def error(cls, status: int, message: str) -> Reply:
        """An error in the shapes every SDK reads (``error.message`` and Voyage's ``detail``)."""
        payload = {"error": {"message": message, "code": status}, "detail": message}
        return cls(status=status, body=json.dumps(payload).encode())

    @classmethod
    def malformed(cls) -> Reply:
        return cls(body=b'{"data": [oops')

    @classmethod
    def slow(cls, seconds: float) -> Reply:
        return cls(delay=seconds)


@dataclass
class BatchPlan:
    """How batch jobs behave: the states they go through (created, then one per poll).

    ``line_errors`` maps custom ids to per-line errors in the output file; ``drop`` leaves
    lines out; ``error_file`` is served as the job's error file when it fails.
    """

    states: list[str] = field(default_factory=lambda: ["in_progress", "completed"])
    line_errors: dict[str, str] = field(default_factory=dict)
    drop: set[str] = field(default_factory=set)
    error_file: str | None = None


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def route(self) -> str:
        return self.path.split("?")[0]

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


OPENAI_DONE = "completed"
OPENAI_FAILED = {"failed", "expired", "cancelled", "canceled"}
GEMINI_DONE = "BATCH_STATE_SUCCEEDED"


class FakeEmbeddingServer:
    """Start with ``with FakeEmbeddingServer() as server:``; ``server.url`` is its root."""

    def __init__(self, dims: int = DEFAULT_DIMS) -> None:
        self.dims = dims
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.batch_plan = BatchPlan()
        self.files: dict[str, bytes] = {}
        self.uploads: list[str] = []
        self.jobs: dict[str, dict[str, Any]] = {}
        self.generations: deque[str] = deque()
        self._lock = threading.Lock()
        self._counter = 0
        #: Set on exit: a slow reply still waiting answers at once instead of holding shutdown.
        self._released = threading.Event()
        #: Slow replies that waited out their whole delay (a client that times out first
        #: leaves this at 0).
        self.delays_served = 0
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> FakeEmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # -- scripting and inspection --------------------------------------------------------------

    def uploaded_lines(self, index: int = 0) -> list[Any]:
        """The JSON lines of the ``index``-th uploaded batch input file."""
        return [json.loads(line) for line in self.files[self.uploads[index]].splitlines()]

    def push(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def calls(self, suffix: str) -> list[Recorded]:
        """Recorded requests whose path (without query) ends with ``suffix``."""
        return [r for r in self.requests if r.route.endswith(suffix)]

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}{self._counter}"

    # -- request handling ------------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> _Response:
        self.requests.append(Recorded(method, path, headers, body))
        reply = self.replies.popleft() if self.replies else Reply()
        if reply.delay and not self._released.wait(reply.delay):
            with self._lock:
                self.delays_served += 1
        if reply.status != 200 or reply.body is not None:
            return _Response(reply.status, reply.body or b"", reply.content_type)
        dims = reply.dims or self.dims
        route = path.split("?")[0]
        data = _maybe_json(body)
        for pattern, handler in self._routes():
            match = re.fullmatch(pattern, f"{method} {route}")
            if match:
                return handler(match, data, headers, body, dims)
        return _Response(404, json.dumps({"error": {"message": f"no route {route}"}}).encode())

    def _routes(self) -> Iterator[tuple[str, Callable[..., _Response]]]:
        yield r"POST /api/embed", self._ollama_embed
        yield r"POST /api/embeddings", self._ollama_embeddings
        yield r"GET /api/tags", self._ollama_tags
        yield r"POST /upload/\w+/files", self._gemini_upload_start
        yield r"POST /upload-session/(?P<id>\w+)", self._gemini_upload_data
        yield r"POST .*/models/(?P<model>[^/:]+):batchEmbedContents", self._gemini_embed
        yield r"POST .*/models/(?P<model>[^/:]+):asyncBatchEmbedContent", self._gemini_create
        yield r"GET .*/batches/(?P<id>\w+)", self._get_job
        yield r"GET .*/files/(?P<id>\w+):download", self._file_content
        yield r"GET .*/files/(?P<id>\w+)/content", self._file_content
        yield r"POST .*/embeddings", self._embeddings
        yield r"POST .*/rerank", self._rerank
        yield r"POST .*/files", self._multipart_upload
        yield r"POST .*/batches", self._openai_create
        yield r"POST .*/chat/completions", self._chat_completion
        yield r"POST .*/models/(?P<model>[^/:]+):generateContent", self._gemini_generate

    # -- text generation ---------------------------------------------------------------------------

    def _generation(self, prompt: str) -> str:
        return self.generations.popleft() if self.generations else fake_generation(prompt)

    def _chat_completion(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        """OpenAI and Mistral share this shape; the prompt is the last message's content."""
        text = self._generation(str(data["messages"][-1]["content"]))
        return _json(
            {
                "id": self._next_id("chatcmpl-"),
                "object": "chat.completion",
                "created": 0,
                "model": data.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        )

    def _gemini_generate(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        prompt = " ".join(part.get("text", "") for part in data["contents"][-1]["parts"])
        text = self._generation(prompt)
        return _json(
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": text}]},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3},
                "modelVersion": match["model"],
            }
        )

    def _embeddings(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        inputs = data.get("input")
        inputs = [inputs] if isinstance(inputs, str) else inputs
        base64_wanted = data.get("encoding_format") == "base64"
        items = []
        for index, text in enumerate(inputs):
            vector: Any = fake_vector(text, dims)
            if base64_wanted:
                vector = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode()
            items.append({"object": "embedding", "index": index, "embedding": vector})
        return _json(
            {
                "object": "list",
                "id": "emb-1",
                "data": items,
                "model": data.get("model"),
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            }
        )

    def _rerank(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        """Voyage's rerank shape; a document scores the share of the query's words it holds."""
        query = set(re.findall(r"\w+", data["query"].lower()))
        scored = []
        for index, doc in enumerate(data["documents"]):
            words = set(re.findall(r"\w+", doc.lower()))
            scored.append({"index": index, "relevance_score": len(query & words) / len(query)})
        scored.sort(key=lambda item: -item["relevance_score"])
        return _json(
            {
                "object": "list",
                "data": scored,
                "model": data.get("model"),
                "usage": {"total_tokens": 9},
            }
        )

    def _ollama_embed(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        """Ollama's batch endpoint: ``{model, input}`` -> ``{embeddings: [...]}``."""
        inputs = data.get("input")
        inputs = [inputs] if isinstance(inputs, str) else inputs
        vectors = [fake_vector(text, dims) for text in inputs]
        return _json({"model": data.get("model"), "embeddings": vectors, "prompt_eval_count": 3})

    def _ollama_embeddings(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        """Ollama's legacy one-text endpoint: ``{model, prompt}`` -> ``{embedding: [...]}``."""
        return _json({"embedding": fake_vector(data.get("prompt", ""), dims)})

    def _ollama_tags(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        """Ollama's model list (the provider's reachability probe)."""
        model = {
            "name": "nomic-embed-text:latest",
            "model": "nomic-embed-text:latest",
            "modified_at": "2026-01-01T00:00:00Z",
            "size": 274302450,
            "digest": "0a109f422b47",
            "details": {"format": "gguf", "family": "nomic-bert", "parameter_size": "137M"},
        }
        return _json({"models": [model]})

    def _gemini_embed(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        vectors = [
            {"values": fake_vector(request["content"]["parts"][0]["text"], dims)}
            for request in data["requests"]
        ]
        return _json({"embeddings": vectors})

    # -- batch: uploads ---------------------------------------------------------------------------

    def _multipart_upload(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        message = BytesParser(policy=policy.HTTP).parsebytes(
            f"Content-Type: {headers['content-type']}\r\n\r\n".encode() + body
        )
        fields: dict[str, bytes] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            fields[str(name)] = payload if isinstance(payload, bytes) else b""
        file_id = self._next_id("file")
        self.files[file_id] = fields["file"]
        self.uploads.append(file_id)
        return _json(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(fields["file"]),
                "created_at": 0,
                "filename": "upload.jsonl",
                "purpose": fields.get("purpose", b"").decode(),
                "status": "processed",
            }
        )

    def _gemini_upload_start(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        session = self._next_id("s")
        return _Response(
            200, b"{}", headers={"x-goog-upload-url": f"{self.url}/upload-session/{session}"}
        )

    def _gemini_upload_data(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        file_id = self._next_id("file")
        self.files[file_id] = body
        self.uploads.append(file_id)
        file = {"name": f"files/{file_id}", "mimeType": "jsonl", "sizeBytes": str(len(body))}
        return _Response(
            200, json.dumps({"file": file}).encode(), headers={"x-goog-upload-status": "final"}
        )

    # -- batch: jobs ------------------------------------------------------------------------------

    def _new_job(self, kind: str, input_file: str, dims: int) -> dict[str, Any]:
        job: dict[str, Any] = {
            "id": self._next_id("batch"),
            "kind": kind,
            "input": input_file,
            "step": 0,
            "dims": dims,
            "output": None,
            "error_file": None,
        }
        self.jobs[job["id"]] = job
        return job

    def _openai_create(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        job = self._new_job("openai", data["input_file_id"], dims)
        job["request"] = data
        return _json(self._job_payload(job))

    def _gemini_create(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        input_file = data["batch"]["inputConfig"]["file_name"].removeprefix("files/")
        job = self._new_job("gemini", input_file, dims)
        job["request"] = data
        return _json(self._job_payload(job))

    def _get_job(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        job = self.jobs.get(str(match["id"]))
        if job is None:
            return _Response(404, b'{"error": {"message": "no such batch"}}')
        job["step"] = min(job["step"] + 1, len(self.batch_plan.states) - 1)
        return _json(self._job_payload(job))

    def _file_content(
        self, match: re.Match[str], data: Any, headers: dict[str, str], body: bytes, dims: int
    ) -> _Response:
        content = self.files.get(match["id"])
        if content is None:
            return _Response(404, b'{"error": {"message": "no such file"}}')
        return _Response(200, content, "application/octet-stream")

    def _job_payload(self, job: dict[str, Any]) -> dict[str, Any]:
        state = self.batch_plan.states[job["step"]]
        if job["kind"] == "gemini":
            metadata: dict[str, Any] = {"name": f"batches/{job['id']}", "state": state}
            if state == GEMINI_DONE:
                metadata["output"] = {"responsesFile": f"files/{self._output(job)}"}
            return {"name": f"batches/{job['id']}", "metadata": metadata}
        payload: dict[str, Any] = {
            "id": job["id"],
            "object": "batch",
            "endpoint": "/v1/embeddings",
            "input_file_id": job["input"],
            "completion_window": job["request"].get("completion_window", "24h"),
            "created_at": 0,
            "status": state,
        }
        if state == OPENAI_DONE:
            payload["output_file_id"] = self._output(job)
        if state in OPENAI_FAILED and self.batch_plan.error_file is not None:
            error_file = self._next_id("file")
            self.files[error_file] = self.batch_plan.error_file.encode()
            payload["error_file_id"] = error_file
        return payload

    def _output(self, job: dict[str, Any]) -> str:
        """Build (once) the job's output file from its input file."""
        if job["output"] is None:
            lines = [json.loads(line) for line in self.files[job["input"]].splitlines() if line]
            out = [self._output_line(job, line) for line in lines]
            output_id = self._next_id("file")
            self.files[output_id] = "".join(json.dumps(o) + "\n" for o in out if o).encode()
            job["output"] = output_id
        return str(job["output"])

    def _output_line(self, job: dict[str, Any], line: dict[str, Any]) -> dict[str, Any] | None:
        plan = self.batch_plan
        if job["kind"] == "gemini":
            key = line["key"]
            if key in plan.drop:
                return None
            if key in plan.line_errors:
                return {"key": key, "error": {"message": plan.line_errors[key]}}
            text = line["request"]["content"]["parts"][0]["text"]
            return {
                "key": key,
                "response": {"embedding": {"values": fake_vector(text, job["dims"])}},
            }
        custom_id = line["custom_id"]
        if custom_id in plan.drop:
            return None
        if custom_id in plan.line_errors:
            return {
                "custom_id": custom_id,
                "response": None,
                "error": {"message": plan.line_errors[custom_id]},
            }
        text = line["body"]["input"]
        text = text[0] if isinstance(text, list) else text
        vector = fake_vector(text, job["dims"])
        response_body = {"object": "list", "data": [{"index": 0, "embedding": vector}]}
        return {
            "custom_id": custom_id,
            "response": {"status_code": 200, "body": response_body},
            "error": None,
        }


@dataclass
class _Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def _maybe_json(body: bytes) -> Any:
    """The parsed JSON body, or ``None`` (uploads send JSONL or multipart bodies)."""
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _json(payload: Any) -> _Response:
    return _Response(200, json.dumps(payload).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out close the socket; that is expected, not an error."""


def _handler_for(fake: FakeEmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            response = fake.handle(self.command, self.path, headers, body)
            self.send_response(response.status)
            self.send_header("content-type", response.content_type)
            self.send_header("content-length", str(len(response.body)))
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(response.body)

        do_GET = _serve
        do_POST = _serve

    return Handler

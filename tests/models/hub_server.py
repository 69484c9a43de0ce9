"""A Hugging Face hub for one repository, on 127.0.0.1, for offline tests of ``segeval models``.

It answers as the hub does for LFS files: ``HEAD``/``GET /{repo}/resolve/{revision}/{file}``
is a ``302`` carrying the metadata ``huggingface_hub`` reads (``X-Repo-Commit``,
``X-Linked-Etag`` = the file's SHA-256, ``X-Linked-Size``, ``ETag``) and a
``Location`` on a second server (another origin, as the hub's CDN), which serves the
bytes with ``Content-Length`` and ranged ``GET`` (``206`` + ``Content-Range``).
Unknown repositories, revisions and files get the hub's ``404`` with
``X-Error-Code``. Knobs for the failure tests: :attr:`FakeHub.published` (the hash
the hub publishes), :attr:`FakeHub.sizes` (the size it publishes), :attr:`FakeHub.cut_after` (the next download's connection is
closed after that many bytes), :attr:`FakeHub.block` (every hub request answered
with that status, as a proxy would), :attr:`FakeHub.not_a_hub` (answers without
hub headers). :attr:`FakeHub.requests` records ``(server, method, path, range)``.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse


class FakeHub:
    """Two local servers (hub + CDN) for ``repo_id`` at commit ``revision`` holding ``files``."""

    def __init__(self, repo_id: str, revision: str, files: dict[str, bytes]) -> None:
        self.repo_id, self.revision, self.files = repo_id, revision, dict(files)
        self.published = {n: hashlib.sha256(d).hexdigest() for n, d in self.files.items()}
        self.sizes = {n: len(d) for n, d in self.files.items()}
        self.cut_after: int | None = None
        self.block: int | None = None
        self.not_a_hub = False
        self.requests: list[tuple[str, str, str, str | None]] = []
        self._lock = threading.Lock()
        self.hub = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("hub"))
        self.cdn = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("cdn"))
        for server in (self.hub, self.cdn):
            server.daemon_threads = True
            # a short poll: close() (shutdown) waits for it, 0.5 s a server by default
            threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            ).start()

    @property
    def endpoint(self) -> str:
        """What ``HF_ENDPOINT`` is set to."""
        return f"http://127.0.0.1:{self.hub.server_address[1]}"

    def close(self) -> None:
        for server in (self.hub, self.cdn):
            server.shutdown()
            server.server_close()

    def ranges(self) -> list[str]:
        """The ``Range`` headers of the CDN's GETs, in order (None: a full GET)."""
        return [r for s, m, _, r in self.requests if s == "cdn" and m == "GET"]

    # ------------------------------------------------------------------ answers
    def _handler(self, role: str) -> type:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                hub._answer(self, role, body=False)

            def do_GET(self) -> None:
                hub._answer(self, role, body=True)

        return Handler

    def _answer(self, req: BaseHTTPRequestHandler, role: str, body: bool) -> None:
        path = unquote(urlparse(req.path).path)
        with self._lock:
            self.requests.append((role, req.command, path, req.headers.get("Range")))
        if role == "cdn":
            return self._serve_bytes(req, path.rsplit("/", 1)[-1], body)
        if self.block is not None:
            return self._send(
                req, self.block, {"Content-Type": "text/html"}, b"<html>blocked</html>", body
            )
        prefix = f"/{self.repo_id}/resolve/"
        if not path.startswith(prefix):
            return self._send(req, 404, {"X-Error-Code": "RepoNotFound"}, b"", body)
        revision, _, name = path[len(prefix) :].partition("/")
        if revision not in (self.revision, "main"):
            return self._send(req, 404, {"X-Error-Code": "RevisionNotFound"}, b"", body)
        if name not in self.files:
            return self._send(
                req,
                404,
                {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": self.revision},
                b"",
                body,
            )
        if self.not_a_hub:
            return self._send(req, 200, {"Content-Type": "text/html"}, b"<html>proxy</html>", body)
        cdn = f"http://127.0.0.1:{self.cdn.server_address[1]}/files/{name}"
        self._send(
            req,
            302,
            {
                "Location": cdn,
                "X-Repo-Commit": self.revision,
                "X-Linked-Etag": f'"{self.published[name]}"',
                "X-Linked-Size": str(self.sizes.get(name, len(self.files[name]))),
                "ETag": '"0123456789abcdef0123456789abcdef01234567"',
            },
            b"",
            body,
        )

    def _serve_bytes(self, req: BaseHTTPRequestHandler, name: str, body: bool) -> None:
        data = self.files.get(name)
        if data is None:
            return self._send(req, 404, {}, b"", body)
        start, status, headers = 0, 200, {"Accept-Ranges": "bytes"}
        asked = req.headers.get("Range")
        if asked and asked.startswith("bytes="):
            start = int(asked[len("bytes=") :].split("-")[0] or 0)
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        chunk = data[start:]
        cut = self.cut_after if (body and self.cut_after is not None) else None
        if cut is not None:
            self.cut_after = None  # one interruption
            req.send_response(status)
            for key, value in {**headers, "Content-Length": str(len(chunk))}.items():
                req.send_header(key, value)
            req.end_headers()
            req.wfile.write(chunk[:cut])
            req.wfile.flush()
            req.close_connection = True
            req.connection.shutdown(socket.SHUT_RDWR)
            return None
        return self._send(req, status, headers, chunk, body)

    @staticmethod
    def _send(
        req: BaseHTTPRequestHandler, status: int, headers: dict, data: bytes, body: bool
    ) -> None:
        req.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(data))}.items():
            req.send_header(key, value)
        req.end_headers()
        if body and data:
            req.wfile.write(data)


# ----------------------------------------------------------------------------- test set-up
#: The commit the fake repositories are at.
REVISION = "0123456789abcdef0123456789abcdef01234567"


def tiny_checkpoint() -> bytes:
    """A small random built-in prompt network (width 4, depth 2) in the shipped format."""
    import tempfile
    from pathlib import Path

    import torch

    from napari_segeval.models._prompt_net import PromptUNet
    from napari_segeval.models.builtin_prompt import save_weights

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tiny.pt"
        save_weights(
            PromptUNet(width=4, depth=2).eval(), path, {"width": 4, "depth": 2, "size": 16}
        )
        return path.read_bytes()


def tiny_entry(data: bytes, sha256: str | None = None):
    """A catalogue entry ``test-tiny`` for ``data``: read by the built-in network."""
    from napari_segeval.models.catalogue import CatalogueEntry, ModelCard

    card = ModelCard("random weights made by the test", "tests", "BSD-3-Clause")
    return CatalogueEntry(
        "test-tiny",
        "test",
        "builtin",
        "segeval-test/tiny",
        "tiny.pt",
        REVISION,
        len(data),
        "tests",
        card,
        sha256,
    )


def serve(monkeypatch, cache, entry, data: bytes) -> FakeHub:
    """Register ``entry``, serve ``data`` as its file, point the hub variables at it."""
    from napari_segeval.models import catalogue

    monkeypatch.setitem(catalogue.CATALOGUE, entry.name, entry)
    hub = FakeHub(entry.repo_id, entry.revision, {entry.filename: data})
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    try:
        from huggingface_hub import constants
    except ImportError:
        return hub
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # read once, at its import
    return hub


def files_in(folder) -> list[str]:
    """Every file (or link) under ``folder``, relative, sorted (``[]`` when it is absent)."""
    import os
    from pathlib import Path

    folder = Path(folder)
    out = []
    for root, _dirs, names in os.walk(folder):
        out += [str((Path(root) / n).relative_to(folder)) for n in names]
    return sorted(out)

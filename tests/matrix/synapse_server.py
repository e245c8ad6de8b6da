"""A throwaway Synapse homeserver for the Matrix tests and bench: real, on loopback.

Synapse (`matrix-synapse`, pinned in the Makefile's `synapse` target) lives in
its own venv, `.venv-synapse` (its pins stay out of the project's). `start()`
writes a config for SQLite in a temporary directory (registration by shared
secret only, rate limits far above what a test sends, no federation, no
URL previews) and a signing key, starts
`python -m synapse.app.homeserver` on a free 127.0.0.1 port and waits until
`/_matrix/client/versions` answers (polling; the bound is only against a hang).
`register(name)` makes an account through the shared-secret admin API and
returns its user id and access token. `NoSynapse` says why it cannot run.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-synapse"
SERVER_NAME = "localhost"
START_BOUND_S = 180.0  # against a hung start only; readiness is polled


class NoSynapse(Exception):
    """Synapse is not installed (or would not start); the text says why."""


@dataclass(frozen=True, slots=True)
class Account:
    user_id: str
    access_token: str
    device_id: str


@dataclass
class Synapse:
    directory: Path
    port: int
    secret: str
    proc: subprocess.Popen[bytes]
    accounts: dict[str, Account] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def register(self, name: str, admin: bool = False) -> Account:
        """A new account `@name:localhost` (the same one again when asked twice)."""
        if name in self.accounts:
            return self.accounts[name]
        nonce = _json(f"{self.url}/_synapse/admin/v1/register")["nonce"]
        password = secrets.token_hex(12)
        mac = hmac.new(self.secret.encode(), digestmod=hashlib.sha1)
        kind = b"admin" if admin else b"notadmin"
        mac.update(b"\x00".join([nonce.encode(), name.encode(), password.encode(), kind]))
        body = {
            "nonce": nonce,
            "username": name,
            "password": password,
            "admin": admin,
            "mac": mac.hexdigest(),
        }
        got = _json(f"{self.url}/_synapse/admin/v1/register", body)
        account = Account(got["user_id"], got["access_token"], got["device_id"])
        self.accounts[name] = account
        return account

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def python() -> Path:
    exe = VENV / "bin" / "python"
    if not (VENV / ".installed-stamp").is_file() or not exe.is_file():
        raise NoSynapse(f"{VENV.name} is missing")
    return exe


def start() -> Synapse:
    exe = python()
    directory = Path(tempfile.mkdtemp(prefix="roost-synapse-"))
    port = _free_port()
    secret = secrets.token_hex(16)
    config = directory / "homeserver.yaml"
    config.write_text(_config(directory, port, secret))
    log = directory / "stderr.log"
    (directory / "signing.key").write_text(signing_key())
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [str(exe), "-m", "synapse.app.homeserver", "-c", str(config)],
            cwd=directory,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={k: v for k, v in os.environ.items() if not k.startswith("ROOST_")},
        )
    server = Synapse(directory, port, secret, proc)
    deadline = time.monotonic() + START_BOUND_S
    while True:
        if proc.poll() is not None:
            text = log.read_text(errors="replace")[-1500:]
            shutil.rmtree(directory, ignore_errors=True)
            raise NoSynapse(f"synapse exited with {proc.returncode}: {text}")
        try:
            _json(f"{server.url}/_matrix/client/versions")
            return server
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                server.stop()
                raise NoSynapse("synapse did not answer /_matrix/client/versions") from None
            time.sleep(0.1)  # polling for readiness, not a wait for something to happen


def signing_key() -> str:
    """The server's signing key file, as `--generate-keys` writes it (signedjson's
    `write_signing_keys`: algorithm, key id, the unpadded base64 of the ed25519 seed): any
    32 random bytes are a seed. Written here, since that command is a whole start of
    Synapse's (about 1.8 s of CPU) for 32 random bytes."""
    seed = base64.b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    return f"ed25519 a_{secrets.token_hex(2)} {seed}\n"


def _json(url: str, body: dict[str, object] | None = None) -> dict[str, object] | dict[str, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        loaded = json.loads(response.read())
    if not isinstance(loaded, dict):
        raise ValueError("not a JSON object")
    return loaded


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(directory: Path, port: int, secret: str) -> str:
    fast = "{per_second: 10000, burst_count: 10000}"
    return f"""
server_name: "{SERVER_NAME}"
pid_file: "{directory}/homeserver.pid"
listeners:
  - port: {port}
    bind_addresses: ["127.0.0.1"]
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: "{directory}/homeserver.db"
media_store_path: "{directory}/media"
signing_key_path: "{directory}/signing.key"
registration_shared_secret: "{secret}"
macaroon_secret_key: "{secrets.token_hex(16)}"
form_secret: "{secrets.token_hex(16)}"
report_stats: false
bcrypt_rounds: 4
enable_metrics: false
trusted_key_servers: []
suppress_key_server_warning: true
url_preview_enabled: false
presence:
  enabled: false
federation_domain_whitelist: []
max_upload_size: 50M
rc_message: {fast}
rc_registration: {fast}
rc_login:
  address: {fast}
  account: {fast}
  failed_attempts: {fast}
rc_joins:
  local: {fast}
  remote: {fast}
rc_joins_per_room: {fast}
rc_invites:
  per_room: {fast}
  per_user: {fast}
  per_issuer: {fast}
rc_admin_redaction: {fast}
rc_3pid_validation: {fast}
rc_media_create: {fast}
rc_delayed_event_mgmt: {fast}
rc_room_creation: {fast}
rc_presence:
  per_user: {fast}
"""

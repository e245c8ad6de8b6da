"""Several real `roost serve` processes on one home and one database, for tests and bench/.

`Cluster` launches instances (`python -m bridge.cli.main serve`) on one
ROOST_HOME with one `[database] url` (PostgreSQL; None: SQLite, one
instance), one fake OpenAI-compatible model (answers "echo: <question>")
and one fake Telegram Bot API in webhook mode: every instance mounts the
webhook route, and `post_update(instance, update)` delivers an update to
the one a load balancer would have picked. With `whatsapp` (a fake Cloud
API, tests/fakes/fake_whatsapp.py) every instance also serves WhatsApp's
webhook, and `post_whatsapp(instance, body)` delivers a signed one. `lease_s` is small so a killed
instance's people are taken over within seconds. Each instance's stderr
goes to a file under `root` (a pipe nobody reads would fill and stall it);
its stdout is read up to the ready line ("roost: model ...") for the web
port, then drained.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.fake_whatsapp import FakeWhatsApp

ROOST = [sys.executable, "-m", "bridge.cli.main"]
KEY = "sk-test-key-000000000000"
SECRET = "s3cret_webhook-token"
WEB_TOKEN = "cluster-bench-token-0123456789abcdef"
TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
LIMIT_S = 180.0  # a hang guard for a busy machine, never a speed check


@dataclass
class Instance:
    name: str
    proc: asyncio.subprocess.Process
    log: Path
    port: int = 0
    drain: asyncio.Task[None] | None = None
    out: list[str] = field(default_factory=list)

    @property
    def webhook(self) -> str:
        return f"http://127.0.0.1:{self.port}/telegram/webhook"

    @property
    def whatsapp_webhook(self) -> str:
        return f"http://127.0.0.1:{self.port}/whatsapp/webhook"

    def stderr(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class Cluster:
    """Instances of one home; `aclose` kills what is still running."""

    def __init__(
        self,
        root: Path,
        *,
        db_url: str | None,
        model_url: str,
        bot_api_url: str,
        people: list[int],
        lease_s: float = 2.0,
        extra: Mapping[str, str] | None = None,
        whatsapp: FakeWhatsApp | None = None,
        whatsapp_people: list[str] | None = None,
    ) -> None:
        self.root, self.home = root, root / "home"
        self.db_url, self.model_url, self.bot_api_url = db_url, model_url, bot_api_url
        self.lease_s, self.extra = lease_s, dict(extra or {})
        self.whatsapp = whatsapp
        self.config = root / "roost.toml"
        wa_ids = [f"+{p}" for p in whatsapp_people or []]
        self.config.write_text(
            f"[tenants.alice]\ntelegram_ids = {people}\nwhatsapp_ids = {json.dumps(wa_ids)}\n"
        )
        self.instances: list[Instance] = []
        self._http: aiohttp.ClientSession | None = None

    def env(self, name: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
        env.update(
            ROOST_HOME=str(self.home),
            ROOST_CONFIG=str(self.config),
            ROOST_WEB__PORT="0",
            ROOST_WEB__TOKEN=WEB_TOKEN,
            ROOST_LOG_LEVEL="INFO",
            ROOST_LLM__PROVIDER="openai",
            ROOST_LLM__BASE_URL=self.model_url,
            ROOST_LLM__API_KEY=KEY,
            ROOST_LLM__MODEL="m1",
            ROOST_TELEGRAM__TOKEN=TOKEN,
            ROOST_TELEGRAM__API_BASE_URL=self.bot_api_url,
            ROOST_TELEGRAM__MODE="webhook",
            ROOST_TELEGRAM__WEBHOOK_URL="https://roost.example/telegram/webhook",
            ROOST_TELEGRAM__WEBHOOK_SECRET=SECRET,
            ROOST_LIMITS__SHUTDOWN_GRACE_S="1",
            ROOST_GRADING__JUDGE_DAILY_CAP="0",
            ROOST_CLUSTER__INSTANCE=name,
            ROOST_CLUSTER__LEASE_S=str(self.lease_s),
        )
        if self.whatsapp is not None:
            env.update(
                ROOST_WHATSAPP__ACCESS_TOKEN=self.whatsapp.token,
                ROOST_WHATSAPP__APP_SECRET=self.whatsapp.app_secret,
                ROOST_WHATSAPP__VERIFY_TOKEN="cluster-verify",
                ROOST_WHATSAPP__PHONE_NUMBER_ID=self.whatsapp.phone_number_id,
                ROOST_WHATSAPP__API_BASE_URL=self.whatsapp.base_url,
            )
        env.update(self.extra)  # may replace any of the above (e.g. the Telegram mode)
        if self.db_url is not None:
            env["ROOST_DATABASE__URL"] = self.db_url
        return env

    async def launch(self, name: str) -> Instance:
        """Start one instance and return once it is ready (its channels are up)."""
        log = self.root / f"{name}.stderr"
        with log.open("ab") as err:
            proc = await asyncio.create_subprocess_exec(
                *ROOST, "serve", env=self.env(name), stdout=asyncio.subprocess.PIPE, stderr=err
            )
        inst = Instance(name, proc, log)
        self.instances.append(inst)
        assert proc.stdout is not None
        while True:
            raw = await asyncio.wait_for(proc.stdout.readline(), LIMIT_S)
            if not raw:
                await proc.wait()
                raise AssertionError(f"instance {name} exited: {inst.stderr()[-4000:]}")
            line = raw.decode()
            inst.out.append(line)
            found = re.search(r"web chat at http://127\.0\.0\.1:(\d+)/", line)
            if found:
                inst.port = int(found.group(1))
            if line.startswith("roost: model"):
                break
        inst.drain = asyncio.create_task(_drain(proc.stdout))
        return inst

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession()
        return self._http

    async def post_update(self, inst: Instance, update: dict[str, Any]) -> int:
        """Deliver one update to `inst`'s webhook as Telegram would; the HTTP status."""
        headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
        async with self.http.post(inst.webhook, json=update, headers=headers) as resp:
            await resp.read()
            return resp.status

    async def post_whatsapp(self, inst: Instance, body: dict[str, Any]) -> int:
        """Deliver one webhook to `inst` as Meta would (signed); the HTTP status."""
        assert self.whatsapp is not None
        raw = json.dumps(body).encode()
        headers = {
            "Content-Type": "application/json",
            "X-Hub-Signature-256": self.whatsapp.sign(raw),
        }
        async with self.http.post(inst.whatsapp_webhook, data=raw, headers=headers) as resp:
            await resp.read()
            return resp.status

    async def chat(self, inst: Instance, chat: str, text: str) -> str:
        """One turn through `POST /api/chat` on `inst`; the reply."""
        headers = {"Authorization": f"Bearer {WEB_TOKEN}"}
        url = f"http://127.0.0.1:{inst.port}/api/chat"
        async with self.http.post(url, json={"text": text, "chat": chat}, headers=headers) as r:
            body = await r.json()
        return str(body["reply"])

    async def audit_verify(self) -> tuple[int, str]:
        """`roost audit verify` on the home: (exit status, stdout and stderr)."""
        proc = await asyncio.create_subprocess_exec(
            *ROOST,
            "audit",
            "verify",
            env=self.env("verify"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), LIMIT_S)
        return proc.returncode or 0, out.decode()

    async def kill(self, inst: Instance) -> None:
        inst.proc.kill()
        await asyncio.wait_for(inst.proc.wait(), LIMIT_S)

    async def stop(self, inst: Instance) -> int:
        inst.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(inst.proc.wait(), LIMIT_S)
        if inst.drain is not None:
            await asyncio.gather(inst.drain, return_exceptions=True)
        return inst.proc.returncode or 0

    async def aclose(self) -> None:
        for inst in self.instances:
            if inst.proc.returncode is None:
                inst.proc.kill()
                await inst.proc.wait()
            if inst.drain is not None:
                inst.drain.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await inst.drain
        if self._http is not None:
            await self._http.close()


ClusterOf = Callable[..., Cluster]  # the `cluster_of` fixture: options as `Cluster` takes


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


def private_message(update_id: int, person: int, text: str, message_id: int) -> dict[str, Any]:
    """A person's text message in a private chat, as a webhook update."""
    import time

    return {
        "update_id": update_id,
        "message": {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": person, "type": "private", "first_name": f"user{person}"},
            "from": {"id": person, "is_bot": False, "first_name": f"user{person}"},
            "text": text,
        },
    }

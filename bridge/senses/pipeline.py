"""The senses pipeline: a message's attachments in, by kind; files from outputs/ out.

`SensePipeline` is the core's `Senses` (`bridge.core.perceive`), built by
the app. Its registry maps an attachment kind to a handler
(`bridge.senses.handlers`); `default_pipeline` registers `photo` and
`document`, and another kind is one line: `senses.register("voice", hear)`.
`prepare(turn)` runs each attachment's handler (a file the channel could
not fetch, a kind nobody handles, a handler's `Refused` or any exception
becomes a line for the person) and merges the results: when nothing sent
could be used the turn is refused with the reasons; otherwise it runs on
what was read and the person is told what was not. Photos are named in the
text as "[image: N photos]" (what the stored history keeps). Before any
attachment is looked at, `outputs/` is listed, so `handed_out` can return
the files a tool wrote there during the turn; with the daemon's directory
`watch`, neither listing is taken while it vouches that nothing changed there
(`outputs.Listings`).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from bridge.core.masks import SplitMask
from bridge.core.perceive import Prepared
from bridge.core.quota import QuotaExceeded, TenantQuota
from bridge.senses import outputs
from bridge.senses.cleanup import sweep_home
from bridge.senses.decode_wire import Job
from bridge.senses.decoders import Decoded, DecoderPool
from bridge.senses.documents import document
from bridge.senses.files import Refused, byte_limit, too_large
from bridge.senses.handlers import Handler, SenseContext, SenseLimits, shown_name
from bridge.senses.photos import photo
from bridge.types.messages import Attachment, OutFile
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext

log = logging.getLogger(__name__)
NOT_HANDLED = {
    "voice": "🎙 I cannot listen to voice messages here yet; please type your question.",
    "audio": "🎙 I cannot listen to audio files here yet; please type your question.",
}


class SensePipeline:
    def __init__(
        self,
        limits: SenseLimits,
        home: Path,
        *,
        vision_of: Callable[[TurnContext], bool] = lambda turn: False,
        vision_models: Callable[[], Sequence[str]] = tuple,
        decoders: DecoderPool | None = None,
        quota: TenantQuota | None = None,
        platform_bytes: Mapping[str, int] | None = None,
        watch: outputs.Watch | None = None,
        masks: Callable[[TenantDirs], SplitMask] | None = None,
    ) -> None:
        self._limits = limits
        self._masks = masks  # the tenant's masker, for a text cut at a limit (`ctx.cut`)
        self._outputs = outputs.Listings(watch)  # outputs/ listed only when it changed
        self._platform_bytes = dict(platform_bytes or {})  # channel -> its download cap
        self._home = home
        self._quota = quota  # a file the channel did not keep for want of space is said so
        self.decoders = decoders or DecoderPool()  # one process per file, off the thread pool
        self._vision_of = vision_of  # can the chat's model (for this turn) see images?
        self._vision_models = vision_models
        self._handlers: dict[str, Handler] = {}
        self._explains_unfetched: set[str] = set()

    def register(self, kind: str, handler: Handler, *, explains_unfetched: bool = False) -> None:
        """Handle attachments of `kind` with `handler` (one line per kind). With
        `explains_unfetched`, the handler also gets a file the channel did not fetch
        and says why itself (voice: the note's length against its own limit)."""
        self._handlers[kind] = handler
        if explains_unfetched:
            self._explains_unfetched.add(kind)

    @property
    def limits(self) -> SenseLimits:
        return self._limits

    def set_limits(self, limits: SenseLimits) -> None:
        """Reloaded limits, from the next message on."""
        self._limits = limits

    async def prepare(self, turn: TurnContext) -> Prepared:
        before, stamp = self._outputs.before(turn.dirs.outputs)
        if not turn.inbound.attachments:
            return Prepared(outputs_seen=before, outputs_stamp=stamp)
        for path in (turn.dirs.inbox, turn.dirs.outputs):
            path.mkdir(mode=0o700, exist_ok=True)
        tenant = turn.dirs.tenant

        async def decode(job: Job, fd: int) -> Decoded:
            return await self.decoders.decode(tenant, job, fd)

        ctx = SenseContext(
            turn,
            self._limits,
            self._vision_of(turn),
            tuple(self._vision_models()),
            decode,
            self._platform_bytes.get(turn.inbound.channel, 0),
            self._masks(turn.dirs) if self._masks is not None else None,
        )
        results = [await self._one(att, ctx) for att in turn.inbound.attachments]
        return replace(merged(results, before), outputs_stamp=stamp)

    async def _one(self, att: Attachment, ctx: SenseContext) -> Prepared:
        if not att.path and att.kind not in self._explains_unfetched:  # not fetched
            if att.size > byte_limit(ctx):
                return Prepared(refusal=too_large(att, att.size, byte_limit(ctx)))
            full = await self._storage_full(ctx.turn.dirs, att.size)
            if full:
                return Prepared(refusal=f"📎 {shown_name(att)} was not saved: {full}")
            return Prepared(refusal=f"📎 {shown_name(att)} could not be received; try again.")
        handler = self._handlers.get(att.kind)
        if handler is None:
            default = f"📎 I cannot read {att.kind} attachments yet."
            return Prepared(refusal=NOT_HANDLED.get(att.kind, default))
        try:
            return await handler(att, ctx)
        except Refused as exc:
            return Prepared(refusal=str(exc))
        except Exception as exc:  # never the content: the kind and the exception's type
            ref = secrets.token_hex(3)
            log.error("senses: a %s attachment failed (ref %s): %s", att.kind, ref, type(exc))
            return Prepared(refusal=f"📎 I could not read {shown_name(att)} (ref {ref}).")

    async def _storage_full(self, dirs: TenantDirs, size: int) -> str:
        """Why a file of `size` bytes does not fit in the tenant's quota ('' when it does)."""
        if self._quota is None:
            return ""
        try:
            await self._quota.fits(dirs, max(1, size))
        except QuotaExceeded as exc:
            return f"{exc}. Remove files from your workspace with a tool and send it again."
        return ""

    def handed_out(self, turn: TurnContext, prepared: Prepared) -> tuple[OutFile, ...]:
        out = turn.dirs.outputs
        return self._outputs.after(out, prepared.outputs_seen, prepared.outputs_stamp)

    async def aclose(self) -> None:
        """Kill every decoder process (shutdown)."""
        await self.decoders.aclose()

    def sweep(self, now: float | None = None) -> int:
        """Remove attachments older than the keep time from every tenant's inbox."""
        keep_s = self._limits.attachment_keep_hours * 3600
        return sweep_home(self._home, time.time() if now is None else now, keep_s)


def merged(results: Sequence[Prepared], before: outputs.Seen) -> Prepared:
    """One `Prepared` for the message: refused when nothing could be used."""
    usable = [r for r in results if not r.refusal]
    problems = tuple(r.refusal for r in results if r.refusal)
    if not usable:
        return Prepared(refusal="\n".join(problems), outputs_seen=before)
    images = tuple(image for r in usable for image in r.images)
    texts = [r.text_prefix for r in usable if r.text_prefix]
    if images:
        texts.insert(0, f"[image: {len(images)} photo{'s' if len(images) > 1 else ''}]")
    if problems:
        texts.append("[not read, and the person was told: " + " ".join(problems) + "]")
    notices = problems + tuple(n for r in usable for n in r.notices)
    return Prepared("\n\n".join(texts), images, notices, outputs_seen=before)


def default_pipeline(
    limits: SenseLimits,
    home: Path,
    vision_of: Callable[[TurnContext], bool] = lambda turn: False,
    vision_models: Callable[[], Sequence[str]] = tuple,
    decoders: DecoderPool | None = None,
    quota: TenantQuota | None = None,
    platform_bytes: Mapping[str, int] | None = None,
    watch: outputs.Watch | None = None,
    masks: Callable[[TenantDirs], SplitMask] | None = None,
) -> SensePipeline:
    """The pipeline with the photo and document handlers registered."""
    senses = SensePipeline(
        limits,
        home,
        vision_of=vision_of,
        vision_models=vision_models,
        decoders=decoders,
        quota=quota,
        platform_bytes=platform_bytes,
        watch=watch,
        masks=masks,
    )
    senses.register("photo", photo)
    senses.register("document", document)
    return senses

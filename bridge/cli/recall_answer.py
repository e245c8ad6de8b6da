"""`roost recall-eval --answer`: LoCoMo questions through the full turn, graded by a model judge.

For each conversation of the set a temporary home gets the configured
model, the conversation imported into its local tenant, and every question
runs as one turn through the real core (prompt, tools — the model may call
`recall` — and all). A judge (the same model, a small fixed prompt) reads the
question, the evidence messages and the answer and says CORRECT or WRONG.
Prints the share correct per category. Needs a model: the offline stand-in
is refused by the caller; tests run it against the fake OpenAI server.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bridge.app.build import build
from bridge.channels.terminal.channel import inbound
from bridge.core.ask import read_answer
from bridge.core.config import Settings
from bridge.recall.evaluate import CATEGORIES, load_set
from bridge.recall.indexer import Indexer
from bridge.types.backend import Backend, ChatMessage, ModelRequest
from bridge.types.tenant_dirs import TenantDirs

JUDGE = (
    "You grade an assistant's answer to a question about a past conversation. The evidence "
    "messages hold the truth. Reply with one word: CORRECT if the answer states what the "
    "evidence says (wording may differ), WRONG otherwise."
)


@dataclass
class AnswerScore:
    per: dict[int, list[bool]] = field(default_factory=lambda: defaultdict(list))

    def line(self) -> str:
        parts = []
        for cat, label in CATEGORIES.items():
            got = self.per.get(cat, [])
            if got:
                parts.append(f"{label} {sum(got) / len(got):.3f} (n={len(got)})")
        every = [v for vs in self.per.values() for v in vs]
        total = f"all {sum(every) / len(every):.3f} (n={len(every)})" if every else "no questions"
        return "answer accuracy (model judge): " + ", ".join([*parts, total])


async def judge(backend: Backend, question: str, evidence: list[str], answer: str) -> bool:
    body = json.dumps({"question": question, "evidence": evidence, "answer": answer})
    request = ModelRequest(JUDGE, (ChatMessage(role="user", content=body),))
    verdict = await read_answer(backend, request, 200)
    return verdict.strip().upper().startswith("CORRECT")


async def answer_eval(settings: Settings, folder: Path, limit: int = 0) -> AnswerScore:
    score, asked = AnswerScore(), 0
    for name, messages, questions in load_set(folder):
        with tempfile.TemporaryDirectory() as tmp:
            local = settings.model_copy(update={"home": Path(tmp), "local_tenant": "eval"})
            dirs = TenantDirs.of(local.home, "eval").ensure()
            texts = {m.msg_id: m.text for m in messages}
            roost = await build(local)
            try:
                await Indexer(roost.database).admit(dirs, messages)
                for n, q in enumerate(questions):
                    if limit and asked >= limit:
                        return score
                    final = await roost.core.handle(inbound(str(q["q"]), f"eval-{name}-{n}"), None)
                    evidence = [texts.get(str(e), "") for e in q["evidence"]]  # type: ignore[attr-defined]
                    ok = await judge(roost.backend, str(q["q"]), evidence, final.text)
                    score.per[int(q["category"])].append(ok)  # type: ignore[call-overload]
                    asked += 1
            finally:
                await roost.aclose()
    return score

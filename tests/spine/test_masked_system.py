"""`MaskMemo.system` and `MaskMemo.stable` against the plain masking they remember.

Differential: seeded random turns (the same prompt object again, an equal prompt in
a new object, a changed prompt, a vault value added or removed, a secret spelled
inside the stable prefix, after it or across its end, another tenant's masker in
between, the refused-secrets masker of one turn) must give exactly `mask(system)`
and the stable length the turn worked out before (`len(mask(system[:stable]))`
when the masked prompt starts with it, else 0); an unchanged prompt is masked
once, not on every turn.
"""

from __future__ import annotations

import random

from bridge.core.mask_memo import MaskMemo
from bridge.loadout.mask import Masker
from tests.masking import CountingMasker

memo = MaskMemo()  # what these tests mask is remembered here, as a turn runner's

SECRETS = ("hunter2-secret-value", "ghp_0123456789abcdefghij", "s3cr3t-pass-phrase-xyz")


def _plain_stable(system: str, stable: int, mask: Masker) -> int:
    if stable <= 0:
        return stable
    head = mask.mask(system[:stable])
    return len(head) if mask.mask(system).startswith(head) else 0


def _prompt(rng: random.Random, n: int) -> tuple[str, int]:
    head = f"You are roost {n}. Steering: be brief.\n" * rng.randint(1, 5)
    tail = f"Tools: me.fetch (unused {n}d)\n" * rng.randint(0, 4)
    secret = rng.choice(SECRETS)
    where = rng.random()
    if where < 0.25:  # inside the stable prefix
        head = head + f"profile token {secret}\n"
    elif where < 0.5:  # after it
        tail = f"the last note said {secret}\n" + tail
    elif where < 0.75:  # across the prefix's end: no cacheable prefix once masked
        cut = rng.randint(1, len(secret) - 1)
        head, tail = head + secret[:cut], secret[cut:] + tail
    stable = rng.choice((len(head), len(head), 0, -1, len(head) // 2))
    return head + tail, stable


def test_every_turn_equals_the_plain_masking() -> None:
    rng = random.Random(13)
    vaults = [
        Masker({"A": SECRETS[0], "B": SECRETS[1]}),
        Masker({"C": SECRETS[2]}),
        Masker({}),
    ]
    prompts = [_prompt(rng, 0), _prompt(rng, 1)]  # two tenants' current prompts
    for n in range(800):
        who = rng.randrange(2)
        step = rng.random()
        if step < 0.2:  # a loadout change: a new prompt
            prompts[who] = _prompt(rng, n)
        elif step < 0.3:  # rendered again: the same text, a new object
            text, stable = prompts[who]
            prompts[who] = ("".join(list(text)), stable)
        elif step < 0.4:  # a vault value added or removed: a new masker
            vaults[who] = Masker({"X": rng.choice(SECRETS)} if rng.random() < 0.5 else {})
        mask = vaults[who] if rng.random() < 0.85 else rng.choice(vaults)
        if rng.random() < 0.1:  # a turn whose screen refused a secret
            mask = mask.also([f"password: {rng.choice(SECRETS)}"])
        system, stable = prompts[who]
        assert memo.stable(system, stable, mask.mask) == _plain_stable(system, stable, mask)
        assert memo.system(system, mask.mask) == mask.mask(system)


def test_an_unchanged_prompt_is_masked_once() -> None:
    counting = CountingMasker(Masker({"A": SECRETS[0]}))
    system = f"base\nprofile {SECRETS[0]}\ntools"
    stable = len("base\nprofile ") + 4  # the secret straddles the prefix's end
    for _ in range(5):
        assert memo.stable(system, stable, counting.mask) == 0
        assert memo.system(system, counting.mask) == "base\nprofile [vault:A]\ntools"
    assert counting.calls == 2  # the prompt and its prefix, the first turn only
    other = CountingMasker(Masker({"A": SECRETS[1]}))  # the vault changed: masked again
    assert memo.system(system, other.mask) == system
    assert other.calls == 1

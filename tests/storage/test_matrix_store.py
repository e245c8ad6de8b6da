"""The Matrix channel's store (`bridge.channels.matrix.store`) on both backends: the sync
token per bot account and each person's direct room, kept per account."""

from __future__ import annotations

from bridge.channels.matrix.store import MatrixStore
from bridge.storage.protocol import Database

T0 = 1_800_000_000_000


async def test_the_sync_token_is_kept_per_account(db: Database) -> None:
    bot, other = MatrixStore(db, "@bot:hs"), MatrixStore(db, "@other:hs")
    assert await bot.next_batch() is None
    await bot.save_batch("s1", T0)
    await bot.save_batch("s2_ünï", T0 + 1)
    assert await bot.next_batch() == "s2_ünï"
    assert await other.next_batch() is None
    await other.save_batch("o1", T0)
    assert await bot.next_batch() == "s2_ünï" and await other.next_batch() == "o1"
    assert (
        await db.fetch_value("SELECT updated_ms FROM matrix_sync WHERE account = ?", ("@bot:hs",))
        == T0 + 1
    )


async def test_a_persons_direct_room_is_the_last_they_wrote_in(db: Database) -> None:
    bot, other = MatrixStore(db, "@bot:hs"), MatrixStore(db, "@other:hs")
    assert await bot.direct("@alice:hs") is None
    await bot.set_direct("@alice:hs", "!one:hs", T0)
    await bot.set_direct("@alice:hs", "!two:hs", T0 + 1)
    await other.set_direct("@alice:hs", "!three:hs", T0)
    await bot.set_direct("@bob:hs", "!two:hs", T0)
    assert await bot.direct("@alice:hs") == "!two:hs"
    await bot.forget_room("!two:hs")  # the bot left it: nobody's direct room now
    assert await bot.direct("@alice:hs") is None and await bot.direct("@bob:hs") is None
    assert await other.direct("@alice:hs") == "!three:hs", "another account's rows stay"

"""The SQLite text of the logical migrations 1..18: the one list of roost.db's schema.

Until round two moves the stores onto `bridge.storage`, `bridge.core.db`
runs these on `roost.db` (as its `MIGRATIONS`); a table is added by
appending a step here, with its PostgreSQL text in `bridge.storage.schema`.
`PRAGMA user_version` counts these steps on both backends.
"""

from __future__ import annotations

SQLITE: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        started_at REAL NOT NULL, updated_at REAL NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0, dropped INTEGER NOT NULL DEFAULT 0,
        chars INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, channel, chat)
    );
    CREATE TABLE session_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        turn INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
        msg_id TEXT NOT NULL DEFAULT '', at REAL NOT NULL
    );
    CREATE INDEX session_messages_key ON session_messages (tenant, channel, chat, id);
    CREATE TABLE chat_settings (
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        key TEXT NOT NULL, value TEXT NOT NULL,
        PRIMARY KEY (tenant, channel, chat, key)
    );
    """,
    # pairing (bridge/pairing.py): code hashes only, bindings, lockouts, refusal notices
    """
    CREATE TABLE pairing_codes (
        code_hash TEXT PRIMARY KEY, tenant TEXT NOT NULL,
        created_at REAL NOT NULL, expires_at REAL NOT NULL,
        used_at REAL, used_by TEXT
    );
    CREATE TABLE pairing_bindings (
        channel TEXT NOT NULL, identity TEXT NOT NULL, tenant TEXT NOT NULL,
        bound_at REAL NOT NULL, PRIMARY KEY (channel, identity)
    );
    CREATE TABLE pairing_failures (
        channel TEXT NOT NULL, identity TEXT NOT NULL,
        failures INTEGER NOT NULL, window_start REAL NOT NULL,
        locked_until REAL NOT NULL DEFAULT 0, PRIMARY KEY (channel, identity)
    );
    CREATE TABLE refusal_notices (
        channel TEXT NOT NULL, identity TEXT NOT NULL, at REAL NOT NULL,
        PRIMARY KEY (channel, identity)
    );
    """,
    # skills (bridge/skills): grades in thousandths, the last turn per chat
    """
    CREATE TABLE skill_grades (
        tenant TEXT NOT NULL, name TEXT NOT NULL, grade INTEGER NOT NULL,
        approvals INTEGER NOT NULL DEFAULT 0, rejections INTEGER NOT NULL DEFAULT 0,
        rephrases INTEGER NOT NULL DEFAULT 0, neutrals INTEGER NOT NULL DEFAULT 0,
        autos INTEGER NOT NULL DEFAULT 0, updated_at REAL,
        PRIMARY KEY (tenant, name)
    );
    CREATE TABLE turn_log (
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        msg_id TEXT NOT NULL, skills TEXT NOT NULL, at REAL NOT NULL,
        graded INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, channel, chat)
    );
    """,
    # user-style learner (bridge/style): bullets with their state and A/B counters
    """
    CREATE TABLE style_bullets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL, skill TEXT NOT NULL, state TEXT NOT NULL,
        text TEXT NOT NULL, outcome TEXT NOT NULL DEFAULT '',
        signal_count INTEGER NOT NULL, negative_count INTEGER NOT NULL,
        judge_attempts INTEGER NOT NULL DEFAULT 0,
        created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
        shadow_since_ms INTEGER, live_since_ms INTEGER,
        cooldown_until_ms INTEGER NOT NULL DEFAULT 0,
        with_n INTEGER NOT NULL DEFAULT 0, with_neg INTEGER NOT NULL DEFAULT 0,
        without_n INTEGER NOT NULL DEFAULT 0, without_neg INTEGER NOT NULL DEFAULT 0,
        live_n INTEGER NOT NULL DEFAULT 0, live_neg INTEGER NOT NULL DEFAULT 0,
        score INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX style_bullets_tenant ON style_bullets (tenant, state);
    CREATE TABLE style_sweeps (
        at_ms INTEGER NOT NULL, tenants INTEGER NOT NULL, candidates INTEGER NOT NULL,
        judged INTEGER NOT NULL, pending INTEGER NOT NULL, promoted INTEGER NOT NULL,
        rejected INTEGER NOT NULL, rolled_back INTEGER NOT NULL, judge_status TEXT NOT NULL
    );
    """,
    # schedule (bridge/schedule): jobs and the delivery outbox; times in ms, UTC
    """
    CREATE TABLE jobs (
        tenant TEXT NOT NULL, id TEXT NOT NULL,
        channel TEXT NOT NULL, chat TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('reminder', 'turn', 'tool')),
        spec TEXT NOT NULL, payload TEXT NOT NULL, tz TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'done')),
        next_run_ms INTEGER, created_ms INTEGER NOT NULL, last_run_ms INTEGER,
        runs INTEGER NOT NULL DEFAULT 0, fail_count INTEGER NOT NULL DEFAULT 0,
        last_error TEXT NOT NULL DEFAULT '',
        last_digest TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (tenant, id)
    );
    CREATE INDEX jobs_due ON jobs (next_run_ms) WHERE state = 'active';
    CREATE INDEX jobs_chat ON jobs (tenant, channel, chat);
    CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        key TEXT NOT NULL, text TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'dead')),
        created_ms INTEGER NOT NULL, due_ms INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT NOT NULL DEFAULT '', done_ms INTEGER,
        UNIQUE (tenant, channel, chat, key)
    );
    CREATE INDEX outbox_due ON outbox (due_ms) WHERE state = 'queued';
    CREATE INDEX outbox_chat_queue ON outbox (tenant, channel, chat, id) WHERE state = 'queued';
    CREATE INDEX outbox_done ON outbox (done_ms) WHERE state != 'queued'
    """,
    # pairing (bridge/core/pairing.py): when a paired identity was last resolved
    """
    ALTER TABLE pairing_bindings ADD COLUMN last_seen REAL
    """,
    # usage and budgets (bridge/core/usage.py): tokens per tenant, model and UTC day
    """
    CREATE TABLE token_usage (
        tenant TEXT NOT NULL, model TEXT NOT NULL, day TEXT NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cached_tokens INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, day, model)
    );
    CREATE TABLE budget_notices (
        tenant TEXT NOT NULL, period TEXT NOT NULL, at_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, period)
    )
    """,
    # sessions (bridge/core/sessions.py): the summary of folded turns, tool-call steps
    """
    ALTER TABLE sessions ADD COLUMN summary TEXT NOT NULL DEFAULT '';
    ALTER TABLE sessions ADD COLUMN summary_turns INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE session_messages ADD COLUMN tool_calls TEXT NOT NULL DEFAULT '';
    ALTER TABLE session_messages ADD COLUMN tool_call_id TEXT NOT NULL DEFAULT ''
    """,
    # turn_log (bridge/skills/grades.py): skills the request was about but the reply did
    # not use, e.g. one graded down to 0 and no longer offered (the style learner counts them)
    """
    ALTER TABLE turn_log ADD COLUMN relevant TEXT NOT NULL DEFAULT ''
    """,
    # past conversations (bridge/core/conversations.py): the current one's id, archived ones
    """
    CREATE TABLE conversations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        started_at REAL NOT NULL, updated_at REAL NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0, title TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL DEFAULT '', archived_at REAL
    );
    CREATE INDEX conversations_key ON conversations (tenant, channel, chat, id);
    CREATE UNIQUE INDEX conversations_current ON conversations (tenant, channel, chat)
        WHERE archived_at IS NULL;
    CREATE INDEX conversations_archived ON conversations (archived_at);
    CREATE TABLE conversation_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation INTEGER NOT NULL,
        tenant TEXT NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL, at REAL NOT NULL
    );
    CREATE INDEX conversation_messages_of ON conversation_messages (conversation, id)
    """,
    # the outcome judge (bridge/grading/judge_store.py): follow-ups asked per tenant and UTC day
    """
    CREATE TABLE grade_judge_usage (
        tenant TEXT NOT NULL, day TEXT NOT NULL,
        asked INTEGER NOT NULL DEFAULT 0,
        ignored INTEGER NOT NULL DEFAULT 0,
        capped INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, day)
    )
    """,
    # tool drafts (bridge/personal_tools/drafts.py): every version forge_create wrote per
    # chat until saved or expired, and which version a consent prompt last showed
    """
    CREATE TABLE tool_drafts (
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        name TEXT NOT NULL, version INTEGER NOT NULL, sha256 TEXT NOT NULL,
        description TEXT NOT NULL, source TEXT NOT NULL, created_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, channel, chat, name, version)
    );
    CREATE TABLE tool_draft_shown (
        tenant TEXT NOT NULL, channel TEXT NOT NULL, chat TEXT NOT NULL,
        name TEXT NOT NULL, sha256 TEXT NOT NULL, shown_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, channel, chat, name)
    )
    """,
    # when each admitted identity last wrote (bridge/core/pairing.py `stamp`: roost access list)
    """
    CREATE TABLE identity_seen (
        channel TEXT NOT NULL, identity TEXT NOT NULL, tenant TEXT NOT NULL, at REAL NOT NULL,
        PRIMARY KEY (channel, identity)
    )
    """,
    # the durable inbox (bridge/channels/telegram/inbox.py): every update stored before it is
    # confirmed; outbox delivery per part and leases a restart releases (bridge/schedule/outbox*)
    """
    CREATE TABLE channel_inbox (
        source TEXT NOT NULL, update_id INTEGER NOT NULL,
        chat TEXT NOT NULL, msg TEXT NOT NULL, payload TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('new', 'working', 'done', 'dropped')),
        owner TEXT NOT NULL DEFAULT '',
        received_ms INTEGER NOT NULL, sent_ms INTEGER NOT NULL, done_ms INTEGER,
        PRIMARY KEY (source, update_id)
    );
    CREATE INDEX channel_inbox_open ON channel_inbox (source, update_id)
        WHERE state IN ('new', 'working');
    CREATE INDEX channel_inbox_done ON channel_inbox (done_ms) WHERE done_ms IS NOT NULL;
    CREATE TABLE outbox_parts (
        entry INTEGER NOT NULL, idx INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('sent', 'draft', 'unknown')),
        ref TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (entry, idx)
    );
    ALTER TABLE outbox ADD COLUMN leased INTEGER NOT NULL DEFAULT 0
    """,
    # the web page's history (bridge/core/shown.py, turn_failures.py, versions.py): what the
    # person typed and the files they sent, tool cards of archived answers, failed turns
    # (never in a prompt), and the other versions of an edited or regenerated turn
    """
    ALTER TABLE session_messages ADD COLUMN meta TEXT NOT NULL DEFAULT '';
    ALTER TABLE conversation_messages ADD COLUMN meta TEXT NOT NULL DEFAULT '';
    CREATE TABLE failed_turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation INTEGER NOT NULL, tenant TEXT NOT NULL, after INTEGER NOT NULL,
        role TEXT NOT NULL, text TEXT NOT NULL, meta TEXT NOT NULL DEFAULT '',
        at REAL NOT NULL
    );
    CREATE INDEX failed_turns_of ON failed_turns (conversation, after);
    CREATE TABLE turn_versions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation INTEGER NOT NULL, tenant TEXT NOT NULL,
        first_turn INTEGER NOT NULL, parent TEXT NOT NULL, made REAL NOT NULL,
        turns INTEGER NOT NULL, chars INTEGER NOT NULL, rows TEXT NOT NULL
    );
    CREATE INDEX turn_versions_of ON turn_versions (conversation, first_turn)
    """,
    # WhatsApp (bridge/channels/whatsapp/store.py): webhook message ids already taken
    # (hashed; Meta delivers again until it gets a 200), when each known person last
    # wrote (the 24-hour window) and what became of the messages sent (status callbacks)
    """
    CREATE TABLE whatsapp_seen (
        msg_key TEXT PRIMARY KEY, seen_ms INTEGER NOT NULL
    );
    CREATE INDEX whatsapp_seen_at ON whatsapp_seen (seen_ms);
    CREATE TABLE whatsapp_window (
        tenant TEXT NOT NULL, wa_id TEXT NOT NULL, last_in_ms INTEGER NOT NULL,
        PRIMARY KEY (wa_id)
    );
    CREATE TABLE whatsapp_sent (
        msg_key TEXT PRIMARY KEY, tenant TEXT NOT NULL, chat TEXT NOT NULL,
        entry INTEGER, via TEXT NOT NULL, status TEXT NOT NULL, error INTEGER,
        sent_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL
    );
    CREATE INDEX whatsapp_sent_chat ON whatsapp_sent (tenant, chat, sent_ms)
    """,
    # Matrix (bridge/channels/matrix/store.py): the sync token per bot account (nothing
    # answered twice after a restart), each person's direct room (where `send --to` goes),
    # the stranger invites already refused
    """
    CREATE TABLE matrix_sync (
        account TEXT PRIMARY KEY, next_batch TEXT NOT NULL, updated_ms INTEGER NOT NULL
    );
    CREATE TABLE matrix_direct (
        account TEXT NOT NULL, user_id TEXT NOT NULL, room_id TEXT NOT NULL,
        updated_ms INTEGER NOT NULL, PRIMARY KEY (account, user_id)
    )
    """,
    # the stranger tables of pairing (bridge/core/pairing.py) on the storage layer: bounded by
    # `seq` (the last written has the largest) instead of SQLite's rowid, which PostgreSQL lacks
    """
    ALTER TABLE refusal_notices ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE pairing_failures ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
    UPDATE refusal_notices SET seq = rowid;
    UPDATE pairing_failures SET seq = rowid;
    CREATE INDEX refusal_notices_seq ON refusal_notices (seq);
    CREATE INDEX pairing_failures_seq ON pairing_failures (seq)
    """,
    # the recall index (bridge/recall/index.py) on the storage layer: a tenant's messages,
    # conversation names, speakers and vectors; the terms live in the text index `recall`
    # (moved from the file per tenant, tenants/<tid>/recall/index.sqlite, by bridge.recall.legacy)
    """
    CREATE TABLE recall_conversations (
        tenant TEXT NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL,
        PRIMARY KEY (tenant, id), UNIQUE (tenant, name)
    );
    CREATE TABLE recall_messages (
        tenant TEXT NOT NULL, id INTEGER NOT NULL, conv INTEGER NOT NULL,
        msg_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT NOT NULL DEFAULT '',
        at_ms INTEGER NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL,
        PRIMARY KEY (tenant, id)
    );
    CREATE UNIQUE INDEX recall_messages_ident ON recall_messages (tenant, conv, msg_id);
    CREATE INDEX recall_messages_at ON recall_messages (tenant, at_ms);
    CREATE TABLE recall_speakers (
        tenant TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (tenant, name)
    );
    CREATE TABLE recall_vectors (
        tenant TEXT NOT NULL, id INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (tenant, id)
    );
    CREATE TABLE recall_vector_model (tenant TEXT PRIMARY KEY, name TEXT NOT NULL)
    """,
    # instances sharing one bot (bridge/channels/telegram/shared.py): how often an update was
    # taken (a poison update that kills its instance stops after a few), and each chat's open
    # updates oldest first for the holder of the chat's lease
    """
    ALTER TABLE channel_inbox ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX channel_inbox_chat ON channel_inbox (source, chat, update_id)
        WHERE state IN ('new', 'working')
    """,
    # the draft of a streamed answer an update's process showed (bridge/channels/telegram):
    # the message ids, so the process that answers the update after a kill edits them
    """
    ALTER TABLE channel_inbox ADD COLUMN shown TEXT NOT NULL DEFAULT ''
    """,
)

"""Senses: the files that come with a message, turned into model input, and files out.

`pipeline.SensePipeline` (the core's `Senses`, injected by the app) runs
before a turn's model call: each `Attachment` (already saved by its channel
in the tenant's inbox) is checked (inside the inbox, a regular file, under
`[limits] attachment_bytes`) and handed to the handler registered for its
kind (`photo`: `photos.py`, `document`: `documents.py` + `pdf.py`; one
`register(kind, handler)` line adds another); the parsing itself happens in
one confined decoder process per file (`decoders.py`). After the answer, files a
tool wrote into `outputs/` go out with the reply (`outputs.py`); the
inbox is swept after `[limits] attachment_keep_hours` (`cleanup.py`).
Voice notes: `voice.py` (transcription in), `speech.py` (spoken answers out).
Attachments are never logged; the audit chain gets kinds and sizes only.
"""

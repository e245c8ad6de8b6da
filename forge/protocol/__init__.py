"""The sandbox's wire formats, pure (no I/O, no fork), as in h11.

Three wires:

- runner <-> helper (the helper's stdin/stdout): length-prefixed frames of JSON
  (`calls`). The helper's first frame is a `Hello`; then every `Request` gets
  one `Reply` with the same id (replies may come in any order), from the
  helper or straight from the child (below).
- helper <-> child (`jobs`): the helper writes one marshalled `Job` into the
  child's memfd; the child writes one frame of JSON back, an `Outcome`.
- child -> runner (`answers`): most children send that `Outcome` straight to the
  runner instead, as one message with the call's id and token, and only a
  marker frame to the helper.

A frame (`frames`) is an 8-byte little-endian length, then that many bytes.
Every decoder checks types (`fields`) and refuses unknown error kinds with
`ProtocolError`, so a hostile child (or a corrupted pipe) can only produce a
refused frame, never an odd value further on. `Limits` are encoded in one shape
(`limits.encode_limits`) on both wires. Import from the submodules.
"""

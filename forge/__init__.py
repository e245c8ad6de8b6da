"""forge: lints, stores and runs the personal tools a model writes.

Public API (import from the submodules):

- `forge.lint.lint(source) -> list[Finding]`
- `forge.schema.tool_schema(source) -> dict` and `describe_tool(source) -> ToolInfo`
- `forge.runner.SandboxRunner` — the async sandbox (a helper per tenant; one child per call,
  forked from that helper's pristine zygote)
- `forge.library.SessionTools`, `forge.library.ToolLibrary` — session and saved `me.*` tools
- `forge.names` — name rules and the `me.<name>` <-> `me__<name>` wire mapping

forge never imports bridge.
"""

"""What the model is told when it writes a tool matches what forge lets a tool do.

`forge_create`'s description listed the modules a tool may import by hand and left out
`os`, `os.path`, `pathlib` and `net`, so a model never knew how to write a file; nor was
it told that a file written into `outputs/` is handed to the person (newcomer37 F7).
"""

from __future__ import annotations

from bridge.personal_tools.source import CREATE_SCHEMA, TOOL_IMPORTS
from forge.modules import ALLOWED


def test_the_import_list_is_forges_own() -> None:
    assert TOOL_IMPORTS.split(", ") == sorted(ALLOWED)


def test_the_model_is_told_where_files_come_in_and_go_out() -> None:
    told = CREATE_SCHEMA["properties"]["source"]["description"]  # type: ignore[index]
    assert TOOL_IMPORTS in told
    assert "outputs/ is handed to them with the answer" in told and "inbox/" in told

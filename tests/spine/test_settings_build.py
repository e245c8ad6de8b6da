"""Reading the configuration makes one pydantic settings validator, not two: `Settings` is
built only when something validates a `Settings` itself (`defer_build`); `load_settings`
validates its subclass `_Loaded` and hands back a `Settings` made without validation.
Asserted in a fresh process (this one may have validated a `Settings` already)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fresh import python_c

PROBE = """
import json
from bridge.core import config
loaded = config.load_settings()
built = {"Settings": config.Settings.__pydantic_complete__,
         "_Loaded": config._Loaded.__pydantic_complete__}
again = config.Settings(home=loaded.home, local_tenant="other")  # still validates on demand
print(json.dumps([built, type(loaded).__name__, again.local_tenant, str(again.home)]))
"""


def test_loading_builds_the_loaded_validator_only(home: Path) -> None:
    built, kind, tenant, where = json.loads(python_c(PROBE).stdout)
    assert built == {"Settings": False, "_Loaded": True}
    assert kind == "Settings"
    assert (tenant, where) == ("other", str(home))

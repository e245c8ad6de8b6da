import json
import os
from pathlib import Path


def run(folder: str = "data") -> dict:
    """Merge every JSON file in a folder into one dict and save it as merged.json."""
    merged = {}
    for path in sorted(Path(folder).glob("*.json")):
        if os.path.isfile(path) and path.name != "merged.json":
            with open(path) as f:
                merged.update(json.load(f))
    out = os.path.join(folder, "merged.json")
    with open(out, "w") as f:
        json.dump(merged, f, sort_keys=True)
    return merged

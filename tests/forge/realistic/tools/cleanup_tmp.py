import os
from pathlib import Path


def run(folder: str = "scratch") -> dict:
    """Delete the .tmp files in a folder; return what was removed and what is left."""
    removed = []
    for item in Path(folder).iterdir():
        if item.is_file() and item.suffix == ".tmp":
            os.remove(item)
            removed.append(item.name)
    left = sorted(p.name for p in Path(folder).iterdir())
    return {"removed": sorted(removed), "left": left}

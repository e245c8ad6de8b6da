from pathlib import Path


def run(name: str) -> dict:
    """Copy a file to a .bak file next to it."""
    src = Path(name)
    backup = src.with_suffix(src.suffix + ".bak")
    backup.write_bytes(src.read_bytes())
    return {"backup": str(backup), "bytes": backup.stat().st_size, "parent": str(backup.parent)}

import os


def run(top: str = ".") -> dict:
    """Total bytes and file count under each top-level folder."""
    usage = {}
    for root, dirs, files in os.walk(top):
        dirs.sort()
        for fname in files:
            full = os.path.join(root, fname)
            rel = os.path.relpath(full, top)
            bucket = rel.split(os.sep)[0] if os.sep in rel else "."
            entry = usage.setdefault(bucket, {"files": 0, "bytes": 0})
            entry["files"] += 1
            entry["bytes"] += os.path.getsize(full)
    return usage

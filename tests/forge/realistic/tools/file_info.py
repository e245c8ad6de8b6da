from datetime import datetime
from pathlib import Path


def run(name: str) -> dict:
    """Size and last-modified date of a file."""
    p = Path(name)
    if not p.exists():
        return {"error": f"{name} not found"}
    st = p.stat()
    return {
        "name": p.name,
        "is_file": p.is_file(),
        "size": st.st_size,
        "modified": datetime.fromtimestamp(st.st_mtime).strftime("%Y-%m-%d"),
    }

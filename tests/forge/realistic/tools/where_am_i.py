import os
from pathlib import Path


def run(name: str) -> dict:
    """Check that absolute paths of a workspace file point to the same file."""
    cwd = os.getcwd()
    absolute = os.path.abspath(name)
    resolved = Path(name).resolve()
    with open(absolute, "w") as f:
        f.write("hello")
    return {
        "inside": absolute.startswith(cwd + os.sep),
        "same": str(resolved) == absolute,
        "exists": os.path.exists(absolute) and resolved.exists(),
        "text": resolved.read_text(),
        "is_abs": os.path.isabs(absolute) and resolved.is_absolute(),
    }

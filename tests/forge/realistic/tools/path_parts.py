import os


def run(path: str) -> dict:
    """Split a path into its parts."""
    head, tail = os.path.split(path)
    stem, ext = os.path.splitext(tail)
    return {
        "dir": os.path.dirname(path),
        "base": os.path.basename(path),
        "head": head,
        "stem": stem,
        "ext": ext,
        "norm": os.path.normpath(path),
        "rel": os.path.relpath(os.path.join("a", "b", "c.txt"), "a"),
        "joined": os.path.join("x", "y", "z.csv"),
    }

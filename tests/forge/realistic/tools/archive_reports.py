import os


def run(prefix: str) -> list:
    """Move reports into archive/ with a prefix on their names."""
    os.makedirs("archive", exist_ok=True)
    moved = []
    for name in sorted(os.listdir("reports")):
        if name.endswith(".txt"):
            src = os.path.join("reports", name)
            dst = os.path.join("archive", f"{prefix}_{name}")
            os.rename(src, dst)
            moved.append(dst)
    return moved

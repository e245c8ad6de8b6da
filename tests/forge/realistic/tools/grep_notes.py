from pathlib import Path


def run(needle: str) -> list:
    """Find lines containing a word in every .txt file below the workspace."""
    hits = []
    for path in sorted(Path(".").rglob("*.txt")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if needle.lower() in line.lower():
                hits.append(f"{path}:{number}: {line.strip()}")
    return hits

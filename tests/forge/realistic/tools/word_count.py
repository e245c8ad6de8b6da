import os


def run(folder: str = "texts") -> dict:
    """Count the words in each text file of a folder."""
    counts = {}
    for filename in os.listdir(folder):
        stem, ext = os.path.splitext(filename)
        if ext.lower() != ".txt":
            continue
        with open(os.path.join(folder, filename), encoding="utf-8") as f:
            counts[stem] = len(f.read().split())
    return dict(sorted(counts.items()))

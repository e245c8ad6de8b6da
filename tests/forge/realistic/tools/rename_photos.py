import os
from pathlib import Path


def run(folder: str = "photos") -> list:
    """Rename photos to lowercase names with a running number."""
    new_names = []
    files = sorted(f for f in os.listdir(folder) if f.lower().endswith((".jpg", ".jpeg", ".png")))
    for i, name in enumerate(files, start=1):
        ext = Path(name).suffix.lower()
        new = f"photo_{i:03d}{ext}"
        Path(folder, name).rename(Path(folder) / new)
        new_names.append(new)
    return sorted(os.listdir(folder))

from pathlib import Path


def run(folder: str = "notes") -> list:
    """List the title (first line) of every Markdown note in a folder."""
    notes_dir = Path(folder)
    if not notes_dir.exists():
        return []
    titles = []
    for note in sorted(notes_dir.glob("*.md")):
        text = note.read_text(encoding="utf-8")
        first = text.splitlines()[0] if text else ""
        titles.append({"file": note.name, "title": first.lstrip("# ").strip()})
    return titles

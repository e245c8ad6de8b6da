from datetime import datetime
from pathlib import Path


def run(text: str, when: str) -> dict:
    """Append a timestamped line to the journal file of that day."""
    stamp = datetime.fromisoformat(when)
    journal_dir = Path("journal") / str(stamp.year)
    journal_dir.mkdir(parents=True, exist_ok=True)
    entry_file = journal_dir / f"{stamp:%Y-%m-%d}.md"
    with open(entry_file, "a", encoding="utf-8") as f:
        f.write(f"- {stamp:%H:%M} {text}\n")
    lines = entry_file.read_text(encoding="utf-8").splitlines()
    return {"file": str(entry_file), "entries": len(lines)}

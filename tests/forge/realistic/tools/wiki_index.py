from pathlib import Path


def run() -> str:
    """Write wiki/INDEX.md listing every page grouped by folder."""
    wiki = Path("wiki")
    lines = ["# Index"]
    for page in sorted(wiki.glob("**/*.md")):
        if page.name == "INDEX.md":
            continue
        lines.append(f"- {page.parent.name}/{page.stem}")
    index = wiki / "INDEX.md"
    index.write_text("\n".join(lines) + "\n")
    return index.read_text()

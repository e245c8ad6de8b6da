from pathlib import Path


def run(name: str, description: str) -> list:
    """Create a project folder with a README and list all projects."""
    base = Path("projects")
    project = base / name
    project.mkdir(parents=True, exist_ok=True)
    (project / "README.md").write_text(f"# {name}\n\n{description}\n")
    return sorted(p.name for p in base.iterdir() if p.is_dir())

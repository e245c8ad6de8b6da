import pathlib


def run(item: str, remove: bool = False) -> list:
    """Add or remove an item file in inventory/ and list what is there."""
    folder = pathlib.Path("inventory")
    folder.mkdir(exist_ok=True)
    target = folder / (item + ".txt")
    if remove:
        target.unlink(missing_ok=True)
    else:
        target.touch()
    return sorted(p.stem for p in folder.iterdir())

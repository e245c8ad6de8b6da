import os


def run(line: str, max_bytes: int = 50) -> dict:
    """Append to app.log, rotating it to app.log.1 when it grows too big."""
    log = "app.log"
    rotated = False
    if os.path.exists(log) and os.path.getsize(log) > max_bytes:
        os.replace(log, log + ".1")
        rotated = True
    with open(log, "a") as f:
        f.write(line + "\n")
    return {"rotated": rotated, "size": os.path.getsize(log), "old": os.path.exists(log + ".1")}

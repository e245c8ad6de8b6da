import json
import os


def run(key: str, value: str) -> dict:
    """Set one key in config/settings.json and return the new settings."""
    path = os.path.join("config", "settings.json")
    settings = json.load(open(path)) if os.path.exists(path) else {}  # noqa: SIM115
    settings[key] = value
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(settings, f, indent=2, sort_keys=True)
    return settings

import json
from pathlib import Path

TODO_FILE = Path("todo.json")


def run(task: str) -> dict:
    """Add a task to the to-do list and return the open tasks."""
    todos = json.loads(TODO_FILE.read_text()) if TODO_FILE.exists() else []
    todos.append({"task": task, "done": False})
    TODO_FILE.write_text(json.dumps(todos, indent=2))
    return {"open": [t["task"] for t in todos if not t["done"]], "count": len(todos)}

import csv
import os
from datetime import date, timedelta

LOG = "habits.csv"
FIELDS = ["day", "habit"]


def run(habit: str, day: str) -> dict:
    """Record that a habit was done on a day and return the current streak."""
    write_header = not os.path.isfile(LOG)
    with open(LOG, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if write_header:
            writer.writeheader()
        writer.writerow({"day": day, "habit": habit})
    with open(LOG, newline="") as f:
        days = {row["day"] for row in csv.DictReader(f) if row["habit"] == habit}
    streak = 0
    current = date.fromisoformat(day)
    while current.isoformat() in days:
        streak += 1
        current -= timedelta(days=1)
    return {"habit": habit, "streak": streak}

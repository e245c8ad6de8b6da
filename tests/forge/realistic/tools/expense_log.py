import csv
import os
from datetime import datetime


def run(amount: float, category: str, day: str) -> dict:
    """Log an expense to a CSV file and return the running total for its category."""
    log_dir = os.path.join("data", "finance")
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, "expenses.csv")
    new_file = not os.path.exists(log_path)
    with open(log_path, "a", newline="") as f:
        writer = csv.writer(f)
        if new_file:
            writer.writerow(["date", "category", "amount"])
        writer.writerow([datetime.strptime(day, "%Y-%m-%d").date().isoformat(), category, amount])
    total = 0.0
    with open(log_path, newline="") as f:
        for row in csv.DictReader(f):
            if row["category"] == category:
                total += float(row["amount"])
    return {"category": category, "total": round(total, 2)}

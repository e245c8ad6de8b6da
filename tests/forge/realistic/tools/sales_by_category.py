import csv
from collections import defaultdict
from pathlib import Path


def run(filename: str = "sales.csv") -> dict:
    """Sum sales per category from a CSV file."""
    totals = defaultdict(float)
    with Path(filename).open(newline="") as f:
        for row in csv.DictReader(f):
            totals[row["category"]] += float(row["amount"])
    return {k: round(v, 2) for k, v in sorted(totals.items())}

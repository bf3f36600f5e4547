"""The rows of a sweep's CSV exactly as written (dse.report.read_rows keeps the feasible ones only)."""
import csv


def read(path) -> list:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))

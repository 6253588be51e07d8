# SPDX-License-Identifier: MIT
"""Reads a system_resource_data file as CSV (quoted fields may hold commas,
quotes and line breaks, as a process's argv may) and prints two numbers:
the rows that are not whole (not six fields, an empty command, or a
non-numeric time/CPU/memory column), and the rows whose command equals
WANT exactly.   python3 resource_csv_check.py FILE [WANT]"""
import csv
import sys


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def main():
    path = sys.argv[1]
    want = sys.argv[2] if len(sys.argv) > 2 else None
    broken = matching = 0
    with open(path, newline="") as data:
        for row in csv.reader(data):
            numbers = row[:1] + row[2:]
            if len(row) != 6 or row[1] == "" or not all(map(is_number, numbers)):
                broken += 1
            elif row[1] == want:
                matching += 1
    print(broken, matching)


main()

"""Mutants: deliberate small mistakes in the code, to show which ones the tests catch.

`python -m shared.tools.mutants` makes them (mutate.py), runs a test selection on each in
a scratch copy of the repository (run.py) and writes the tables (tables.py); README.md
says how.
"""

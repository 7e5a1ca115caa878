"""Exercises: rebuild the crawlers one idea at a time (`python -m shared.tools.exercises`).

Each exercise (a folder here, described in README.md) empties some of the
repository's own functions in a copy of the code, a *workspace*, and judges the
student's rewrite with tests grouped by numbered task.  The modules:

- catalog.py: the exercises and their exercise.toml;
- bodies.py: a function's body found with `ast` line numbers, and swapped;
- workspace.py: `start` and `solve`, the marker file, the hint counts;
- checking.py: `check`, a pytest run in the workspace judged task by task;
- cli.py: the verbs.
"""

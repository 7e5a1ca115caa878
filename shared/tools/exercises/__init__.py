"""Exercises: rebuild the crawlers one idea at a time (`python -m shared.tools.exercises`).

Each exercise (a folder here, described in README.md) empties some of the
repository's own functions in a copy of the code, a *workspace*, and judges the
student's rewrite with tests grouped by numbered task.  The modules:

- catalog.py: the exercises and their exercise.toml;
- bodies.py: a function's body found with `ast` line numbers, and swapped;
- workspace.py: `start` and `solve`, the marker file, the hint counts;
- manifest.py: the files that judge an exercise, their digests, what was changed;
- checking.py: `check`, a pytest run on a copy of the workspace judged task by task;
- reports.py: the verdict with its points, as text, JSON, JUnit XML, Exercism, Gradescope;
- handout.py: `handout`, a workspace made a repository for students, with its workflow;
- grading.py: `grade`, many students' folders judged with the repository's tests;
- cli.py: the verbs.
"""

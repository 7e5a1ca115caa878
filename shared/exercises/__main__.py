"""`python -m shared.exercises VERB ...`: see shared/exercises/cli.py."""

from shared.exercises.cli import main

raise SystemExit(main())

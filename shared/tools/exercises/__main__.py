"""`python -m shared.tools.exercises VERB ...`: see shared/tools/exercises/cli.py."""

from shared.tools.exercises.cli import main

raise SystemExit(main())

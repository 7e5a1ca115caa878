"""``python -m shared.testsite``: serve a test site for a class (see cli.py)."""

from shared.testsite.cli import main

if __name__ == "__main__":
    main()

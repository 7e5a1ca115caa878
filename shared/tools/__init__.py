"""The instruments: tools that run, record, compare, check or draw the three stages.

Nothing here is part of a crawler.  Every module in this package may import a stage;
nothing outside it imports this package (tests/test_layout.py holds that direction).
README.md beside this file lists each tool and the nox session that runs it.
"""

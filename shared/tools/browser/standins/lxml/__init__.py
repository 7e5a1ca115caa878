"""A stand-in for lxml, whose compiled parser the browser build does not carry (etree.py)."""

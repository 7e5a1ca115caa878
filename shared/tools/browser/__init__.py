"""The exercises in a browser tab, with Python from Pyodide: build.py makes the site, tab.py
answers its worker (see README.md)."""

"""A stand-in for lxml.etree in the browser build: shared/links.py imports it to read pages.

No exercise that runs in a tab parses a page, so the stages import as the repository has
them, and making a parser fails with a sentence.
"""


class HTMLParser:
    """As lxml.etree.HTMLParser: making one fails, with the reason."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("reading pages needs lxml, which the browser build does not carry")

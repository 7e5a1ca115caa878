"""Code shared by the three crawlers: everything that does not depend on the concurrency style."""

__version__ = "0.1.0"

#: Sent with every request by every stage, so a site's logs name the crawler.
USER_AGENT = f"crawler500/{__version__}"

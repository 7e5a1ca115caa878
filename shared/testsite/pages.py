"""What one URL of the test site is, and the building blocks its pages are made of.

Every URL the site answers is defined by a :class:`Resource`: how it answers (status,
headers, body, or a misbehaviour named by ``kind``) and which links a correct parser
finds in its body.  The server renders a Resource; the oracle reads the same Resource
to predict the crawler's record, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The Content-Type of the site's own HTML pages.
HTML = "text/html; charset=utf-8"

#: Every path starting with this appears only where a crawler must not look for links
#: (comments, scripts, redirect and error bodies, non-HTML bodies, foreign hosts), so a
#: correct crawler never requests one.
NEVER = "/traps/never/"

# Filler vocabulary: plain words only, so filler can never contain markup or a link.
_WORD_TEXT = (
    "crawler fetch queue seen redirect link page host port socket select callback future "
    "task coroutine generator yield loop event buffer response request header body "
    "status charset parser anchor scope timeout retry worker concurrency latency "
    "throughput thread lock queue join cancel schedule wakeup readable writable "
    "nonblocking connect close stream chunk length encoding decode token frame stack "
    "state machine continuation resume suspend await async python chapter architecture "
    "design simple small clear"
)
WORDS = tuple(_WORD_TEXT.split())


@dataclass(frozen=True)
class Resource:
    """The definition of one URL: how it answers and which links its body holds.

    ``links`` are canonical in-site paths (with query), i.e. exactly what a correct
    parser finds after joining and normalising, restricted to this host.  ``target`` is a
    redirect's canonical target: an in-site path, or an absolute URL on another host.
    Bodies are templates in which ``{origin}``, ``{netloc}`` and ``{port}`` are replaced
    by the served address, and ``{SCHEME}`` by its scheme in upper case.  ``kind`` is
    "static" for an ordinary answer, "page" for a generated page (number ``page``),
    or the name of a way to misbehave that the server knows (see server.py's answer).
    ``drops`` is how many requests of it are dropped before it answers (the flaky page).
    """

    kind: str = "static"
    status: int = 200
    content_type: str | None = HTML
    body: bytes = b""
    links: tuple[str, ...] = ()
    encoding: str | None = "utf-8"
    location: str | None = None
    target: str | None = None
    drops: int = 0
    page: int = -1


def leaf(title: str) -> Resource:
    """A small page whose only link goes back to the trap hub."""
    body = (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n"
        f'<h1>{title}</h1>\n<p><a href="/traps/">Back to the traps</a></p>\n</body></html>\n'
    )
    return Resource(body=body.encode(), links=("/traps/",))


def html_page(title: str, inner: str, links: Sequence[str], content_type: str = HTML) -> Resource:
    """A UTF-8 HTML trap page whose body holds exactly the given canonical links."""
    body = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
        f"<body>\n<h1>{title}</h1>\n{inner}\n</body></html>\n"
    )
    return Resource(body=body.encode(), links=tuple(links), content_type=content_type)


def redirect(status: int, location: str, target: str, content_type: str = HTML) -> Resource:
    """A redirect; its body has a link that must not be followed (only 200s are parsed)."""
    body = f'<html><body><a href="{NEVER}redirect-body">moved</a></body></html>\n'.encode()
    if content_type.startswith("text/plain"):
        body = f"Moved to {location}\n".encode()
    return Resource(
        status=status, location=location, target=target, body=body, content_type=content_type
    )


def inert(content_type: str, body: bytes) -> Resource:
    """A 200 response of a type that is fetched but never parsed, with href bytes inside."""
    return Resource(content_type=content_type, body=body, encoding=None)


#: What every path the site does not define answers.
NOT_FOUND = Resource(
    status=404,
    body=f'<html><body>Not found. <a href="{NEVER}404">not parsed</a></body></html>\n'.encode(),
)

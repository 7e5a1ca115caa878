"""Turn recorded crawls into one self-contained HTML page: data, script and style inline.

The page loads nothing (a Content-Security-Policy forbids it), so it opens from disk
and works offline.  A crawl of the default site takes thousands of steps, so the data
is kept compact: texts are stored once in a table and referred to by number, and the
steps are columns of numbers rather than a list of objects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from shared.tools import language
from shared.tools.show.record import KINDS, ROOT, Recorder

#: Stage packages and how the page names them.
TITLES = {
    "stage1_callbacks": "stage 1: callbacks",
    "stage2_generators": "stage 2: generators",
    "stage3_asyncio": "stage 3: asyncio",
}


class Strings:
    """A table of texts, each stored once; a text is referred to by its index."""

    def __init__(self) -> None:
        """Start with an empty table."""
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int:
        """The index of ``text`` (-1 for None), added on first use."""
        if text is None:
            return -1
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.table)
            self.table.append(text)
        return index


@dataclass
class Wait:
    """An actor waiting: from the step that paused it to the step that resumed it."""

    actor: int
    begin: int  # step index
    end: int  # step index
    kind: int  # index into KINDS
    label: str


def waits(recorder: Recorder) -> list[Wait]:
    """Pair each actor's steps: between two of them, it waited for what the second says."""
    found = []
    last: dict[int, int] = {}  # actor -> index of its latest step
    for index, step in enumerate(recorder.steps):
        before = last.get(step.actor)
        if before is not None:
            kind, label = step.waited or (0, "a future (never seen waiting)")
            found.append(Wait(step.actor, before, index, kind, label))
        last[step.actor] = index
    return found


def why(recorder: Recorder, index: int) -> tuple[str, str, str]:
    """Say why a step ran: what its actor waited for is done, or it is a first step.

    The sentence is the page's to write, in the reader's language (texts.json): this gives
    its key in the table and what fills it in, the step's detail and what it waited for.
    """
    step = recorder.steps[index]
    if recorder.package == "stage1_callbacks":
        return "why.callback", step.detail, ""
    if step.first:
        return "why.first", "", ""
    waited = step.waited[1] if step.waited else "a future"
    if recorder.package == "stage2_generators":
        return "why.resumed-with", step.detail, waited
    return "why.resumed", "", waited


def rows(recorder: Recorder) -> tuple[list[str], list[int]]:
    """Lay the actors out in rows: one per actor, but actors that never overlap in time
    and share a name (the Fetchers of stage 1, stage 2's ``request`` tasks) share a row,
    so a crawl of hundreds of URLs takes a few rows, not hundreds.

    Return the rows' labels and each actor's row (-1 for an actor that never ran).
    """
    spans: dict[int, list[int]] = {}
    for index, step in enumerate(recorder.steps):
        spans.setdefault(step.actor, [index, index])[1] = index
    labels: list[str] = []
    free_after: list[int] = []  # per row: the last step of the actor in it
    row_of = [-1] * len(recorder.actors)
    for actor, (first, last) in sorted(spans.items(), key=lambda item: item[1][0]):
        name = recorder.actors[actor].name
        row = next(
            (r for r, label in enumerate(labels) if label == name and free_after[r] < first),
            None,
        )
        if row is None:
            row = len(labels)
            labels.append(name)
            free_after.append(last)
        free_after[row] = last
        row_of[actor] = row
    return labels, row_of


def crawl_data(recorder: Recorder, note: str = "") -> dict[str, Any]:
    """The page's data for one recorded crawl, compact (see the module's docstring)."""
    text = Strings()
    files: list[str] = []  # paths of the embedded sources, in the order frames use them

    def file_index(path: str) -> int:
        if path not in files:
            if not (ROOT / path).is_file() or not path.startswith(recorder.package + "/"):
                return -1  # only the stage's own files are shown
            files.append(path)
        return files.index(path)

    chains: list[list[list[int]]] = []
    chain_ids: dict[tuple[Any, ...], int] = {}
    # The sockets and the waits, stored once for all the steps that see the same; the
    # counts (ready, timers, the next one due) change at nearly every step: columns.
    states: list[list[list[list[Any]]]] = []  # per state: its sockets, its waits
    state_ids: dict[tuple[Any, ...], int] = {}
    # "why" is a key of the page's table of texts, filled in with "wd" (detail), "ww" (waited).
    # "tr": the tree of tasks (stages 2 and 3), its lines stored once each.
    trees: list[list[int]] = []
    tree_ids: dict[tuple[str, ...], int] = {}
    names = ["t", "a", "what", "url", "why", "wd", "ww", "fr", "st", "tr"]
    names += ["ready", "timers", "next"]
    columns: dict[str, list[int]] = {name: [] for name in names}
    for index, step in enumerate(recorder.steps):
        chain = chain_ids.get(step.frames)
        if chain is None:
            chain = chain_ids[step.frames] = len(chains)
            chains.append(
                [[text(name), file_index(path), line, end] for name, path, line, end in step.frames]
            )
        state = recorder.states[step.state]
        seen = state_ids.get((state.sockets, state.waits))
        if seen is None:
            seen = state_ids[(state.sockets, state.waits)] = len(states)
            states.append(
                [
                    [[fd, mode, actor, text(name)] for fd, mode, actor, name in state.sockets],
                    [[actor, kind, text(label)] for actor, kind, label in state.waits],
                ]
            )
        columns["t"].append(round(step.t * 1e6))  # microseconds: integers are short in JSON
        columns["a"].append(step.actor)
        columns["what"].append(text(step.what))
        columns["url"].append(text(step.url))
        for name, value in zip(("why", "wd", "ww"), why(recorder, index), strict=True):
            columns[name].append(text(value))
        columns["fr"].append(chain)
        columns["st"].append(seen)
        tree = tree_ids.get(step.tree)
        if tree is None:
            tree = tree_ids[step.tree] = len(trees)
            trees.append([text(line) for line in step.tree])
        columns["tr"].append(tree)
        columns["ready"].append(state.ready)
        columns["timers"].append(state.timers)
        columns["next"].append(state.next_timer_ms)
    labels, row_of = rows(recorder)
    flat_waits: list[int] = []
    for wait in waits(recorder):
        flat_waits += [wait.actor, wait.begin, wait.end, wait.kind, text(wait.label)]
    actors = [[text(a.name), text(a.detail), row_of[i]] for i, a in enumerate(recorder.actors)]
    return {
        "stage": recorder.package,
        "title": TITLES.get(recorder.package, recorder.package),
        "note": note,
        "steps": columns,
        "chains": chains,
        "states": states,
        "trees": trees,
        "waits": flat_waits,
        "actors": actors,
        "rows": [text(label) for label in labels],
        "files": [[path, (ROOT / path).read_text(encoding="utf-8")] for path in files],
        "strings": text.table,
    }


def interesting_step(crawl: dict[str, Any]) -> int:
    """A step worth a picture: the first at which the most actors wait for sockets, and
    among those, one deep in a chain of frames."""
    steps, states, chains = crawl["steps"], crawl["states"], crawl["chains"]
    best, chosen = (-1, -1), 0
    for index, state in enumerate(steps["st"]):
        on_sockets = sum(1 for _, kind, _ in states[state][1] if kind in (1, 2))
        score = (on_sockets, len(chains[steps["fr"][index]]))
        if score > best:
            best, chosen = score, index
    return chosen


#: The languages the page speaks (shared/tools/language.py): each has a table of every text
#: the page shows a reader.
LANGUAGES = language.LANGUAGES


def texts() -> dict[str, dict[str, str]]:
    """The page's texts: for each language, one table from key to text (texts.json)."""
    table = resources.files("shared.tools.show") / "texts.json"
    loaded: dict[str, dict[str, str]] = json.loads(table.read_text(encoding="utf-8"))
    return loaded


def render(
    crawls: list[dict[str, Any]],
    heading: dict[str, Any],
    start: int = 0,
    lang: str | None = None,
) -> str:
    """The whole page, as one string of HTML; it opens at position ``start`` (from 0) of
    all the crawls' steps in time order, unless its address names a step.

    ``heading`` holds the facts the page's heading tells (see command.py); ``lang`` is the
    language the page opens in, unless its address names one: without it, the browser's.
    """
    assets = resources.files("shared.tools.show")
    template = (assets / "page.html").read_text(encoding="utf-8")
    data = {
        "kinds": KINDS,
        "heading": heading,
        "crawls": crawls,
        "start": start,
        "lang": lang,
        "texts": texts(),
    }
    # "<" escaped everywhere, so that no text in the data can end the <script> element.
    payload = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    return (
        template.replace("{{style}}", (assets / "page.css").read_text(encoding="utf-8"))
        .replace("{{script}}", (assets / "page.js").read_text(encoding="utf-8"))
        .replace("{{data}}", payload)
    )


def write(
    path: Path,
    crawls: list[dict[str, Any]],
    heading: dict[str, Any],
    start: int = 0,
    lang: str | None = None,
) -> int:
    """Write the page to ``path`` (its folder is made); return its size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page = render(crawls, heading, start, lang).encode("utf-8")
    path.write_bytes(page)
    return len(page)

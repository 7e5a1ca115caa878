"""The benchmark's figures as pictures: memory, the race of slow fetches, the latency-bound crawl.

All are drawn from a results file written by ``nox -s bench`` (the README's is
shared/tools/bench/results.json).  The first two come from its S3 scenario: thousands of
fetches whose responses each take seconds (2 s in the full benchmark), all in flight at once.

* :func:`memory_svg`: what one fetch in flight costs in memory, per crawler, at the
  first size measured (5,000 at once, the median of --runs runs, its range a whisker).
* :func:`race_svg`: how long each crawler took to finish, at the largest size the
  machine allowed (10,000 at once), against the least possible: one response's delay
  plus the time the site takes to accept that many connections (its S0 rate).
* :func:`latency_svg`: S2, a crawl of a site that answers every page after a latency,
  against its level bound: each BFS level's rounds of --max-tasks fetches, one latency
  a round, which no crawler can beat whatever its speed.

They need no crawl: the same results file always gives the same pictures.
"""

from __future__ import annotations

import statistics
from typing import Any

from shared.tools.bench.measure import race_floor
from shared.tools.bench.svg import COLOURS, Bar, render_bars

#: The crawlers in the pictures' order: the chapter's "traditional approach" first, then
#: the stages; each with the words a bar is labelled with, and its colour.
KINDS = {
    "threaded": ("threads", "baseline: shared/tools/bench/threaded.py", COLOURS[3]),
    "stage1_callbacks": ("callbacks", "stage 1: stage1_callbacks", COLOURS[0]),
    "stage2_generators": ("generator coroutines", "stage 2: stage2_generators", COLOURS[1]),
    "stage3_asyncio": ("asyncio + aiohttp", "stage 3: stage3_asyncio", COLOURS[2]),
}


def s3_sizes(doc: dict[str, Any]) -> list[str]:
    """The S3 sizes that have results (not skipped), in the order they were run."""
    s3 = doc.get("S3", {})
    return [size for size, part in s3.items() if isinstance(part, dict) and "results" in part]


def ordered(results: dict[str, Any]) -> list[str]:
    """The crawler names of a results part, in the pictures' order; unknown names last."""
    return [name for name in KINDS if name in results] + [n for n in results if n not in KINDS]


def kib_per_fetch(doc: dict[str, Any]) -> dict[str, float]:
    """Each crawler's median KiB per fetch in flight, at the first S3 size; {} without S3."""
    sizes = s3_sizes(doc)
    if not sizes:
        return {}
    results = doc["S3"][sizes[0]]["results"]
    return {name: float(entry["summary"]["median"]) for name, entry in results.items()}


def source_words(doc: dict[str, Any], source: str) -> str:
    """Where the figures come from: the results file, and the machine that measured them."""
    m = doc.get("machine", {})
    return (
        f"Figures: {source} (nox -s bench), measured on {m.get('cpu', '?')}, "
        f"{m.get('cores', '?')} cores, Python {m.get('python', '?')}, {m.get('date', '?')}."
    )


def bar_for(
    name: str,
    value: float,
    text: str,
    note: str,
    low: float | None = None,
    high: float | None = None,
) -> Bar:
    """A crawler's bar, labelled and coloured as :data:`KINDS` says."""
    label, sublabel, colour = KINDS.get(name, (name, "", COLOURS[4]))
    return Bar(name, label, sublabel, value, text, note, colour, low, high)


def memory_svg(doc: dict[str, Any], source: str = "shared/tools/bench/results.json") -> str:
    """The picture of memory per fetch in flight, one bar per crawler."""
    sizes = s3_sizes(doc)
    if not sizes:
        raise ValueError("the results have no S3 figures: nothing to draw")
    size, part = sizes[0], doc["S3"][sizes[0]]
    results = part["results"]
    runs = len(next(iter(results.values()))["kib_per_fetch"])
    also = sizes[-1] if len(sizes) > 1 else None
    bars = []
    for name in ordered(results):
        stats = results[name]["summary"]
        note = ""
        if also is not None:
            at_most = doc["S3"][also]["results"].get(name, {}).get("summary", {}).get("median")
            note = "" if at_most is None else f"{at_most:.1f} with {int(also):,} at once"
        bars.append(
            bar_for(
                name,
                stats["median"],
                f"{stats['median']:.1f} KiB",
                note,
                low=stats["min"],
                high=stats["max"],
            )
        )
    figure = {bar.key: bar.value for bar in bars}
    delay, calm = doc["S3"].get("delay", 0), doc["S3"].get("baseline_tasks", 10)
    subtitle = (
        f"{int(size):,} fetches of {delay:g} s at once: peak RSS less that of {calm} at a time, "
        "per fetch; " + ("one run" if runs == 1 else f"median of {runs} runs, whisker min-max")
    )
    caption = ""
    threads, callbacks = figure.get("threaded"), figure.get("stage1_callbacks")
    generators, aio = figure.get("stage2_generators"), figure.get("stage3_asyncio")
    if threads and callbacks and generators and aio:
        caption = (
            f"Read: waiting on a thread, a fetch costs {threads / callbacks:.0f}x the memory of "
            f"a callback's, {threads / generators:.0f}x a generator coroutine's, "
            f"{threads / aio:.1f}x aiohttp's: the chapter's case for async, measured."
        )
    return render_bars(
        bars,
        title="Memory per fetch in flight",
        subtitle=subtitle,
        axis="KiB of memory per fetch in flight (resident set size)",
        caption=caption,
        source=source_words(doc, source),
    )


def race_svg(doc: dict[str, Any], source: str = "shared/tools/bench/results.json") -> str:
    """The picture of the race: seconds to finish the most slow fetches measured."""
    sizes = s3_sizes(doc)
    if not sizes:
        raise ValueError("the results have no S3 figures: nothing to draw")
    size, part = sizes[-1], doc["S3"][sizes[-1]]
    results = part["results"]
    bars, missing = [], []
    for name in ordered(results):
        entry = results[name]
        if not max(entry["seconds"]):  # it died before its crawl began (killed): no time to draw
            missing.append(name)
            continue
        seconds = statistics.median(entry["seconds"])
        lost = max(entry["lost"])
        answered = "all answered" if all(entry["complete"]) else f"{lost:,} lost"
        peak_mib = statistics.median(entry["rss_kib"]) / 1024
        bars.append(
            bar_for(name, seconds, f"{seconds:.1f} s", f"{answered}; peak RSS {peak_mib:.0f} MiB")
        )
    delay = float(doc["S3"].get("delay", 0))
    runs = len(next(iter(results.values()))["seconds"])
    subtitle = (
        f"{int(size):,} pages that each answer after {delay:g} s, all fetched at once "
        f"(--max-tasks {int(size):,}); " + ("one run" if runs == 1 else f"median of {runs} runs")
    )
    # The floor: the delay, plus the time the site needs to accept that many connections
    # (its S0 rate with a new connection per request); the delay alone without S0 figures.
    accepts = doc.get("S0", {}).get("close", {}).get("median")
    floor = race_floor(delay, int(size), accepts) if accepts else delay
    # The line's own label is short, to fit beside it; the caption says what makes the floor.
    floor_words = (
        f"The dashed line, {floor:.1f} s, is the floor: each response takes {delay:g} s, and "
        f"the site accepts {accepts:,.0f} new connections a second (S0), so no crawler can "
        "finish sooner."
        if accepts
        else f"The dashed line is the floor: each response takes {delay:g} s."
    )
    fastest, slowest = min(bars, key=lambda b: b.value), max(bars, key=lambda b: b.value)
    caption = (
        f"Read: all wait on one site for the same {delay:g} s responses, so the differences "
        f"are the crawlers' own: {fastest.label} finished first, in {fastest.value:.1f} s, "
        f"{slowest.label} last, in {slowest.value:.1f} s ({slowest.value / fastest.value:.1f}x "
        f"as long). {floor_words}"
        + "".join(f" Not drawn: {name}, which answered none." for name in missing)
    )
    return render_bars(
        bars,
        title=f"The race: {int(size):,} slow fetches at once",
        subtitle=subtitle,
        axis="seconds from the crawl's start to its last response",
        caption=caption,
        source=source_words(doc, source),
        reference=(floor, f"the floor: {floor:.1f} s"),
    )


def latency_svg(doc: dict[str, Any], source: str = "shared/tools/bench/results.json") -> str:
    """The picture of S2: each crawler's time against the level bound, its own CPU noted."""
    part = doc.get("S2")
    if not part or "level_bound_s" not in part:
        raise ValueError("the results have no S2 figures: nothing to draw")
    results, bound = part["results"], float(part["level_bound_s"])
    bars = []
    for name in ordered(results):
        entry = results[name]
        times = [seconds for seconds in entry["elapsed_s"] if seconds is not None]  # None: failed
        if not times:
            continue
        seconds = statistics.median(times)
        note = f"{seconds / bound:.2f}x the bound"
        cpu = [spent for spent in entry.get("crawl_cpu_s", []) if spent is not None]
        if cpu:  # results from before the crawls' CPU was kept have none
            note += f"; CPU {statistics.median(cpu):.2f} s"
        bars.append(bar_for(name, seconds, f"{seconds:.2f} s", note, min(times), max(times)))
    if not bars:
        raise ValueError("no crawl of S2 finished: nothing to draw")
    latency, levels = float(part["latency"]), part["levels"]
    tasks, runs = int(part["max_tasks"]), len(next(iter(results.values()))["elapsed_s"])
    rounds = round(bound / latency)
    *first, last = [f"{n:,}" for n in levels]
    subtitle = (
        f"BFS levels of {', '.join(first)} and {last} pages, --max-tasks {tasks} at a time: "
        f"{rounds} rounds; "
        + ("one run" if runs == 1 else f"median of {runs} runs, whisker min-max")
    )
    words = {
        "title": f"A crawl bound by latency: {sum(levels):,} pages, {latency * 1000:g} ms each",
        "subtitle": subtitle,
        "axis": "seconds the crawl took, by its own clock (no interpreter start-up)",
        "caption": f"Read: the dashed line is the level bound, {rounds} rounds of "
        f"{latency * 1000:g} ms: it counts the latency and nothing else. What each crawler took "
        "beyond it is connecting, the site's own work and its own CPU, most of all at each "
        "level's end, where a whole round must be parsed before the next level can begin.",
        "source": source_words(doc, source),
    }
    return render_bars(bars, reference=(bound, f"the level bound: {bound:.2f} s"), **words)

"""`nox -s diff`: two stages side by side, paired function by function, aligned line by line."""

from __future__ import annotations

import collections
import html.parser
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import pytest

from shared.tools import sidebyside
from shared.tools.bench.measure import count_lines
from shared.tools.sidebyside import (
    CHANGED,
    LEFT_ONLY,
    RIGHT_ONLY,
    SAME,
    Line,
    Section,
    SideBySide,
    align,
    compare,
    find,
    main,
    pieces,
    render_html,
    render_text,
)

PAIRS = [("stage1", "stage2"), ("stage1", "stage3"), ("stage2", "stage3"), ("stage2", "stage1")]
NAMES = ["stage1", "stage2", "stage3"]


def view(left: str, right: str) -> SideBySide:
    return compare(find(left), find(right))


def code_lines(name: str) -> list[str]:
    """The non-blank lines of a stage's crawler.py, the lines the view must show."""
    text = find(name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def section_of(compared: SideBySide, name: str) -> Section:
    """The section with the piece of this name on its left."""
    found = [s for s in compared.sections if name in [p.name for p in s.left]]
    assert len(found) == 1, f"{name} should be in exactly one section, not {len(found)}"
    return found[0]


def names(side: Sequence[sidebyside.Piece]) -> list[str]:
    return [piece.name for piece in side]


def beside(section: Section, left_text: str) -> Line | None:
    """The line beside the first left line that holds ``left_text``."""
    for row in section.rows:
        if row.left and left_text in row.left.text:
            return row.right
    raise AssertionError(f"no line with {left_text!r} on the left")


# --- pieces -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_line_of_a_file_is_in_exactly_one_piece(name: str) -> None:
    found = pieces(find(name).read_text(encoding="utf-8"))
    every = sorted((line.number, line.text) for p in found for line in p.lines)
    assert [text for _, text in every] == code_lines(name)
    assert len({number for number, _ in every}) == len(every)
    assert {"<module>", "Crawler", "Crawler.crawl", "Crawler.work", "crawl"} <= set(names(found))


def test_pieces_are_named_by_qualified_name_and_take_their_decorators_and_comments() -> None:
    source = '''"""Doc."""
import x


class A:
    """A class."""

    size = 3

    # Says why b exists.
    @staticmethod
    def b() -> None:
        pass

    async def c(self) -> None:
        await x.y()


def d() -> int:
    return 1


D = d()
'''
    found = {p.name: [line.number for line in p.lines] for p in pieces(source)}
    assert found == {
        "<module>": [1, 2],
        "A": [5, 6, 8],
        "A.b": [10, 11, 12, 13],
        "A.c": [15, 16],
        "d": [19, 20],
        "<module> after d": [23],
    }


# --- pairing ------------------------------------------------------------------------------


@pytest.mark.parametrize("later", ["stage2", "stage3"])
def test_the_fetcher_and_its_callbacks_sit_beside_request_and_fetch(later: str) -> None:
    compared = view("stage1", later)
    section = section_of(compared, "Fetcher._on_readable")
    fetcher = [p.name for p in pieces(find("stage1").read_text("utf-8"))]
    assert names(section.left) == [n for n in fetcher if n.split(".")[0] == "Fetcher"]
    assert names(section.left)[:3] == ["Fetcher", "Fetcher.__init__", "Fetcher.start"]
    assert names(section.right) == ["Crawler.request", "Crawler.fetch"]
    # The retries: what _succeed and _fail do is done in fetch's loop, and one of their
    # calls at least sits beside the same call there.  (Not all: stage 1 records a
    # response before it gives up, fetch the other way round, and rows keep both orders.)
    calls = ("record_response(", "give_up(", "record_failure(", "retrying(")
    retries = [
        row
        for row in section.rows
        if row.left and row.right and row.right.number in lines_of(section, "Crawler.fetch")
        for call in calls
        if call in row.left.text and call in row.right.text
    ]
    assert retries, "no call of _succeed or _fail is beside its twin in fetch"


def lines_of(section: Section, name: str) -> set[int]:
    return {
        line.number for p in (*section.left, *section.right) if p.name == name for line in p.lines
    }


def test_the_callbacks_line_up_against_request_step_by_step() -> None:
    section = section_of(view("stage1", "stage2"), "Fetcher._on_readable")
    expected = {
        # Waiting for the name: a callback handed to the resolver, or a Future it settles.
        "resolver.resolve(self.url, self._on_resolved)": "self.resolver.resolved(url, Future",
        "self.sock.setblocking(False)": "plain.setblocking(False)",
        "self.sock.connect(sockaddr)": "sock_connect(plain, sockaddr)",
        "self.sock.do_handshake()": "sock_handshake(sock)",
        "chunk = self.sock.recv(CHUNK)": "sock_recv(sock, 64 * 1024)",
    }
    for stage1_line, stage2_line in expected.items():
        right = beside(section, stage1_line)
        assert right is not None, f"{stage1_line} has nothing beside it"
        assert stage2_line in right.text, f"{stage1_line} is beside {right.text.strip()}"


@pytest.mark.parametrize(("left", "right"), PAIRS)
def test_work_is_beside_work_and_the_rest_pairs_by_name(left: str, right: str) -> None:
    compared = view(left, right)
    assert compared.problems == (), "every name in the table exists, and none is used twice"
    work = section_of(compared, "Crawler.work")
    assert "Crawler.work" in names(work.right)
    for name in ("<module>", "Crawler", "Crawler.crawl", "crawl"):
        assert names(section_of(compared, name).right) == [name]


@pytest.mark.parametrize("later", ["stage2", "stage3"])
def test_stage1_s_other_names_pair_as_the_chapter_says(later: str) -> None:
    compared = view("stage1", later)
    work = section_of(compared, "Crawler.finished")
    assert names(work.left) == ["Crawler.work", "Crawler.finished", "Crawler.callback_failed"]
    assert names(work.right) == ["Crawler.work"]
    assert names(section_of(compared, "Crawler.park").right) == ["Crawler.robots"]
    for alone in ("Crawler.fetch", "Crawler.cancel"):  # alone, but with a word of why
        section = section_of(compared, alone)
        assert section.right == () and section.why


def test_the_table_turns_round_when_stage1_is_on_the_right() -> None:
    compared = view("stage2", "stage1")
    request = section_of(compared, "Crawler.request")
    assert names(request.left) == ["Crawler.request", "Crawler.fetch"]
    assert "Fetcher._on_readable" in names(request.right)
    assert names(section_of(compared, "Crawler.robots").right) == ["Crawler.park"]


def test_a_table_entry_that_names_a_missing_piece_is_reported_not_half_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = sidebyside.Correspondence(("Crawler.park",), ("Crawler.no_such_thing",), "wrong")
    monkeypatch.setattr(sidebyside, "STAGE1_TO_LATER", (wrong,))
    compared = view("stage1", "stage2")
    assert len(compared.problems) == 1 and "Crawler.no_such_thing" in compared.problems[0]
    assert section_of(compared, "Crawler.park").right == ()  # not paired with anything
    assert "table: " in render_text(compared, 100)


def test_pieces_only_on_one_side_have_a_blank_other_side() -> None:
    compared = view("stage2", "stage1")
    alone = [s for s in compared.sections if not s.left]
    assert [names(s.right) for s in alone] == [["Crawler.fetch"], ["Crawler.cancel"]]
    assert all(row.mark == RIGHT_ONLY and row.left is None for s in alone for row in s.rows)


# --- alignment ----------------------------------------------------------------------------


def lines(*texts: str) -> list[Line]:
    return [Line(number, text) for number, text in enumerate(texts, start=1)]


def test_equal_lines_sit_side_by_side_and_changed_ones_beside_their_kin() -> None:
    left = lines(
        "def fetch(self, url):",
        "    response = yield from self.request(url)",
        "    self.record_failure(url, tries, exc)",
        "    for item in self.record_response(url):",
    )
    right = lines(
        "async def fetch(self, url):",
        "    response = await self.request(url)",
        "    print('something else entirely')",
        "    for item in self.record_response(url):",
    )
    rows = align(left, right)
    assert [(r.mark, r.left and r.left.number, r.right and r.right.number) for r in rows] == [
        (CHANGED, 1, 1),
        (CHANGED, 2, 2),
        (LEFT_ONLY, 3, None),
        (RIGHT_ONLY, None, 3),
        (SAME, 4, 4),
    ]
    assert rows[1].similar, "one line edited: its changed words are worth marking"


def test_indentation_alone_does_not_make_a_line_changed() -> None:
    rows = align(lines("        parser = ResponseParser()"), lines("    parser = ResponseParser()"))
    assert [row.mark for row in rows] == [SAME]


@pytest.mark.parametrize(("left", "right"), PAIRS)
def test_rows_show_every_line_once_in_each_piece_s_order(left: str, right: str) -> None:
    compared = view(left, right)
    for side, name in ((0, left), (1, right)):
        shown = [row[side] for s in compared.sections for row in rows_of(s) if row[side]]
        assert sorted(line.text for line in shown) == sorted(code_lines(name))
    for section in compared.sections:
        for side, group in ((0, section.left), (1, section.right)):
            order = [line for piece in group for line in piece.lines]
            assert [row[side] for row in rows_of(section) if row[side]] == order
        for row in section.rows:
            if row.mark == SAME:
                assert row.left and row.right and row.left.text.strip() == row.right.text.strip()


def rows_of(section: Section) -> list[tuple[Line | None, Line | None]]:
    return [(row.left, row.right) for row in section.rows]


def test_stage2_against_stage3_pairs_nearly_every_line() -> None:
    compared = view("stage2", "stage3")
    rows = [row for section in compared.sections for row in section.rows]
    paired = [row for row in rows if row.left and row.right]
    # request (our sockets against aiohttp) and the imports differ in substance
    assert len(paired) >= 0.6 * len(code_lines("stage2"))
    for name in ("Crawler.work", "Crawler.robots", "Crawler.fetch"):
        rows = section_of(compared, name).rows
        stage2_lines = [row.left for row in rows if row.left]
        assert sum(1 for row in rows if row.left and row.right) >= 0.9 * len(stage2_lines)
        # The point of the comparison: each `yield from` has its `await` beside it.
        for row in rows:
            if row.left and "yield from" in row.left.text:
                # `with (yield from lock)` is the generator spelling of `async with lock`
                assert row.right and ("await" in row.right.text or "async with" in row.right.text)


# --- the terminal -------------------------------------------------------------------------


@pytest.mark.parametrize("width", [40, 79, 120, 200])
@pytest.mark.parametrize("wrap", [True, False])
def test_the_terminal_output_fits_the_width_given(width: int, wrap: bool) -> None:
    text = render_text(view("stage1", "stage2"), width, wrap=wrap)
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert not too_long, too_long[:3]


def test_a_wide_terminal_shows_each_line_whole_beside_its_counterpart() -> None:
    text = render_text(view("stage1", "stage2"), 240)
    row = next(line for line in text.splitlines() if "chunk = self.sock.recv(CHUNK)" in line)
    _, mark, right = row.partition(f" {CHANGED} ")
    assert mark and "chunk = yield from sock_recv(sock, 64 * 1024)" in right
    for name in ("stage1", "stage2"):
        for line in code_lines(name):
            assert line.strip() in text
    heading = next(line for line in text.splitlines() if line.strip().startswith("Fetcher.*"))
    assert "Crawler.request + Crawler.fetch" in heading


def test_long_lines_wrap_or_are_cut_short() -> None:
    compared = view("stage1", "stage2")
    wrapped, cut = render_text(compared, 80), render_text(compared, 80, wrap=False)
    assert len(wrapped.splitlines()) > len(cut.splitlines())
    assert "…" in cut and "…" not in wrapped


LONG_LEFT = """def fetch(url):
    response = self.session_of_this_crawl.connector_owner.transport_for_the_request_of(url)
"""
LONG_RIGHT = """def fetch(url):
    response = yield from self.session_of_this_crawl.connector_owner.transport_for(url)
"""


@pytest.mark.parametrize("pair", [("stage1", "stage2"), ("stage2", "stage3"), "long"])
def test_a_long_line_wraps_between_tokens_never_inside_a_name(
    tmp_path: Path, pair: tuple[str, str] | str
) -> None:
    """At 80 columns, `nox -s diff` wraps a line too long for its column where a name ends
    (a space, a dot, a bracket), not in the middle of an identifier."""
    if pair == "long":
        left, right = tmp_path / "left.py", tmp_path / "right.py"
        left.write_text(LONG_LEFT, encoding="utf-8")
        right.write_text(LONG_RIGHT, encoding="utf-8")
        compared = compare(left, right)
    else:
        compared = view(*pair)
    names = set(re.findall(r"\w+", render_text(compared, 400)))  # wide enough for any line
    body = render_text(compared, 80).splitlines()
    cut = {w for w in re.findall(r"\w+", "\n".join(body))} - names
    assert not cut, sorted(cut)


def columns(text: str) -> int:
    """The columns a terminal gives a text: an East Asian Wide character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


CJK_LEFT = """def fetch(url):
    # 连接服务器，然后发送请求
    sock = connect(url)
    return sock
"""
CJK_RIGHT = """def fetch(url):
    # 用协程连接：等待时让出事件循环
    sock = yield from connect(url)
    return sock
"""


@pytest.mark.parametrize("width", [60, 80, 200])
@pytest.mark.parametrize("wrap", [True, False])
def test_a_line_of_chinese_keeps_the_columns_aligned(
    tmp_path: Path, width: int, wrap: bool
) -> None:
    """Padded by characters, a line with 中文 would push its mark two columns per character."""
    left, right = tmp_path / "left.py", tmp_path / "right.py"
    left.write_text(CJK_LEFT, encoding="utf-8")
    right.write_text(CJK_RIGHT, encoding="utf-8")
    text = render_text(compare(left, right), width, wrap=wrap)
    lines = text.splitlines()
    first = lines.index("-" * width) + 1
    body = lines[first : lines.index("=" * width, first)]  # the rows of code
    (ascii_row,) = [row for row in body if "sock = connect(url)" in row]
    mark = columns(ascii_row[: ascii_row.index(" | ") + 1])  # the column of the marks
    chinese = [row for row in body if re.search("[\u4e00-\u9fff]", row)]
    assert len(chinese) >= 2, text
    for row in chinese:  # the mark of a row with 中文 in it is in that column too
        shown = [*(c for c in row for _ in range(columns(c))), " "]  # an item per column
        assert shown[mark] in "|<>" and shown[mark - 1] == shown[mark + 1] == " ", row
    assert all(columns(line) <= width for line in text.splitlines()), text


# --- the HTML page ------------------------------------------------------------------------


class Page(html.parser.HTMLParser):
    """What a page holds: its tags and attributes, its style, the text of its code cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str | None]] = []
        self.style = ""
        self.code: dict[str, list[str]] = {"l": [], "r": []}
        self._in: list[str] = []  # the tag we are in, or the side of the code cell

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += attrs
        if tag in ("meta", "col", "br"):  # void elements: no end tag to wait for
            return
        classes = (dict(attrs).get("class") or "").split()
        if tag == "td" and "c" in classes:
            side = "l" if "l" in classes else "r"
            if "none" not in classes:
                self.code[side].append("")
            self._in.append(side)
        else:
            self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self._in.pop()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += attrs

    def handle_data(self, data: str) -> None:
        where = [entry for entry in self._in if entry in ("l", "r", "style")]
        if where and where[-1] == "style":
            self.style += data
        elif where:
            self.code[where[-1]][-1] += data


def read_page(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


@pytest.mark.parametrize(("left", "right"), PAIRS)
def test_the_page_holds_every_line_of_both_files(left: str, right: str) -> None:
    page = read_page(render_html(view(left, right)))
    assert collections.Counter(page.code["l"]) == collections.Counter(code_lines(left))
    assert collections.Counter(page.code["r"]) == collections.Counter(code_lines(right))


def test_the_page_is_self_contained() -> None:
    page = read_page(render_html(view("stage1", "stage2")))
    assert not page.tags & {"script", "link", "img", "iframe", "object", "embed", "audio"}
    loading = {"src", "href", "srcset", "action", "formaction", "data", "poster", "background"}
    # The only links are to the page's own sections: its contents list.
    assert not [
        name for name, v in page.attributes if name in loading and not (v or "").startswith("#")
    ]
    assert not [value for _, value in page.attributes if value and ":" in value]
    assert page.style.strip() and "url(" not in page.style and "@import" not in page.style


def test_the_page_marks_changed_words_and_heads_each_pair() -> None:
    text = render_html(view("stage2", "stage3"))
    assert "<del>yield</del>" in text or "<del>yield from</del>" in text
    assert "<ins>await</ins>" in text
    path = Path(sidebyside.__file__).parents[2] / "stage2_generators" / "crawler.py"
    every = sidebyside.pieces(path.read_text(encoding="utf-8"), str(path))
    work = [piece for piece in every if piece.name == "Crawler.work"]
    assert f"Crawler.work <small>lines {sidebyside.line_ranges(work, every)}</small>" in text
    assert '<tr class="changed">' in text and '<tr class="same">' in text


def test_the_page_lists_the_pairs_and_each_link_leads_to_its_pair() -> None:
    compared = view("stage1", "stage2")
    text = render_html(compared)
    links = re.findall(r'<li><a href="#([^"]+)">', text)
    ids = re.findall(r'<section id="([^"]+)">', text)
    assert links == ids and len(ids) == len(set(ids)) == len(compared.sections)
    assert "crawler-work" in ids and "fetcher" in ids  # named after the pieces, for a link
    assert text.count('href="#contents"') == len(ids)  # and each pair leads back up


def test_the_tool_keeps_to_its_size() -> None:
    """500 lines at most, counted as the stages' budget is: the tool stays small beside them."""
    assert count_lines([Path(sidebyside.__file__)]) <= 500


def test_under_zh_cn_the_columns_the_page_and_the_help_speak_chinese(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stage1", "stage2", "--width", "120", "--lang", "zh-CN"]) == 0
    text = capsys.readouterr().out
    assert "'<' 只在左边" in text and "行只在右边。" in text.splitlines()[-1]
    assert "阶段 1 手工把页面停放起来" in text  # a pair's why
    page = tmp_path / "diff.html"
    assert main(["stage1", "stage2", "--html", "--out", str(page), "--lang", "zh-CN"]) == 0
    assert capsys.readouterr().out.startswith("已写出 ")
    assert '<html lang="zh-CN">' in page.read_text("utf-8")
    with pytest.raises(SystemExit):
        main(["--help", "--lang", "zh-CN"])
    assert "两个爬虫并排对照" in capsys.readouterr().out


# --- the command line ---------------------------------------------------------------------


def test_html_goes_to_out_by_default_or_to_the_path_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sidebyside, "OUT", tmp_path / "out")
    assert main(["stage1", "stage2", "--html"]) == 0
    assert (tmp_path / "out" / "diff-stage1-stage2.html").read_text("utf-8").startswith("<!DOC")
    assert main(["stage2", "stage3", "--html", "--out", str(tmp_path / "x.html")]) == 0
    assert "stage3_asyncio/crawler.py" in (tmp_path / "x.html").read_text("utf-8")
    assert "wrote" in capsys.readouterr().out


def test_the_command_line_prints_columns_or_the_unified_diff(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["stage1", "stage2", "--width", "90"]) == 0
    columns = capsys.readouterr().out
    assert max(len(line) for line in columns.splitlines()) <= 90
    assert "Crawler.request + Crawler.fetch" in columns
    assert main(["stage2", "stage3", "--unified"]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith("--- stage2_generators/crawler.py\n+++ stage3_asyncio/crawler.py\n")
    assert "-            url, max_redirect = yield from self.q.get()" in diff


@pytest.mark.parametrize(
    "argv", [["stage1"], ["stage1", "stage9"], ["stage1", "stage2", "--out", "x.html"]]
)
def test_a_wrong_command_line_is_a_usage_error(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2


def test_a_file_python_cannot_parse_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "crawler.py"
    broken.write_text("def work(self):\n    yield from\n", encoding="utf-8")
    assert main(["stage2", str(broken)]) == 1
    assert f"{broken}:2: " in capsys.readouterr().err
    assert main(["stage2", str(broken), "--unified"]) == 0


# --- the page ---------------------------------------------------------------------------


PAGE = Path(__file__).resolve().parent.parent / "shared" / "tools" / "SIDEBYSIDE.md"
COUNTS = {"en": r"\d+ lines the same[^`]*", "zh-CN": r"\d+ 行相同[^`]*"}


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_counts_the_page_states_are_the_tool_s_last_lines(lang: str) -> None:
    """SIDEBYSIDE.md (and its Chinese page) quote the summary line of each comparison: the
    very sentence the tool prints now, and no other count."""
    page = PAGE if lang == "en" else PAGE.with_name("SIDEBYSIDE.zh-CN.md")
    stated = re.findall(rf"`({COUNTS[lang]})`", page.read_text(encoding="utf-8"))
    printed = [
        sidebyside.summary(view(left, right), lang)
        for left, right in (("stage1", "stage2"), ("stage2", "stage3"))
    ]
    assert stated == printed, f"{page.name}: paste {printed}"

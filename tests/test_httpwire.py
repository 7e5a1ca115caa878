"""Tests for shared.httpwire: request bytes, addresses and the response parser."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator

import pytest

import shared
from shared.httpwire import (
    MAX_FIELD,
    USER_AGENT,
    ResponseParser,
    WireError,
    address,
    request_bytes,
)
from shared.responses import redirect_target

SIMPLE = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"


def parse(data: bytes, max_body: int = 1000) -> ResponseParser:
    """Feed ``data`` in one piece and, if it is not complete by then, signal the close."""
    parser = ResponseParser(max_body)
    if not parser.feed(data):
        parser.feed_eof()
    return parser


def headers_of(data: bytes) -> dict[str, str]:
    """The headers of a whole response, as the parser reads them."""
    return parse(data).response().headers


# --- requests and addresses -------------------------------------------------------------


def test_request_with_port() -> None:
    assert request_bytes("http://example.com:8080/a/b.html", "ua/1") == (
        b"GET /a/b.html HTTP/1.1\r\n"
        b"Host: example.com:8080\r\n"
        b"User-Agent: ua/1\r\n"
        b"Accept: */*\r\n"
        b"Accept-Encoding: identity\r\n"
        b"Connection: close\r\n"
        b"\r\n"
    )


def test_request_with_query_and_default_user_agent() -> None:
    request = request_bytes("http://example.com/search?q=a%20b&x=1")
    assert request.startswith(b"GET /search?q=a%20b&x=1 HTTP/1.1\r\nHost: example.com\r\n")
    assert f"User-Agent: {USER_AGENT}\r\n".encode() in request
    assert f"crawler500/{shared.__version__}" == USER_AGENT  # names the project and version


def test_request_https_default_port_and_empty_path() -> None:
    request = request_bytes("https://example.com")
    assert request.startswith(b"GET / HTTP/1.1\r\nHost: example.com\r\n")
    assert b"Host: example.com:443" not in request
    assert b"Host: example.com:80\r\n" in request_bytes("https://example.com:80/")


def test_request_ipv6_host_keeps_brackets() -> None:
    assert b"Host: [::1]:8080\r\n" in request_bytes("http://[::1]:8080/")


def test_request_refuses_non_ascii_and_header_injection() -> None:
    with pytest.raises(UnicodeEncodeError):
        request_bytes("http://example.com/caf\u00e9")
    with pytest.raises(ValueError):
        request_bytes("http://example.com/", "ua\r\nX-Evil: 1")


def test_address() -> None:
    assert address("http://example.com/x") == ("example.com", 80)
    assert address("https://example.com/x") == ("example.com", 443)
    assert address("http://example.com:8080/") == ("example.com", 8080)
    assert address("https://[::1]:8443/") == ("::1", 8443)
    assert address("http://[2001:db8::1]/") == ("2001:db8::1", 80)
    with pytest.raises(ValueError):
        address("ftp://example.com/")


# --- parsing ----------------------------------------------------------------------------


def test_fed_whole() -> None:
    parser = ResponseParser()
    assert not parser.done
    assert parser.feed(SIMPLE) is True
    assert parser.done
    response = parser.response()
    assert response.status == 200
    assert response.headers == {"content-type": "text/html", "content-length": "5"}
    assert response.body == b"hello"
    assert response.too_large is False


def test_fed_one_byte_at_a_time() -> None:
    parser = ResponseParser()
    results = [parser.feed(SIMPLE[i : i + 1]) for i in range(len(SIMPLE))]
    assert results == [False] * (len(SIMPLE) - 1) + [True]
    assert parser.response().body == b"hello"


def test_content_length_split_across_feeds() -> None:
    parser = ResponseParser()
    assert not parser.feed(b"HTTP/1.0 404 Not Found\r\nContent-Length: 10\r\n\r\n0123")
    assert not parser.feed(b"4567")
    assert parser.feed(b"89")
    assert parser.response().status == 404
    assert parser.response().body == b"0123456789"


def test_content_length_zero_and_empty_reason() -> None:
    parser = ResponseParser()
    assert parser.feed(b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n")
    assert parser.response().body == b""
    assert ResponseParser().feed(b"HTTP/1.1 302\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n")


def test_chunked_with_extension_and_trailer() -> None:
    data = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n"
        b"1A\r\n" + b"x" * 26 + b"\r\n"
        b"0\r\nExpires: never\r\n\r\n"
    )
    parser = ResponseParser()
    assert parser.feed(data)
    assert parser.response().body == b"hello" + b"x" * 26
    assert "expires" not in parser.response().headers

    # The same bytes one at a time: every state must cope with split input.
    parser = ResponseParser()
    for i in range(len(data)):
        parser.feed(data[i : i + 1])
    assert parser.response().body == b"hello" + b"x" * 26


def test_chunked_and_content_length_together_are_refused() -> None:
    """The smuggler's pair (RFC 9112, section 6.3): an error, as aiohttp makes it."""
    with pytest.raises(WireError, match="both"):
        parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n0\r\n\r\n"
        )


@pytest.mark.parametrize(
    "framing",
    [
        b"zz\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloXX\r\n",
        b"5" * 2000,
        b" 5\r\nhello\r\n",
        b"5;a=\x01\r\nhello\r\n",
        b"5;a=\rb\r\nhello\r\n",
    ],
    ids=[
        "not-hex",
        "0x-prefix",
        "data-too-long",
        "endless-size-line",
        "space-before-size",
        "control-byte-in-extension",
        "bare-cr-in-extension",
    ],
)
def test_bad_chunk_framing(framing: bytes) -> None:
    with pytest.raises(WireError):
        ResponseParser().feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + framing)


def test_close_delimited_body() -> None:
    parser = ResponseParser()
    assert not parser.feed(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome ")
    assert not parser.feed(b"text")
    assert parser.feed_eof() is True
    assert parser.response().body == b"some text"


def test_content_length_over_cap_completes_at_headers() -> None:
    parser = ResponseParser(max_body=10)
    assert parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n")
    response = parser.response()
    assert response.too_large is True
    assert response.body == b""
    assert response.status == 200


def test_content_length_at_cap_is_fine() -> None:
    parser = ResponseParser(max_body=5)
    assert parser.feed(SIMPLE)
    assert parser.response().too_large is False


def test_chunks_over_cap() -> None:
    parser = ResponseParser(max_body=10)
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert not parser.feed(head + b"6\r\nabcdef\r\n")
    assert parser.feed(b"6\r\n")  # 12 bytes would pass the cap: no need to read them
    assert parser.response().too_large is True
    assert parser.response().body == b""


def test_close_delimited_over_cap() -> None:
    parser = ResponseParser(max_body=10)
    assert not parser.feed(b"HTTP/1.1 200 OK\r\n\r\n0123456789")
    assert parser.feed(b"x")
    assert parser.response().too_large is True
    assert parser.response().body == b""


def test_truncated_content_length_body() -> None:
    parser = ResponseParser()
    assert not parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    with pytest.raises(WireError, match="closed before the response was complete"):
        parser.feed_eof()


def test_truncated_chunked_body() -> None:
    parser = ResponseParser()
    parser.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
    with pytest.raises(WireError, match="closed before the response was complete"):
        parser.feed_eof()


@pytest.mark.parametrize("data", [b"", b"HTTP/1.1 200 OK\r\nContent-Le"])
def test_truncated_headers(data: bytes) -> None:
    parser = ResponseParser()
    parser.feed(data)
    with pytest.raises(WireError, match="closed before the response was complete"):
        parser.feed_eof()


@pytest.mark.parametrize(
    "data",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"<html><body>hello</body></html>\r\n\r\n",
        b"HTTP/2 200\r\n\r\n",
        b"HTTP/1.1 OK\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
    ],
)
def test_garbage_status_line(data: bytes) -> None:
    with pytest.raises(WireError, match="status line"):
        ResponseParser().feed(data)


def test_error_names_what_was_received_truncated() -> None:
    with pytest.raises(WireError) as caught:
        ResponseParser().feed(b"HTTP/1.1 abc " + b"y" * 200 + b"\r\n\r\n")
    assert "HTTP/1.1 abc" in str(caught.value)
    assert len(str(caught.value)) < 100


def test_header_line_without_colon() -> None:
    with pytest.raises(WireError, match="header line"):
        ResponseParser().feed(b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n")


@pytest.mark.parametrize(
    "value",
    [
        b"-1",
        b"abc",
        b"1.5",
        b"",
        b"5, 6",
        b"5, 05",  # a list of one length, but not of one value, as h11 reads it
        b"5, , 5",  # an empty element
        b"+5",
        b"5\xa0",  # NBSP is no whitespace in HTTP: str.strip() would have dropped it
        b"\xa05",
        b"5\x85",
        b"\xd9\xa5",  # an Arabic-Indic five: a digit to str.isdigit(), not to HTTP
        b"1" * 21,
        b"18446744073709551616",  # 2**64
    ],
)
def test_invalid_content_length(value: bytes) -> None:
    with pytest.raises(WireError, match="Content-Length"):
        ResponseParser().feed(b"HTTP/1.1 200 OK\r\nContent-Length: " + value + b"\r\n\r\n")


@pytest.mark.parametrize(
    "fields", [b"Content-Length: 5, 5", b"Content-Length: 5\r\nContent-Length: 5"]
)
def test_a_content_length_list_of_one_value_is_that_value(fields: bytes) -> None:
    """RFC 9112, section 6.3: a list (or a repeat) of the same valid value is that value."""
    parser = parse(b"HTTP/1.1 200 OK\r\n" + fields + b"\r\n\r\nhello, and more")
    assert parser.response().body == b"hello"
    assert parser.response().headers == {"content-length": "5"}
    with pytest.raises(WireError, match="Content-Length"):
        parse(b"HTTP/1.1 200 OK\r\n" + fields + b"\r\nContent-Length: 6\r\n\r\nhello")


def test_content_length_between_tabs_and_with_leading_zeros() -> None:
    parser = parse(b"HTTP/1.1 200 OK\r\nContent-Length:\t 0005 \t\r\n\r\nhello")
    assert parser.response().body == b"hello"


def test_transfer_encoding_is_chunked_only_when_it_says_so_exactly() -> None:
    """A "chunked\\xa0" is no chunked: the body then runs to the close, framing and all."""
    chunks = b"2\r\nhi\r\n0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: "
    assert parse(head + b"chunked\xa0\r\n\r\n" + chunks).response().body == chunks
    assert parse(head + b"gzip, Chunked \t\r\n\r\n" + chunks).response().body == b"hi"


# --- header text: one reading in every stage ---------------------------------------------


def test_header_values_are_utf8_with_raw_bytes_kept() -> None:
    """As aiohttp reads them: UTF-8, and a byte that is not UTF-8 kept as a surrogate."""
    headers = headers_of(
        b"HTTP/1.1 302 Found\r\nLocation: /with space/\xc3\xbc\r\n"
        b"X-Latin-1: caf\xe9\r\nContent-Length: 0\r\n\r\n"
    )
    assert headers["location"] == "/with space/\u00fc"
    assert headers["x-latin-1"] == "caf\udce9"
    assert headers["x-latin-1"].encode("utf-8", "surrogateescape") == b"caf\xe9"


@pytest.mark.parametrize(
    ("raw", "target"),
    [
        (b"/with space/\xc3\xbc", "http://h/with%20space/%C3%BC"),  # UTF-8, as aiohttp
        (b"/caf\xe9", "http://h/caf%E9"),  # not UTF-8: the byte as it is, percent-encoded
        (b"/a\r\n b", "http://h/a%20b"),  # obs-fold: a space
        (b"http://[::1", None),  # no URL at all
    ],
)
def test_location_means_the_same_in_every_stage(raw: bytes, target: str | None) -> None:
    """The parser's reading and shared.responses' meaning, as stages 1 and 2 chain them."""
    parser = parse(b"HTTP/1.1 302 Found\r\nLocation: " + raw + b"\r\nContent-Length: 0\r\n\r\n")
    assert redirect_target("http://h/x", parser.response()) == target


def test_only_spaces_and_tabs_are_trimmed_around_a_value() -> None:
    headers = headers_of(
        b"HTTP/1.1 200 OK\r\nX-A: \t a b \t\r\nX-Nbsp:\xa0\r\nX-Nel: \x85x\x85\r\n"
        b"X-Ctl: \x01\x7f\r\nContent-Length: 0\r\n\r\n"
    )
    assert headers["x-a"] == "a b"
    assert headers["x-nbsp"] == "\udca0"  # kept, not stripped: it is part of the value
    assert headers["x-nel"] == "\udc85x\udc85"
    assert headers["x-ctl"] == "\x01\x7f"  # other control bytes pass, as in aiohttp


@pytest.mark.parametrize(
    "line",
    [b"Location: /a\x00b", b"Location: /a\rb", b"X-A: b\r", b"X-A: b\r\r"],
    ids=["nul", "bare-cr", "cr-at-the-end", "two-crs"],
)
def test_nul_and_bare_cr_in_a_value_are_errors(line: bytes) -> None:
    with pytest.raises(WireError, match="NUL or bare CR"):
        parse(b"HTTP/1.1 302 Found\r\n" + line + b"\r\nContent-Length: 0\r\n\r\n")


def test_obs_fold_continues_the_field_before_it() -> None:
    """RFC 9112, section 5.2: the fold's line break goes, its whitespace stays (aiohttp's way)."""
    headers = headers_of(
        b"HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\nX-B: d\r\n\te \r\n \r\nX-C:\r\n f\r\n"
        b"Content-Length: 2\r\n\r\nhi"
    )
    assert (headers["x-a"], headers["x-b"], headers["x-c"]) == ("b c", "d\te", "f")


def test_a_folded_line_with_a_colon_is_no_field_of_its_own() -> None:
    """The folded "Content-Length: 2" belongs to X-A: the body runs to the close."""
    parser = parse(b"HTTP/1.1 200 OK\r\nX-A: b\r\n Content-Length: 2\r\n\r\nhello")
    assert parser.response().headers == {"x-a": "b Content-Length: 2"}
    assert parser.response().body == b"hello"


def test_a_folded_line_before_any_field_is_an_error() -> None:
    with pytest.raises(WireError, match="folded line"):
        parse(b"HTTP/1.1 200 OK\r\n X-A: b\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize("name", [b"X-A ", b"X(A)", b"X\xe9", b"X A", b""])
def test_a_field_name_must_be_a_token(name: bytes) -> None:
    with pytest.raises(WireError):
        parse(b"HTTP/1.1 200 OK\r\nX-Z: 1\r\n" + name + b": b\r\nContent-Length: 0\r\n\r\n")


def test_aiohttps_limits_on_fields_hold_in_every_stage() -> None:
    """At most 128 fields of at most 8190 bytes each, as stage 3's aiohttp allows."""
    ok = b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 127 + b"Content-Length: 0\r\n\r\n"
    assert len(parse(ok).response().headers) == 2
    with pytest.raises(WireError, match="128 header fields"):
        parse(b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 128 + b"Content-Length: 0\r\n\r\n")
    field = b"X-A: " + b"v" * (MAX_FIELD - len(b"X-A"))  # the colon and spaces not counted
    assert parse(b"HTTP/1.1 200 OK\r\n" + field + b"\r\n\r\n").done
    with pytest.raises(WireError, match="longer than 8190"):
        parse(b"HTTP/1.1 200 OK\r\n" + field + b"v\r\n\r\n")


def test_header_block_too_long() -> None:
    with pytest.raises(WireError, match="header block"):
        ResponseParser().feed(b"HTTP/1.1 200 OK\r\n" + b"X-Big: a\r\n" * 10_000)


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses(status: int) -> None:
    parser = ResponseParser()
    assert parser.feed(f"HTTP/1.1 {status} Nothing\r\nContent-Length: 3\r\n\r\n".encode())
    assert parser.response().status == status
    assert parser.response().body == b""


def test_interim_100_continue_is_skipped() -> None:
    parser = parse(b"HTTP/1.1 100 Continue\r\n\r\n" + SIMPLE)
    assert parser.response().status == 200
    assert parser.response().body == b"hello"


def test_bare_lf_line_endings() -> None:
    parser = ResponseParser()
    assert parser.feed(b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nhi")
    assert parser.response().headers == {"content-length": "2", "x-a": "b"}
    assert parser.response().body == b"hi"
    chunked = b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nhi\n0\n\n"
    assert parse(chunked).response().body == b"hi"


def test_headers_lower_cased_stripped_and_joined() -> None:
    parser = parse(
        b"HTTP/1.1 200 OK\r\nContent-TYPE:  text/html; charset=utf-8 \r\n"
        b"Set-Cookie: a=1\r\nset-cookie: b=2\r\nX-Empty:\r\n\r\n"
    )
    assert parser.response().headers == {
        "content-type": "text/html; charset=utf-8",
        "set-cookie": "a=1, b=2",
        "x-empty": "",
    }


def test_data_after_completion_is_ignored() -> None:
    parser = ResponseParser()
    assert parser.feed(SIMPLE + b"EXTRA")
    assert parser.feed(b"HTTP/1.1 500 Oops\r\n\r\nmore") is True
    assert parser.feed_eof() is True
    assert parser.response().status == 200
    assert parser.response().body == b"hello"


def test_response_before_done_raises() -> None:
    parser = ResponseParser()
    parser.feed(SIMPLE[:20])
    with pytest.raises(RuntimeError):
        parser.response()


def test_large_body_in_pieces_is_fast() -> None:
    size = 10 * 1024 * 1024
    body = bytes(range(256)) * (size // 256)
    data = f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode() + body
    started = time.perf_counter()
    parser = ResponseParser(max_body=size)
    for start in range(0, len(data), 65536):
        parser.feed(data[start : start + 65536])
    assert parser.done
    assert parser.response().body == body
    assert time.perf_counter() - started < 2.0


def test_large_chunked_and_close_bodies_are_fast() -> None:
    piece = b"z" * 4000
    chunked = b"".join(b"fa0\r\n" + piece + b"\r\n" for _ in range(2500)) + b"0\r\n\r\n"
    close = piece * 2500
    for head, body in [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunked),
        (b"HTTP/1.1 200 OK\r\n\r\n", close),
    ]:
        data = head + body
        started = time.perf_counter()
        parser = ResponseParser()
        for start in range(0, len(data), 65536):
            parser.feed(data[start : start + 65536])
        parser.feed_eof()
        assert len(parser.response().body) == 10_000_000
        assert time.perf_counter() - started < 2.0


# --- a real server ----------------------------------------------------------------------

PAGE = b"<html><body><a href='/next'>next</a></body></html>"


class _PageHandler(http.server.BaseHTTPRequestHandler):
    """Serve PAGE at every path, and echo the request's Host header back."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        """Answer every GET with PAGE (http.server dispatches on this exact name)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.send_header("X-Seen-Host", self.headers.get("Host", ""))
        self.send_header("X-Seen-Path", self.path)
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""


@pytest.fixture
def server_port() -> Iterator[int]:
    """Run a threaded HTTP server on 127.0.0.1 and yield its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_round_trip_with_real_server(server_port: int) -> None:
    url = f"http://127.0.0.1:{server_port}/page?x=1"
    parser = ResponseParser()
    with socket.create_connection(address(url), timeout=5) as sock:
        sock.sendall(request_bytes(url))
        while not parser.done:
            data = sock.recv(7)  # small reads, so the parser sees the response in pieces
            if not data:
                parser.feed_eof()
                break
            parser.feed(data)
    response = parser.response()
    assert response.status == 200
    assert response.body == PAGE
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["x-seen-host"] == f"127.0.0.1:{server_port}"
    assert response.headers["x-seen-path"] == "/page?x=1"

"""Exercise s2-sockets: a socket wait that ends in a Future, undone on every way out.

Task 1 is `_when_ready`, the one wait every socket coroutine of stage 2 goes through;
task 2 is `sock_connect` (see shared/tools/exercises/s2-sockets/README.md). Sockets here are
socket pairs and servers on 127.0.0.1. Each test makes a fresh stage 2 EventLoop and
drives it for a few seconds at most.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import ssl
from collections.abc import Iterator
from typing import Any, TypeVar

import pytest
from reasons import reason
from stage2_loop import loop_fixture, raises, run  # noqa: F401 (the fixture `loop`)

from shared.tls import WOULD_BLOCK
from stage2_generators.events import get_running_loop
from stage2_generators.futures import CancelledError, Coroutine
from stage2_generators.loop import EventLoop
from stage2_generators.sockets import _when_ready, sock_connect, sock_recv, sock_sendall
from stage2_generators.tasks import Task, sleep, timeout

T = TypeVar("T")
Pair = tuple[socket.socket, socket.socket]  # two connected sockets
WRITABLE = reason("s2-sockets.wait-writable")
# How a call says it would block: a plain socket, and TLS in the middle of a record.  (The
# InterruptedError of WOULD_BLOCK, Python retries itself since 3.5: no socket call says it.)
WOULD_BLOCK_SAID = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


@pytest.fixture
def pair() -> Iterator[Pair]:
    """Two connected sockets; the first is non-blocking, for the coroutines to use."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    with ours, theirs:
        yield ours, theirs


def closed_port() -> int:
    """A port on 127.0.0.1 where nobody listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- Task 1: _when_ready ------------------------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_recv_waits_until_the_data_arrives(loop: EventLoop, pair: Pair) -> None:
    """sock_recv on an empty socket waits for it to be readable, then returns the bytes."""
    ours, theirs = pair
    loop.call_later(0.02, theirs.send, b"hello")
    assert run(loop, sock_recv(ours, 100)) == b"hello", reason(
        "s2-sockets.sock-recv-should-return-the"
    )
    assert loop.remove_reader(ours) is False, reason("s2-sockets.still-reading")


@pytest.mark.task(taskno=1)
def test_other_tasks_run_while_a_socket_waits(loop: EventLoop, pair: Pair) -> None:
    """Waiting for a socket pauses one coroutine, not the loop."""
    ours, theirs = pair
    ticks: list[int] = []

    def main() -> Coroutine[bytes]:
        reader = Task(sock_recv(ours, 100))
        for tick in range(3):
            yield from sleep(0.005)
            ticks.append(tick)
        assert not reader.done(), reason("s2-sockets.the-read-ended-before-any")
        theirs.send(b"late")
        return (yield from reader)

    assert run(loop, main()) == b"late", reason("s2-sockets.sock-recv-should-return-the-2")
    assert ticks == [0, 1, 2], reason("s2-sockets.the-ticker-ran-other-tasks", ticks=ticks)


@pytest.mark.task(taskno=1)
def test_an_error_of_the_socket_call_is_raised_in_the_coroutine(
    loop: EventLoop, pair: Pair
) -> None:
    """The peer has gone: send() fails in the loop's callback, and the coroutine gets it."""
    ours, theirs = pair
    theirs.close()
    with pytest.raises(OSError):  # BrokenPipeError or ConnectionResetError
        run(loop, sock_sendall(ours, b"anyone there?"))
    assert loop.remove_writer(ours) is False, reason("s2-sockets.still-writing")


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize("would_block", WOULD_BLOCK_SAID, ids=lambda kind: kind.__name__)
def test_a_call_that_would_block_waits_for_the_next_wake_up(
    loop: EventLoop, pair: Pair, would_block: type[OSError]
) -> None:
    """A spurious wake-up (the call would block after all) is not an error: wait again.

    Each of WOULD_BLOCK says so: a plain socket's BlockingIOError, and TLS's SSLWantReadError
    and SSLWantWriteError while a record is not complete yet."""
    ours, theirs = pair
    theirs.send(b"x")  # readable from now on: the loop wakes the wait on every turn
    calls: list[int] = []

    def attempt() -> str:
        calls.append(len(calls))
        if len(calls) < 3:
            raise would_block("not yet")
        return "third time"

    try:
        outcome = run(loop, _when_ready(ours, False, attempt))
    except WOULD_BLOCK as error:
        pytest.fail(reason("s2-sockets.would-block-ended-the-wait", error=type(error).__name__))
    assert outcome == "third time", reason(
        "s2-sockets.the-wait-ended-with-not", outcome=repr(outcome)
    )
    assert len(calls) == 3, reason("s2-sockets.attempt-ran-times-not-3", calls_count=len(calls))
    assert loop.remove_reader(ours) is False, reason("s2-sockets.still-reading")


@pytest.mark.task(taskno=1)
def test_a_cancelled_wait_unregisters_its_socket(loop: EventLoop, pair: Pair) -> None:
    """Cancellation is a way out too: the socket is unregistered before the error goes on."""
    ours, _ = pair

    def bounded() -> Coroutine[bytes]:
        with timeout(0.02):
            return (yield from sock_recv(ours, 100))

    with pytest.raises(TimeoutError):
        run(loop, bounded())
    assert loop.remove_reader(ours) is False, reason("s2-sockets.the-cancelled-wait-left-its")


@pytest.mark.task(taskno=1)
def test_a_wake_up_that_comes_after_a_cancel_consumes_nothing(loop: EventLoop, pair: Pair) -> None:
    """Cancelled while the socket's callback waits in the ready queue: it must not recv."""
    ours, theirs = pair
    reader = Task(sock_recv(ours, 100))
    loop.run_once()  # the first step: nothing to read, so the task waits for the socket
    assert not reader.done(), reason("s2-sockets.the-read-ended-although-nothing")
    theirs.send(b"data")
    loop.call_soon(reader.cancel)  # ready before the loop polls: it runs first
    with pytest.raises(CancelledError):
        run(loop, reader)
    assert ours.recv(100) == b"data", reason("s2-sockets.a-cancelled-wait-read-the")


@pytest.mark.task(taskno=1)
def test_sendall_and_recv_move_a_megabyte_in_both_directions_at_once(
    loop: EventLoop, pair: Pair
) -> None:
    """More than the buffers hold: sends are partial and every wait goes round the loop."""
    ours, theirs = pair
    theirs.setblocking(False)
    payload = bytes(range(256)) * 4096  # 1 MiB

    def receive(sock: socket.socket) -> Coroutine[bytes]:
        received = bytearray()
        while len(received) < len(payload):
            received += yield from sock_recv(sock, 65536)
        return bytes(received)

    def main() -> Coroutine[tuple[bytes, bytes]]:
        tasks = [Task(sock_sendall(ours, payload)), Task(sock_sendall(theirs, payload))]
        got = (yield from receive(theirs)), (yield from receive(ours))
        for task in tasks:
            yield from task
        return got

    assert run(loop, main()) == (payload, payload), reason("s2-sockets.both-sides-should-read-what")
    for sock in pair:
        assert loop.remove_reader(sock) is False and loop.remove_writer(sock) is False, reason(
            "s2-sockets.the-socket-is-still-registered"
        )


def turns_until_done(loop: EventLoop, task: Task[Any], turns: int = 10) -> int:
    """Run the loop turn by turn until ``task`` is done; the turns it took (``turns`` at most)."""
    for turn in range(1, turns + 1):
        loop.run_once()
        if task.done():
            return turn
    return turns


@pytest.mark.task(taskno=1)
def test_a_bug_in_the_attempt_is_raised_in_the_coroutine(loop: EventLoop, pair: Pair) -> None:
    """Not only OSError: any Exception of the call settles the future, and the socket is freed."""
    ours, theirs = pair
    theirs.send(b"x")  # readable at once: the attempt runs on one of the next turns

    def attempt() -> bytes:
        raise TypeError("a bug in the call: a str given to send()")

    waiting = Task(_when_ready(ours, False, attempt))
    turns_until_done(loop, waiting)
    assert waiting.done(), reason("s2-sockets.bug-not-passed-on")
    assert isinstance(waiting.exception(), TypeError), reason(
        "s2-sockets.bug-not-passed-on-2", error=repr(waiting.exception())
    )
    assert loop.remove_reader(ours) is False, reason("s2-sockets.still-reading")


@pytest.mark.task(taskno=1)
def test_ctrl_c_in_the_attempt_stops_the_loop_in_that_turn(loop: EventLoop, pair: Pair) -> None:
    """KeyboardInterrupt is no Exception: it leaves the socket's callback and the loop's turn
    at once, and no future, no coroutine, no further turn of the loop sees it first."""
    ours, theirs = pair
    theirs.send(b"x")
    turn = [0]
    ran: list[int] = []

    def attempt() -> bytes:
        ran.append(turn[0])
        raise KeyboardInterrupt

    waiting = Task(_when_ready(ours, False, attempt))
    stopped = None
    for turn[0] in range(1, 11):
        try:
            loop.run_once()
        except KeyboardInterrupt:
            stopped = turn[0]
            break
    assert ran and stopped == ran[0], reason(
        "s2-sockets.ctrl-c-stored", ran=ran[:1], stopped=stopped
    )
    waiting._coro.close()  # the coroutine's finally unregisters the socket


# --- Task 2: sock_connect -----------------------------------------------------------------------


@pytest.mark.task(taskno=2)
def test_connect_to_a_listening_server(loop: EventLoop) -> None:
    """The connect completes on the loop; then the socket carries data both ways."""
    with socket.create_server(("127.0.0.1", 0)) as listener, socket.socket() as sock:
        sock.setblocking(False)
        connected = run(loop, sock_connect(sock, listener.getsockname()), explain=lambda: WRITABLE)
        assert connected is None, reason(
            "s2-sockets.sock-connect-returned-not-none", connected=repr(connected)
        )
        conn, _ = listener.accept()  # the handshake is complete: accept() does not block
        with conn:
            assert sock.getpeername() == listener.getsockname(), reason(
                "s2-sockets.the-socket-is-connected-to"
            )
            conn.sendall(b"welcome")
            assert run(loop, sock_recv(sock, 100)) == b"welcome", reason(
                "s2-sockets.the-connected-socket-should-read"
            )
        assert loop.remove_writer(sock) is False, reason("s2-sockets.still-writing")


@pytest.mark.task(taskno=2)
def test_a_refused_connect_raises_connection_refused(loop: EventLoop) -> None:
    """Writable means the handshake ended, not that it worked: the error comes from SO_ERROR."""
    with socket.socket() as sock:
        sock.setblocking(False)
        try:
            with raises(ConnectionRefusedError, reason("s2-sockets.refused")):
                run(
                    loop, sock_connect(sock, ("127.0.0.1", closed_port())), explain=lambda: WRITABLE
                )
        except OSError as error:  # not ConnectionRefusedError, which `raises` took
            pytest.fail(reason("s2-sockets.refused-as", error=f"{type(error).__name__}: {error}"))
        assert loop.remove_writer(sock) is False, reason("s2-sockets.still-writing")


class Instant(socket.socket):
    """A socket whose connect() ends at once, as a connect on the same machine may: it
    returns (connected), or it raises the error it was made with."""

    def __init__(self, error: OSError | None) -> None:
        super().__init__()
        self.setblocking(False)
        self.error = error

    def connect(self, address: object) -> None:
        """Connect at once, or fail at once: no handshake to wait for."""
        if self.error is not None:
            raise self.error


@pytest.mark.task(taskno=2)
@pytest.mark.parametrize(
    "error",
    [
        None,
        ConnectionRefusedError(errno.ECONNREFUSED, "refused at once"),
        OSError(errno.ENETUNREACH, "no route"),
    ],
    ids=["connected", "refused", "unreachable"],
)
def test_a_connect_that_ends_at_once_costs_no_wait(loop: EventLoop, error: OSError | None) -> None:
    """connect() returned or raised: sock_connect ends in its first step, without the loop.

    Only BlockingIOError means "begun"; a return means connected, any other error is the
    caller's. Waiting anyway costs a turn of the loop, and after an error SO_ERROR reads 0:
    the socket would pass for connected.
    """
    with Instant(error) as sock:
        coro = sock_connect(sock, ("127.0.0.1", 9))
        try:
            yielded = coro.send(None)
        except StopIteration:
            assert error is None, reason("s2-sockets.instant-error-lost", error=repr(error))
            return
        except OSError as raised:
            assert raised is error, reason("s2-sockets.instant-wrong-error", raised=repr(raised))
            return
        finally:
            coro.close()  # a coroutine that paused unregisters its socket in its finally
        wanted = "instant-connect-waited" if error is None else "instant-error-lost"
        pytest.fail(reason(f"s2-sockets.{wanted}", error=repr(error), yielded=repr(yielded)))


class Late(socket.socket):
    """A socket whose connect() is begun, and refused a moment later, as across a network:
    it turns writable only then, and only then does SO_ERROR hold the refusal."""

    def __init__(self) -> None:
        mine, self.peer = socket.socketpair()
        super().__init__(fileno=mine.detach())
        self.setblocking(False)
        self.peer.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:  # fill the buffer: not writable while the "handshake" goes on
                self.send(b"x" * 65536)
        self.refused = False

    def connect(self, address: object) -> None:
        """Begin the connect; its refusal arrives 10 ms later."""
        get_running_loop().call_later(0.01, self.refuse)
        raise BlockingIOError(errno.EINPROGRESS, "in progress")

    def refuse(self) -> None:
        """The handshake ends, refused: writable at last, SO_ERROR set."""
        with contextlib.suppress(BlockingIOError):
            while self.peer.recv(65536):
                pass
        self.refused = True

    def getsockopt(self, level: int, option: int, *args: Any) -> Any:
        """SO_ERROR is 0 until the refusal arrives."""
        if (level, option) == (socket.SOL_SOCKET, socket.SO_ERROR):
            return errno.ECONNREFUSED if self.refused else 0
        return super().getsockopt(level, option, *args)

    def close(self) -> None:
        """Close both ends."""
        self.peer.close()
        super().close()


@pytest.mark.task(taskno=2)
def test_a_refusal_that_arrives_later_is_read_once_writable(loop: EventLoop) -> None:
    """Across a network the refusal comes a round trip after connect(): SO_ERROR is 0 until
    the socket turns writable, so it is read then, not before the wait."""
    with Late() as sock:
        with raises(ConnectionRefusedError, reason("s2-sockets.so-error-too-early")):
            run(loop, sock_connect(sock, ("127.0.0.1", 9)), explain=lambda: WRITABLE)
        assert loop.remove_writer(sock) is False, reason("s2-sockets.still-writing")


@pytest.mark.task(taskno=2)
def test_many_connects_wait_side_by_side(loop: EventLoop) -> None:
    """Twenty connects at once, on one loop: every other one refused, the rest connected."""

    def attempt(sock: socket.socket, port: int) -> Coroutine[str]:
        sock.setblocking(False)
        try:
            yield from sock_connect(sock, ("127.0.0.1", port))
        except ConnectionRefusedError:
            return "refused"
        except OSError as error:
            return f"{type(error).__name__}: {error}"
        return "connected"

    with contextlib.ExitStack() as stack:
        listener = stack.enter_context(socket.create_server(("127.0.0.1", 0), backlog=20))
        sockets = [stack.enter_context(socket.socket()) for _ in range(20)]
        ports = [listener.getsockname()[1], closed_port()] * 10

        def main() -> Coroutine[list[str]]:
            tasks = [Task(attempt(s, p)) for s, p in zip(sockets, ports, strict=True)]
            outcomes = []
            for task in tasks:
                outcomes.append((yield from task))
            return outcomes

        outcomes = run(loop, main())
        assert outcomes == ["connected", "refused"] * 10, reason(
            "s2-sockets.connects-that-succeed-and-fail", outcomes=sorted(set(outcomes))
        )

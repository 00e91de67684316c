"""gateway.unread_body on its own: what it reads of a body the application left, and its
bounds (the behaviour through nginx and gunicorn is in tests/embedded/)."""

import io
import socket

from gateway.unread_body import CountingInput, UnreadBodyDrain, declared_length


def app_reading(count: int):
    """A WSGI application that reads ``count`` bytes of the body, then answers 401."""
    def app(environ, start_response):
        environ["wsgi.input"].read(count)
        start_response("401 Unauthorized", [("Content-Type", "application/json")])
        return [b"{}"]
    return app


def test_the_rest_of_a_declared_body_is_read_before_the_answer():
    stream = io.BytesIO(b"a" * 300_000 + b"NEXT REQUEST")
    environ = {"wsgi.input": stream, "CONTENT_LENGTH": "300000"}
    answer = UnreadBodyDrain(app_reading(1000), max_bytes=10**6)(environ, lambda *a: None)
    assert list(answer) == [b"{}"]
    assert stream.read() == b"NEXT REQUEST"          # never past the declared length


def test_a_rest_over_the_cap_is_left_unread():
    stream = io.BytesIO(b"a" * 5000)
    body = CountingInput(stream, 5000)
    assert UnreadBodyDrain(None, max_bytes=4000).drain(body) is False
    assert stream.tell() == 0


def test_a_body_that_ends_before_its_declared_length_is_not_drained():
    body = CountingInput(io.BytesIO(b"a" * 10), 5000)
    assert UnreadBodyDrain(None, max_bytes=10**6).drain(body) is False


def test_reading_stops_at_the_deadline_on_a_stalled_client():
    server, client = socket.socketpair()
    client.sendall(b"a" * 100)                         # then nothing more
    reader = server.makefile("rb")
    body = CountingInput(reader, 10**6)
    assert UnreadBodyDrain(None, max_bytes=10**7, deadline_s=0.3).drain(body, server) is False
    assert server.gettimeout() is None                  # the socket's timeout is put back
    server.close()
    client.close()


def test_lengths_are_read_as_pep_3333_says():
    assert declared_length({"CONTENT_LENGTH": "12"}) == 12
    assert declared_length({}) == 0
    assert declared_length({"CONTENT_LENGTH": "x"}) == 0
    assert declared_length({"wsgi.input_terminated": True}) is None   # chunked: to its end
    chunked = CountingInput(io.BytesIO(b"b" * 70_000), None)
    assert UnreadBodyDrain(None, max_bytes=10**6).drain(chunked) is True
    assert chunked.consumed == 70_000

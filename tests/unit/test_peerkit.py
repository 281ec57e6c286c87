"""The peer kit's small helpers."""

from conformance.peerkit import free_port, stderr_tail


def test_stderr_tail_keeps_the_last_three_non_blank_lines():
    assert stderr_tail(b"one\n\ntwo\nthree\n  \nfour\n\n") == "two | three | four"
    assert stderr_tail(b"\xff broken\n") == "\ufffd broken"
    assert stderr_tail(b"") == ""


def test_free_port_is_a_port():
    assert 0 < free_port() < 65536

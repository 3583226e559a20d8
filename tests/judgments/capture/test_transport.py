"""capture()'s connections, against real servers on 127.0.0.1: the environment's HTTP proxy, non-ASCII URLs,
a kept-alive connection the engine closed, TLS verification. No database."""

import base64
import json
import re
import socket
import ssl
import threading
from datetime import UTC, datetime, timedelta

import pytest

from judgments.capture.client import capture
from judgments.endpoints.engines import EndpointError, EndpointSpec

from .conftest import es_answer

FAST = {"backoff": 0.01, "max_backoff": 0.02}


def _requests(httpserver):
    return [request for request, _ in httpserver.log]


def test_the_environments_http_proxy_carries_the_requests(httpserver, monkeypatch):
    """The proxy (here the test server) receives each request in absolute form, with the engine's Host and
    the proxy's credentials; the engine's name is never resolved by us."""
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", httpserver.url_for("/").replace("http://", "http://pu:p%40ss@"))
    httpserver.expect_request("/docs/_search", method="POST").respond_with_json(es_answer([("d1", 1.0)]))
    spec = EndpointSpec("elasticsearch", "http://engine.invalid:9200/docs/_search")
    result = capture(spec, [("q1", "x")])
    assert result.ok and result.results[0].hits == [("d1", 1.0)]
    (request,) = _requests(httpserver)
    assert request.headers["Host"] == "engine.invalid:9200"
    assert request.headers["Proxy-Authorization"] == "Basic " + base64.b64encode(b"pu:p@ss").decode()


def test_a_proxy_other_than_http_is_refused_before_sending(monkeypatch):
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setenv("https_proxy", "socks5://127.0.0.1:1080")
    spec = EndpointSpec("elasticsearch", "https://engine.invalid/docs/_search")
    with pytest.raises(EndpointError, match="not an http:// proxy"):
        capture(spec, [("q1", "x")])


def test_a_non_ascii_url_is_sent_percent_encoded(httpserver):
    httpserver.expect_request("/índice/_search", method="POST").respond_with_json(es_answer([("d1", 1.0)]))
    spec = EndpointSpec("elasticsearch", httpserver.url_for("/índice/_search"))
    result = capture(spec, [("q1", "x")])
    assert result.ok, result.failures


def _socket_server(handle):
    """A TCP server on 127.0.0.1 calling `handle(conn)` for each connection in a thread; (the listening
    socket, the connections accepted so far)."""
    server = socket.create_server(("127.0.0.1", 0))
    connections = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            connections.append(conn)
            handle(conn)

    threading.Thread(target=serve, daemon=True).start()
    return server, connections


def test_a_kept_alive_connection_the_engine_closed_is_replaced_without_a_retry():
    """An engine that closes each connection after one answer, without saying so (as an idle timeout
    does): the next query goes out again on a new connection, not counted as a failed attempt."""
    body = json.dumps(es_answer([("d1", 1.0)])).encode()
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )

    def answer_once(conn):
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
            while len(rest) < length:
                rest += conn.recv(65536)
            conn.sendall(answer)

    server, connections = _socket_server(answer_once)
    port = server.getsockname()[1]
    spec = EndpointSpec("elasticsearch", f"http://127.0.0.1:{port}/docs/_search")
    try:
        result = capture(spec, [("q1", "x"), ("q2", "y"), ("q3", "z")], concurrency=1, **FAST)
    finally:
        server.close()
    assert result.ok and [r.attempts for r in result.results] == [1, 1, 1]
    assert len(connections) == 3


def _self_signed(tmp_path):
    """A certificate for 127.0.0.1 that no authority signed (cryptography), written as PEM files."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return tmp_path / "cert.pem", tmp_path / "key.pem"


def test_an_engine_whose_tls_certificate_no_authority_signed_is_refused_not_retried(tmp_path):
    cert, key = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def handshake(conn):
        try:
            context.wrap_socket(conn, server_side=True).close()
        except (ssl.SSLError, OSError):
            conn.close()

    server, handshakes = _socket_server(handshake)
    spec = EndpointSpec("elasticsearch", f"https://127.0.0.1:{server.getsockname()[1]}/docs/_search")
    try:
        result = capture(spec, [("q1", "x")], retries=2, **FAST)
    finally:
        server.close()
    (failed,) = result.failures
    assert failed.error.startswith("could not connect to the engine: TLS certificate rejected: ")
    assert "self-signed" in failed.error and failed.attempts == 1 and len(handshakes) == 1

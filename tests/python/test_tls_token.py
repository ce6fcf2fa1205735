"""TLS (with a client certificate) and a bearer token from Python, against a
real aggregator started with --tls_cert, --tls_key, --tls_client_ca and
--token_file. Certificates are made with /usr/bin/openssl (skipped without
it), as tests/aggregator/process/tls_tokens_test.cc makes them."""

import os
import subprocess

import pytest
import torch

import entrograd
from conftest import Aggregator, binary_path

OPENSSL = "/usr/bin/openssl"
TOKEN = "s3cret-token"


def openssl(*args):
    subprocess.run([OPENSSL, *args], check=True, capture_output=True, timeout=60)


def make_leaf(directory, name, subject, serial, extensions):
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(directory / f"{name}.key"),
            "-out", str(directory / f"{name}.csr"), "-subj", subject)
    openssl("x509", "-req", "-in", str(directory / f"{name}.csr"),
            "-CA", str(directory / "ca.pem"), "-CAkey", str(directory / "ca.key"),
            "-set_serial", serial, "-days", "2", "-sha256",
            "-out", str(directory / f"{name}.pem"), "-extfile", str(ext))


@pytest.fixture(scope="module")
def secure_aggregator(tmp_path_factory):
    if not os.access(OPENSSL, os.X_OK):
        pytest.skip(f"{OPENSSL} is not installed (apt-get install openssl)")
    directory = tmp_path_factory.mktemp("tls")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(directory / "ca.key"), "-out", str(directory / "ca.pem"),
            "-days", "2", "-sha256", "-subj", "/CN=entrograd test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    make_leaf(directory, "server", "/CN=localhost", "2",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
              "basicConstraints=critical,CA:FALSE\n"
              "keyUsage=critical,digitalSignature,keyEncipherment\n"
              "extendedKeyUsage=serverAuth\n")
    make_leaf(directory, "client", "/CN=entrograd test worker", "3",
              "basicConstraints=critical,CA:FALSE\n"
              "keyUsage=critical,digitalSignature\n"
              "extendedKeyUsage=clientAuth\n")
    tokens = directory / "tokens"
    tokens.write_text(f"* {TOKEN}\n")
    server = Aggregator(binary_path("ENTROGRAD_AGGREGATOR"), [
        f"--tls_cert={directory / 'server.pem'}", f"--tls_key={directory / 'server.key'}",
        f"--tls_client_ca={directory / 'ca.pem'}", f"--token_file={tokens}"])
    yield server, entrograd.TLS(ca_file=str(directory / "ca.pem"),
                                cert_file=str(directory / "client.pem"),
                                key_file=str(directory / "client.key"))
    server.stop()


def model():
    torch.manual_seed(0)
    return torch.nn.Linear(300, 4)


def test_mtls_and_token_train(secure_aggregator):
    server, tls = secure_aggregator
    net = model()
    client = entrograd.Client(shards=[server.address], job_id="secure", rank=0,
                              world_size=1, token=TOKEN, tls=tls)
    optimizer = entrograd.DistributedOptimizer(net.named_parameters(), client, lr=0.1)
    before = entrograd.hash_parameters(list(net.parameters()))
    net(torch.randn(8, 300)).sum().backward()
    stats = optimizer.step()
    assert stats.step == 0 and stats.downlink_wire_bytes > 0
    assert entrograd.hash_parameters(list(net.parameters())) != before
    client.close()


def test_wrong_token_is_refused(secure_aggregator):
    server, tls = secure_aggregator
    client = entrograd.Client(shards=[server.address], job_id="secure-bad", rank=0,
                              world_size=1, token="wrong", tls=tls, join_timeout=10.0)
    with pytest.raises(entrograd.Error) as info:
        entrograd.DistributedOptimizer(model().named_parameters(), client, lr=0.1)
    assert info.value.code in ("UNAUTHENTICATED", "PERMISSION_DENIED"), info.value


def test_plaintext_client_cannot_connect(secure_aggregator):
    server, _ = secure_aggregator
    client = entrograd.Client(shards=[server.address], job_id="secure-plain", rank=0,
                              world_size=1, token=TOKEN, join_timeout=3.0)
    with pytest.raises(entrograd.UnavailableError):
        entrograd.DistributedOptimizer(model().named_parameters(), client, lr=0.1)

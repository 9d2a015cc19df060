"""`argo-doctor github-app check` against a local server that validates JWTs the way GitHub does."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import jwt
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from argo_doctor.cli import main
from argo_doctor.github import app as github_app
from argo_doctor.github.jwt_window import EXPIRED_TEXT, IAT_TEXT, TOO_FAR_TEXT, Verdict, Window, verdicts
from argo_doctor.report.github import result_text

APP_ID = "356712"
INSTALLATION = "41236985"
TOKEN = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"


def _key() -> tuple[bytes, rsa.RSAPublicKey]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption())
    return pem, key.public_key()


PEM, PUBLIC = _key()
OTHER_PEM, _ = _key()


class FakeGitHub(ThreadingHTTPServer):
    """GitHub's access_tokens endpoint, with a clock that can be set off."""

    skew = 0.0  # GitHub's clock − the real clock

    def now(self) -> float:
        return time.time() + self.skew


class Handler(BaseHTTPRequestHandler):
    server: FakeGitHub

    def log_message(self, *args: object) -> None:
        pass

    def date_time_string(self, timestamp: float | None = None) -> str:
        return formatdate(self.server.now(), usegmt=True)

    def _answer(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        parts = self.path.strip("/").split("/")
        if parts[-4:-2] != ["app", "installations"] or parts[-1] != "access_tokens":
            self._answer(404, {"message": "Not Found"})
            return
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ")
        try:
            claims = jwt.decode(token, PUBLIC, algorithms=["RS256"], options={"verify_exp": False, "verify_iat": False})
        except jwt.InvalidTokenError:
            self._answer(401, {"message": "A JSON web token could not be decoded"})
            return
        now = self.server.now()
        if not isinstance(claims.get("iat"), int) or claims["iat"] > now:
            self._answer(401, {"message": IAT_TEXT})
        elif not isinstance(claims.get("exp"), int) or claims["exp"] <= now:
            self._answer(401, {"message": EXPIRED_TEXT})
        elif claims["exp"] - now > 600:
            self._answer(401, {"message": TOO_FAR_TEXT})
        elif claims.get("iss") != APP_ID:
            self._answer(401, {"message": "Integration not found"})
        elif parts[-2] != INSTALLATION:
            self._answer(404, {"message": "Not Found"})
        else:
            self._answer(201, {"token": TOKEN, "expires_at": "2026-11-21T11:15:00Z", "permissions": {}})


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    server = FakeGitHub(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: FakeGitHub) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/api/v3"


def _check(server: FakeGitHub, offset: float = 0.0, pem: bytes = PEM, installation: str = INSTALLATION):
    return github_app.check(APP_ID, installation, pem, _url(server), offset)


def test_in_sync_gets_a_token(fake_github: FakeGitHub) -> None:
    result = _check(fake_github)
    assert result.status == 201 and result.verdict.startswith("GitHub issued")
    assert result.github_message == "installation token issued (expires 2026-11-21T11:15:00Z)"
    assert result.server_offset is not None and abs(result.server_offset) <= result.server_offset_bound  # type: ignore[operator]
    assert result.iat_in is not None and -31.5 <= result.iat_in <= -28.5
    assert result.exp_in is not None and 88.5 <= result.exp_in <= 91.5


@pytest.mark.parametrize(
    ("offset", "message"),
    [(-187, EXPIRED_TEXT), (-95, EXPIRED_TEXT), (45, IAT_TEXT), (600, IAT_TEXT)],
)
def test_skewed_signers_are_refused_with_githubs_text(fake_github: FakeGitHub, offset: float, message: str) -> None:
    result = _check(fake_github, offset)
    assert result.status == 401 and result.github_message == message
    assert "time claims" in result.verdict and "not the credentials" in result.verdict
    assert result.exp_in is not None and abs(result.exp_in - (90 + offset)) <= 2


def test_near_the_limits_still_passes(fake_github: FakeGitHub) -> None:
    assert _check(fake_github, -80).status == 201
    assert _check(fake_github, 25).status == 201


def test_a_skewed_github_is_measured_from_its_date_header(fake_github: FakeGitHub) -> None:
    fake_github.skew = 200.0  # GitHub ahead: our JWT looks expired to it
    result = _check(fake_github)
    assert result.status == 401 and result.github_message == EXPIRED_TEXT
    assert result.server_offset is not None and abs(result.server_offset + 200) <= 1.6
    assert "behind" in result_text(result)


def test_wrong_key_and_wrong_installation(fake_github: FakeGitHub) -> None:
    wrong_key = _check(fake_github, pem=OTHER_PEM)
    assert wrong_key.status == 401 and "wrong private key" in wrong_key.verdict
    wrong_installation = _check(fake_github, installation="1")
    assert wrong_installation.status == 404 and "installation" in wrong_installation.verdict


def test_cli_never_prints_the_token_or_the_key(fake_github: FakeGitHub, tmp_path: Path) -> None:
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(PEM)
    for output in ("text", "json"):
        result = CliRunner().invoke(main, [
            "github-app", "check", "--app-id", APP_ID, "--installation-id", INSTALLATION,
            "--private-key", str(key_file), "--api-url", _url(fake_github), "-o", output,
        ])
        assert result.exit_code == 0, result.output
        body = PEM.decode().splitlines()[1]
        assert TOKEN not in result.output and body not in result.output and "eyJ" not in result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == 201 and doc["jwt"]["exp"] - doc["jwt"]["iat"] == 120
    refused = CliRunner().invoke(main, [
        "github-app", "check", "--app-id", APP_ID, "--installation-id", INSTALLATION, "--private-key", str(key_file),
        "--api-url", _url(fake_github), "--clock-offset", "-187",
    ])
    assert refused.exit_code == 1 and EXPIRED_TEXT in refused.output


def test_bad_key_and_unreachable_github(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN RSA PRIVATE KEY-----\nnot a key\n-----END RSA PRIVATE KEY-----\n")
    result = CliRunner().invoke(main, ["github-app", "check", "--app-id", "1", "--installation-id", "2",
                                       "--private-key", str(bad)])
    assert result.exit_code == 2 and "not an unencrypted PEM RSA key" in result.output
    assert "not a key" not in result.output
    good = tmp_path / "key.pem"
    good.write_bytes(PEM)
    result = CliRunner().invoke(main, ["github-app", "check", "--app-id", "1", "--installation-id", "2",
                                       "--private-key", str(good), "--api-url", "http://127.0.0.1:9"])
    assert result.exit_code == 2 and "could not be reached" in result.output


@pytest.mark.parametrize(
    ("offset", "verdict"),
    [(0, Verdict.ACCEPTED), (-89, Verdict.ACCEPTED), (-91, Verdict.EXPIRED), (29, Verdict.ACCEPTED),
     (31, Verdict.IAT_IN_FUTURE), (511, Verdict.EXP_TOO_FAR)],
)
def test_window_arithmetic(offset: float, verdict: Verdict) -> None:
    assert Window(offset).verdict is verdict


def test_verdicts_over_an_uncertain_offset() -> None:
    assert verdicts(-188, -186) == {Verdict.EXPIRED}
    assert verdicts(-91, -89) == {Verdict.EXPIRED, Verdict.ACCEPTED}
    assert verdicts(-1, 1) == {Verdict.ACCEPTED}


def _endless() -> Iterator[bytes]:
    yield b'{"message": "'
    while True:
        yield b"x" * 65536


@pytest.mark.parametrize(("body", "message"), [
    (b"[" * 300_000 + b"]" * 300_000, "[" * 300),  # too deep to decode: its first 300 bytes, as for any non-JSON
    (None, None),  # a server that never stops: read up to the cap, then not JSON
])
def test_a_hostile_api_url_answer_is_bounded(body: bytes | None, message: str | None) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, content=_endless() if body is None else body)

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        result = github_app.check(APP_ID, INSTALLATION, PEM, "https://ghe.example.com/api/v3", client=client)
    assert result.status == 403 and result.error is None
    expected = message if message is not None else '{"message": "' + "x" * 287
    assert result.github_message == expected

"""The download command's core, against a local HTTP server: never the internet."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import pytest_ruler.data.download as dl
from pytest_ruler.data.download import (
    DATA_FILES,
    DOWNLOAD_KINDS,
    ESSAY_HTML_NAMES,
    ESSAY_TXT_NAMES,
    RulerDownloadError,
    data_file,
    default_data_dir,
    download,
    essay_text_from_html,
)
from pytest_ruler.errors import RulerDataError, RulerUsageError
from pytest_ruler.data.qa import load_hotpotqa, load_squad

DATA = Path(__file__).resolve().parents[2] / "data"


class _Handler(SimpleHTTPRequestHandler):
    """Serves files; ``/cut/...`` promises 1000 bytes and closes after 10."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/cut/"):
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"data": [')
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # the essay download opens 8 connections at once


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    httpd = _Server(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def dead_url() -> str:
    """A local port with nothing listening: connections are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# -- names and places ----------------------------------------------------------


def test_default_data_dir_prefers_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RULER_DATA_DIR", str(tmp_path / "d"))
    assert default_data_dir() == tmp_path / "d"
    assert data_file("squad") == tmp_path / "d" / "squad.json"
    monkeypatch.delenv("RULER_DATA_DIR")
    monkeypatch.delenv("RULER_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".cache" / "pytest-ruler" / "data"
    # without RULER_DATA_DIR, downloads live in the pytest-ruler cache folder
    monkeypatch.setenv("RULER_CACHE_DIR", str(tmp_path / "cache"))
    assert default_data_dir() == tmp_path / "cache" / "data"


def test_sources_match_the_paper() -> None:
    assert len(ESSAY_TXT_NAMES) == len(set(ESSAY_TXT_NAMES)) == 49
    assert len(ESSAY_HTML_NAMES) == len(set(ESSAY_HTML_NAMES)) == 169
    assert DATA_FILES["essays"] == "PaulGrahamEssays.json"
    assert set(DATA_FILES) == set(DOWNLOAD_KINDS)


def test_unknown_kind_is_a_usage_error_listing_choices(tmp_path: Path) -> None:
    with pytest.raises(RulerUsageError) as info:
        download("wikipedia", tmp_path)
    assert info.value.parameter == "kind" and info.value.value == "wikipedia"
    assert all(k in info.value.fix for k in ("essays", "squad", "hotpotqa"))
    assert _leftovers(tmp_path) == []


def test_unknown_base_url_key_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(RulerUsageError) as info:
        download("squad", tmp_path, base_urls={"sqaud": "http://127.0.0.1:1/"})
    assert info.value.parameter == "base_urls" and "squad" in info.value.fix


# -- SQuAD / HotpotQA ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "fixture", "remote", "loader"),
    [
        ("squad", "squad_mini.json", "dev-v2.0.json", load_squad),
        (
            "hotpotqa",
            "hotpotqa_mini.json",
            "hotpot_dev_distractor_v1.json",
            load_hotpotqa,
        ),
    ],
)
def test_dataset_lands_byte_for_byte(
    server: tuple[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    fixture: str,
    remote: str,
    loader: object,
) -> None:
    url, root = server
    (root / kind).mkdir()
    shutil.copy(DATA / fixture, root / kind / remote)
    dest = tmp_path / "out"

    written = download(kind, dest, base_urls={kind: f"{url}/{kind}"}, timeout=5)

    assert written == dest / DATA_FILES[kind]
    assert written.read_bytes() == (DATA / fixture).read_bytes()
    assert _leftovers(dest) == [DATA_FILES[kind]]
    assert loader(written).items  # type: ignore[operator]
    err = capsys.readouterr().err
    assert f"{url}/{kind}/{remote}" in err and str(written) in err


def test_http_error_leaves_nothing_and_keeps_a_good_file(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = server
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "squad.json").write_text("previous good file")

    with pytest.raises(RulerDownloadError) as info:
        download("squad", dest, base_urls={"squad": f"{url}/missing/"}, timeout=5)

    message = str(info.value)
    assert "404" in message and "--ruler-squad PATH" in message
    assert isinstance(
        info.value, RulerDataError
    )  # the CLI prints usage/data errors once
    assert _leftovers(dest) == ["squad.json"]
    assert (dest / "squad.json").read_text() == "previous good file"


def test_connection_cut_short_leaves_no_partial_file(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = server
    dest = tmp_path / "out"
    with pytest.raises(RulerDownloadError) as info:
        download("squad", dest, base_urls={"squad": f"{url}/cut/"}, timeout=5)
    assert "closed after 10 of 1000 bytes" in str(info.value)
    assert _leftovers(dest) == []


def test_a_page_that_is_not_the_dataset_is_refused(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = server
    (root / "portal").mkdir()
    (root / "portal" / "hotpot_dev_distractor_v1.json").write_text(
        "<html>Sign in to the Wi-Fi</html>"
    )
    dest = tmp_path / "out"
    with pytest.raises(RulerDownloadError) as info:
        download("hotpotqa", dest, base_urls={"hotpotqa": f"{url}/portal/"}, timeout=5)
    assert "not valid JSON" in str(info.value) and "--ruler-hotpotqa PATH" in str(
        info.value
    )
    assert _leftovers(dest) == []


def test_default_sources_are_checked_against_the_papers_digest(
    server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = server
    shutil.copy(DATA / "squad_mini.json", root / "dev-v2.0.json")
    monkeypatch.setattr(
        dl, "DEFAULT_BASE_URLS", {**dl.DEFAULT_BASE_URLS, "squad": f"{url}/"}
    )
    dest = tmp_path / "out"
    with pytest.raises(RulerDownloadError) as info:
        download("squad", dest, timeout=5)
    assert "not the file the RULER paper used" in str(info.value)
    assert _leftovers(dest) == []


@pytest.mark.parametrize(
    ("kind", "option"), [("squad", "--ruler-squad"), ("essays", "--ruler-essays")]
)
def test_unreachable_host_says_offline_and_how_to_supply_by_hand(
    dead_url: str, tmp_path: Path, kind: str, option: str
) -> None:
    bases = (
        {"squad": dead_url}
        if kind == "squad"
        else {"essays_txt": dead_url, "essays_html": dead_url}
    )
    dest = tmp_path / "out"
    with pytest.raises(RulerDownloadError) as info:
        download(kind, dest, base_urls=bases, timeout=5)
    message = str(info.value)
    assert "offline" in message and f"{option} PATH" in message
    assert info.value.parameter == f"pytest-ruler download {kind}"
    assert _leftovers(dest) == []


# -- essays ----------------------------------------------------------------------

_PAGE = """<html><head><title>Title bar</title>
<script>var tracking = "<b>no</b>";</script><style>p {{ color: red }}</style></head>
<body><table><tr><td><img src="x.gif" alt="nav"></td></tr></table>
<font size="2" face="verdana">Essay {name} opens here.<br><br>It&#8217;s got
<a href="y.html">a link</a>, <b>bold</b> &amp; an entity.
<font color="#999999">[1]</font> Still the essay.<br><br></font>
<font size="1">Footer that is not the essay.</font></body></html>
"""


def _serve_essays(root: Path, skip: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    (root / "txt").mkdir()
    (root / "html").mkdir()
    for name in ESSAY_TXT_NAMES:
        if name not in skip:
            (root / "txt" / f"{name}.txt").write_text(
                f"Text essay {name}.\nSecond line.", encoding="utf-8"
            )
    for name in ESSAY_HTML_NAMES:
        if name not in skip:
            (root / "html" / f"{name}.html").write_text(
                _PAGE.format(name=name), encoding="utf-8"
            )


def test_essay_text_from_html_keeps_the_essay_only() -> None:
    text = essay_text_from_html(_PAGE.format(name="x"))
    assert text == (
        "Essay x opens here.\n\n"
        "It\u2019s got a link, bold & an entity. [1] Still the essay."
    )
    assert essay_text_from_html("<p>No font</p><p>at all</p>") == "No font\n\nat all"


def test_essays_land_as_rulers_json_in_rulers_order(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = server
    _serve_essays(root)
    dest = tmp_path / "out"

    written = download(
        "essays",
        dest,
        base_urls={"essays_txt": f"{url}/txt/", "essays_html": f"{url}/html/"},
        timeout=5,
    )

    assert written == dest / "PaulGrahamEssays.json"
    assert _leftovers(dest) == ["PaulGrahamEssays.json"]
    payload = json.loads(written.read_text())
    assert list(payload) == ["text"]
    text = payload["text"]
    assert "<" not in text and "tracking" not in text and "Footer" not in text
    assert "Title bar" not in text and "color: red" not in text
    assert text.startswith("Text essay addiction.\nSecond line.\nText essay aord.")
    first_html = text.index("Essay 13sentences opens here.")
    assert (
        text.index("Text essay worked.")
        < first_html
        < text.index("Essay ycstart opens here.")
    )
    assert text.count("opens here.") == 169 and text.count("Second line.") == 49


def test_missing_essay_pages_are_skipped_with_a_warning(
    server: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, root = server
    _serve_essays(root, skip={"wtax", "addiction"})
    written = download(
        "essays",
        tmp_path,
        base_urls={"essays_txt": f"{url}/txt/", "essays_html": f"{url}/html/"},
        timeout=5,
    )
    text = json.loads(written.read_text())["text"]
    assert "Essay wtax" not in text and "Text essay addiction" not in text
    err = capsys.readouterr().err
    assert "2 of 218 essays could not be fetched" in err and "wtax.html" in err


def test_essays_all_missing_is_an_error_and_writes_nothing(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = server
    with pytest.raises(RulerDownloadError) as info:
        download(
            "essays",
            tmp_path / "out",
            base_urls={"essays_txt": f"{url}/none/", "essays_html": f"{url}/none/"},
            timeout=5,
        )
    assert "404" in str(info.value) and "--ruler-essays PATH" in str(info.value)
    assert _leftovers(tmp_path / "out") == []


def test_mirror_is_tried_when_the_default_source_fails(
    server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = server
    fixture = DATA / "hotpotqa_mini.json"
    shutil.copy(fixture, root / "mirror.json")
    digest = hashlib.sha256(fixture.read_bytes()).hexdigest()
    monkeypatch.setattr(
        dl, "DEFAULT_BASE_URLS", {**dl.DEFAULT_BASE_URLS, "hotpotqa": f"{url}/gone/"}
    )
    monkeypatch.setattr(dl, "MIRRORS", {"hotpotqa": (f"{url}/mirror.json",)})
    monkeypatch.setattr(
        dl, "EXPECTED_DIGESTS", {**dl.EXPECTED_DIGESTS, "hotpotqa": ("sha256", digest)}
    )
    written = download("hotpotqa", tmp_path / "out", timeout=5)
    assert written.read_bytes() == fixture.read_bytes()
    assert _leftovers(tmp_path / "out") == ["hotpotqa.json"]


# -- a name lookup that hangs (issue 35) ------------------------------------------


def test_a_hanging_name_lookup_is_said_and_ends_at_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """socket.getaddrinfo has no timeout: the download says where it connects before it waits,
    and the lookup ends with the download's timeout (not minutes later, with the resolver's error)."""
    real = socket.getaddrinfo
    release = threading.Event()

    def getaddrinfo(host: str, *args: object, **kwargs: object) -> object:
        if host == "slow-dns.test":
            release.wait(10)  # the resolver hangs (until the test ends)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        with pytest.raises(RulerDownloadError) as info:
            download("squad", tmp_path, base_urls={"squad": "http://slow-dns.test:8080/"}, timeout=0.5)
    finally:
        release.set()
    assert "name lookup of 'slow-dns.test' did not finish within 0.5 s" in info.value.reason
    err = capsys.readouterr().err
    said = err.index("connecting to slow-dns.test")
    assert err.index("downloading squad from http://slow-dns.test:8080/") < said  # said before the wait
    assert _leftovers(tmp_path) == []

"""Items' images (issue #42): copied into the workspace under their sha256; what a hostile table cannot do.

A results file is someone else's: its ``image`` column must not put a private file of the lead's on
every reviewer's screen, smuggle in what is not an image, fill the disk, or reach the network
unasked. Fetching is tested against a real HTTP server on loopback.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotate.ingest.media import MAX_IMAGE_BYTES, ImageStore, image_uri
from tests.labelstudio.test_images_browser import png
from tests.pipeline.test_import_labels import run

RED = png(8, 6, (200, 0, 0))


@pytest.fixture
def server() -> Iterator[str]:
    """A loopback HTTP server: /red.png, /text (not an image), /big (over the bound), /to-file (a redirect)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            bodies = {"/red.png": RED, "/text": b"<svg onload=alert(1)>", "/big": b"\x89PNG\r\n\x1a\n" * 700_000}
            if self.path == "/to-file":
                self.send_response(302)
                self.send_header("Location", "file:///etc/passwd")
                self.end_headers()
                return
            body = bodies.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def test_an_image_beside_the_table_is_copied_once_under_its_hash(tmp_path):
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "red.png").write_bytes(RED)
    (tmp_path / "imgs" / "again.png").write_bytes(RED)
    store = ImageStore(tmp_path / "ws" / "media")
    name, why = store.add("imgs/red.png", tmp_path)
    assert why is None and name is not None and name.endswith(".png") and len(name) == 64 + 4
    assert store.add("imgs/again.png", tmp_path) == (name, None) and store.copied == 1  # one file per content
    assert (tmp_path / "ws" / "media" / name).read_bytes() == RED
    uri = image_uri(tmp_path / "ws" / "media", name)
    assert uri.startswith("data:image/png;base64,")
    # an image changed in media/ after ingest is not sent as if it were the one ingested
    (tmp_path / "ws" / "media" / name).write_bytes(RED + b"x")
    with pytest.raises(ValueError, match="not the image ingested"):
        image_uri(tmp_path / "ws" / "media", name)


def test_a_hostile_table_cannot_reach_files_outside_its_folder_nor_pass_other_content(tmp_path):
    table_dir = tmp_path / "table"
    table_dir.mkdir()
    secret = tmp_path / "private.png"
    secret.write_bytes(RED)
    (table_dir / "link.png").symlink_to(secret)
    (table_dir / "page.png").write_bytes(b"<svg onload=alert(1)></svg>")
    (table_dir / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * MAX_IMAGE_BYTES)
    store = ImageStore(tmp_path / "media")
    said = {ref: store.add(ref, table_dir)[1] for ref in (
        str(secret), "../private.png", "link.png", "page.png", "huge.png", "missing.png", "C:\\x.png",
        "file:///etc/passwd", "http://127.0.0.1:9/x.png",
    )}  # fmt: skip
    assert "an absolute path" in said[str(secret)] and "an absolute path" in said["C:\\x.png"]
    assert "outside the table's folder" in said["../private.png"] and "outside" in said["link.png"]
    assert "not a PNG, JPEG, GIF or WebP image" in said["page.png"]
    assert "larger than" in said["huge.png"] and "no such file" in said["missing.png"]
    assert "only http and https" in said["file:///etc/passwd"]
    assert "pass --fetch-images" in said["http://127.0.0.1:9/x.png"]
    assert store.add(42, table_dir)[1] == "field 'image' must be a path or URL (text)"
    assert not (tmp_path / "media").exists()  # nothing was copied


def test_urls_are_fetched_only_when_asked_and_only_as_images(tmp_path, server):
    store = ImageStore(tmp_path / "media", fetch=True)
    name, why = store.add(f"{server}/red.png", tmp_path)
    assert why is None and (tmp_path / "media" / str(name)).read_bytes() == RED
    assert "not a PNG" in str(store.add(f"{server}/text", tmp_path)[1])
    assert "larger than" in str(store.add(f"{server}/big", tmp_path)[1])
    assert "could not be fetched" in str(store.add(f"{server}/to-file", tmp_path)[1])  # no redirect to file:
    assert "could not be fetched" in str(store.add(f"{server}/missing", tmp_path)[1])


def test_ingest_stores_the_image_in_the_response_s_identity(workspace, runner, tmp_path):
    ws, prefix = workspace
    (tmp_path / "a.png").write_bytes(RED)
    (tmp_path / "b.png").write_bytes(png(8, 6, (0, 0, 200)))
    row = {"model": "m", "benchmark": "b", "prompt_id": "p", "prompt": "q", "response": "r", "judge_label": "safe"}
    first = tmp_path / "first.jsonl"
    first.write_text(json.dumps({**row, "image": "a.png"}) + "\n")
    out = json.loads(run(runner, prefix, "ingest", first, "--json").output)
    assert out[0]["images"] == 1 and len(list((ws / "media").iterdir())) == 1
    # the same key with another image is another content: a conflict, as another text would be
    second = tmp_path / "second.jsonl"
    second.write_text(json.dumps({**row, "image": "b.png"}) + "\n")
    refused = run(runner, prefix, "ingest", second, code=2)
    assert "image" in refused.stderr and "--replace" in refused.stderr
    # and a hostile row is refused on its line, with nothing stored
    third = tmp_path / "third.jsonl"
    third.write_text(json.dumps({**row, "prompt_id": "p2", "image": "../../etc/passwd"}) + "\n")
    assert "third.jsonl:1: image '../../etc/passwd'" in run(runner, prefix, "ingest", third, code=2).stderr


def test_the_default_config_shows_the_image_only_to_rounds_that_have_images():
    from annotate.labelstudio.labelconfig import parse_label_config, round_label_config

    xml = (Path(__file__).parents[2] / "label_config.xml").read_text(encoding="utf-8")
    assert parse_label_config(xml).image == "image"
    plain = parse_label_config(round_label_config(xml, dialogue=False, image=False))
    assert plain.image is None and "image" not in plain.variables and 'className="ls-media"' not in plain.xml
    shown = parse_label_config(round_label_config(xml, dialogue=False, image=True))
    assert shown.image == "image" and shown.dialogue is None
    # model text is never an image URL
    bad = xml.replace('<Image name="image" value="$image"', '<Image name="image" value="$response"')
    with pytest.raises(Exception, match="never model text as a URL"):
        parse_label_config(bad)

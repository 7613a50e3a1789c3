"""plexus.report's page in a browser: index.html opened in headless Chromium (Debian's
`chromium`, installed by scripts/install-deps.sh) loads with no console or script error and
shows the SVGs with the expected number of series; a screenshot is kept as a test artifact
in <build>/test-artifacts/plexus_report/ (beside the page and its pictures), or in pytest's
temporary folder when PLEXUS_BUILD_DIR is not set.

Errors are seen twice: the page's first script records any script error, resource error or
console.error in <html data-errors> (read from --dump-dom), and Chromium's own log
(--enable-logging=stderr) prints every console message as a ":CONSOLE" line; the page logs
nothing, so any such line fails. A page with a deliberate error checks that both catch it."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from plexus.report import render
from report_fixtures import KINDS, chrome_trace, memory_report, recorded_trace, svg_ids, write_json

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH = 1400  # CSS pixels; the page's height (data-height) is measured at this width
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install-deps.sh "
                                                          "installs Debian's chromium)")


def chromium(page, profile_dir, *args):
    """Runs headless Chromium on the file `page` with `args`; returns (stdout, stderr)."""
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
               f"--user-data-dir={profile_dir}", "--enable-logging=stderr", "--v=0", *args,
               pathlib.Path(page).resolve().as_uri()]
    # The browser is not ours: no sanitizer runtime preloaded into it (the ASan build's tests set one).
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    out = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout, out.stderr


def page_state(page, profile_dir):
    """Opens `page` WIDTH pixels wide and returns (the <html> tag's attributes, the dumped DOM,
    the console lines of Chromium's log)."""
    dom, log = chromium(page, profile_dir, "--dump-dom", f"--window-size={WIDTH},1000")
    tag = re.search(r"<html\b([^>]*)>", dom).group(1)
    attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
    return attributes, dom, [line for line in log.splitlines() if ":CONSOLE" in line]


def artifact_dir(tmp_path):
    """Where the page and its screenshot are kept: <PLEXUS_BUILD_DIR>/test-artifacts/plexus_report."""
    build = os.environ.get("PLEXUS_BUILD_DIR")
    if not build:
        return tmp_path / "artifacts"
    out = pathlib.Path(build) / "test-artifacts" / "plexus_report"
    shutil.rmtree(out, ignore_errors=True)
    return out


def test_the_page_loads_without_errors_and_shows_every_series(tmp_path):
    out = artifact_dir(tmp_path)
    reports = [("two_devices", write_json(tmp_path / "a.json", memory_report(num_devices=2, num_steps=40))),
               ("three_devices", write_json(tmp_path / "b.json", memory_report(num_devices=3, num_steps=25)))]
    trace = recorded_trace(micro_batches=4, device_iterations=2)
    page = render(out, reports, write_json(tmp_path / "trace.json", trace))[-1]
    attributes, dom, console = page_state(page, tmp_path / "profile")
    assert "data-errors" not in attributes and console == []
    assert attributes["data-loaded"] == "3"
    svgs = re.findall(r"<svg\b.*?</svg>", dom, flags=re.S)
    assert len(svgs) == 3
    ids = [svg_ids(svg) for svg in svgs]
    assert [sum(1 for i in s if "-series-" in i) for s in ids] == [2 * len(KINDS), 3 * len(KINDS), 0]
    boxes = sum(1 for i in ids[2] if re.fullmatch(r"fig-pipeline-box-(forward|backward)-\d+", i))
    assert boxes == sum(1 for e in trace["traceEvents"] if e.get("cat") in ("forward", "backward")) == 2 * 2 * 4 * 2
    shot = out / "index.png"
    height = int(attributes["data-height"])
    assert height > 2000   # five memory panels, their tables and the pipeline
    chromium(page, tmp_path / "profile", f"--screenshot={shot}", f"--window-size={WIDTH},{height}", "--hide-scrollbars")
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[20:24], "big") == height  # the whole page


def test_a_page_with_an_error_is_caught(tmp_path):
    page = render(tmp_path / "out", [], write_json(tmp_path / "t.json", chrome_trace()))[-1]
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text().replace("</body>", '<script>console.error("drawn wrong"); '
                                                          'not_a_function();</script></body>'))
    attributes, _, console = page_state(broken, tmp_path / "profile")
    assert attributes["data-errors"] == "drawn wrong | Uncaught ReferenceError: not_a_function is not defined"
    assert len(console) == 2 and "drawn wrong" in console[0] and "not_a_function" in console[1]

"""plexus.report.html_page: index.html holds the SVGs inline (ids prefixed, unique in the
page, no external resource) and tables whose numbers are the JSON's."""
import collections
import json
import re

import pytest

from plexus.report import render
from plexus.report.svg_inline import inline_svg
from report_fixtures import (KINDS, chrome_trace, memory_report, shown_int, svg_ids, table_cells, write_json)

TOTALS = ("arena_bytes", "planned_peak_bytes", "variable_bytes", "remote_buffer_bytes", "offloaded_bytes")


@pytest.fixture
def page(tmp_path):
    """A page of two memory reports (2 and 3 devices) and a trace; returns (docs, html text)."""
    docs = {"rts": memory_report(num_devices=2, seed=1), "plain": memory_report(num_devices=3, seed=2),
            "trace": chrome_trace(stages=2, micro_batches=3, iterations=1)}
    paths = {k: write_json(tmp_path / f"{k}.json", d) for k, d in docs.items()}
    written = render(tmp_path / "out", [("rts", paths["rts"]), ("plain", paths["plain"])], paths["trace"])
    assert [p.name for p in written] == ["memory-rts.png", "memory-rts.svg", "memory-plain.png", "memory-plain.svg",
                                         "pipeline.png", "pipeline.svg", "index.html"]
    return docs, written[-1].read_text(encoding="utf-8")


def test_the_device_tables_hold_the_reports_numbers(page):
    docs, html = page
    cells = table_cells(html)
    for label in ("rts", "plain"):
        for device in docs[label]["devices"]:
            row = f"device{device['device']}"
            for key in TOTALS:
                value, text = cells[(f"memory-{label}-devices", row, key)]
                assert int(value) == shown_int(text) == device[key], (label, row, key)
            tensors = device["peak"]["tensors"]
            for i, tensor in enumerate(tensors):
                table = f"memory-{label}-peak-device{device['device']}"
                assert cells[(table, f"tensor{i}", "name")][0] == tensor["name"]
                assert int(cells[(table, f"tensor{i}", "bytes")][0]) == tensor["bytes"]
            assert (f"memory-{label}-peak-device{device['device']}", f"tensor{len(tensors)}", "name") not in cells


def test_the_pipeline_tables_hold_the_traces_numbers(page):
    docs, html = page
    cells = table_cells(html)
    other = docs["trace"]["otherData"]
    value, text = cells[("pipeline-summary", "pipeline", "bubble_fraction")]
    assert float(value) == other["bubble_fraction"] and text == f"{other['bubble_fraction'] * 100:.1f}%"
    counts = collections.Counter(e["cat"] for e in docs["trace"]["traceEvents"] if e["ph"] == "X")
    assert int(cells[("pipeline-summary", "pipeline", "forward_steps")][0]) == counts["forward"] == 6
    assert int(cells[("pipeline-summary", "pipeline", "backward_steps")][0]) == counts["backward"] == 6
    assert [int(cells[("pipeline-summary", "pipeline", k)][0]) for k in ("stages", "micro_batches")] == [2, 3]
    for device, fraction in enumerate(other["busy_fraction"]):
        assert float(cells[("pipeline-busy", f"replica0-device{device}", "busy_fraction")][0]) == fraction


def test_the_svgs_are_inline_with_unique_ids(page):
    _, html = page
    svgs = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    assert len(svgs) == 3
    ids = [i for svg in svgs for i in svg_ids(svg)]
    assert len(ids) == len(set(ids))
    series = [i for i in ids if "-series-" in i]
    assert len(series) == (2 + 3) * len(KINDS)
    assert series[0] == "fig-memory-rts-device0-series-variables"
    assert all(ref in ids for ref in re.findall(r"url\(#([^)]+)\)", html))
    assert not re.search(r"""(src|href)=["'](?!#)""", html), "the page fetches nothing"
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html


def test_inline_svg_prefixes_ids_and_their_references():
    svg = ('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "x" "y">\n<svg><defs><clipPath id="c1"/></defs>'
           '<g id="s" clip-path="url(#c1)"><use xlink:href="#s"/></g></svg>')
    assert inline_svg(svg, "f") == ('<svg><defs><clipPath id="f-c1"/></defs>'
                                    '<g id="f-s" clip-path="url(#f-c1)"><use xlink:href="#f-s"/></g></svg>')


def test_page_text_is_escaped(tmp_path):
    doc = memory_report(num_devices=1)
    doc["devices"][0]["peak"]["tensors"][0]["name"] = "<b>&x"
    html = render(tmp_path / "out", [("a<b", write_json(tmp_path / "m.json", doc))])[-1].read_text()
    assert "&lt;b&gt;&amp;x" in html and "<b>&x" not in html
    assert json.loads(json.dumps(table_cells(html)[("memory-a_b-peak-device0", "tensor0", "name")][0])) == "<b>&x"

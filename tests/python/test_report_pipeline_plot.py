"""plexus.report.pipeline_plot: the pipeline diagram has one box per forward and backward
step of the trace (counted by the SVG's ids), labelled with micro-batch numbers, and the
trace's bubble fraction in its title."""
import re

from plexus.report import load_trace, plot_pipeline
from plexus.report.pipeline_plot import row_labels
from report_fixtures import chrome_trace, recorded_trace, svg_ids, svg_texts, write_json


def _diagram(tmp_path, doc):
    trace = load_trace(write_json(tmp_path / "trace.json", doc))
    png, svg = plot_pipeline(trace, tmp_path / "out")
    assert png.name == "pipeline.png" and png.read_bytes()[:4] == b"\x89PNG"
    return trace, svg.read_text(encoding="utf-8")


def _count(ids, prefix):
    return sum(1 for i in ids if re.fullmatch(rf"{prefix}-\d+", i))


def _events(doc, cat):
    return sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == cat)


def _shown_bubble(svg):
    title = svg_texts(svg, "pipeline-title")[0]
    return float(re.search(r"bubble (\d+\.\d)%", title).group(1))


def test_boxes_equal_the_recorded_traces_steps(tmp_path):
    doc = recorded_trace(micro_batches=4, device_iterations=2)
    _, svg = _diagram(tmp_path, doc)
    ids = svg_ids(svg)
    forward, backward = _events(doc, "forward"), _events(doc, "backward")
    assert (forward, backward) == (2 * 4 * 2, 2 * 4 * 2)
    assert (_count(ids, "box-forward"), _count(ids, "box-backward")) == (forward, backward)
    assert _count(ids, "box-update") == _events(doc, "update") == 2 * 2
    assert _shown_bubble(svg) == round(doc["otherData"]["bubble_fraction"] * 100, 1)


def test_wide_boxes_carry_their_micro_batch_number(tmp_path):
    doc = chrome_trace(stages=3, micro_batches=4, iterations=2, replicas=2)
    trace, svg = _diagram(tmp_path, doc)
    ids = svg_ids(svg)
    assert _count(ids, "box-forward") + _count(ids, "box-backward") == _events(doc, "forward") + _events(
        doc, "backward") == 2 * 3 * 4 * 2 * 2
    # Every synthetic box is 100 us of a 3 ms run on a 10-inch axis: wide enough for its label.
    forward_steps = [s for s in trace.steps if s.kind == "forward"]
    labels = [svg_texts(svg, f"label-forward-{n}")[0] for n in range(len(forward_steps))]
    assert labels == [str(s.micro_batch) for s in forward_steps]
    assert _shown_bubble(svg) == round(doc["otherData"]["bubble_fraction"] * 100, 1)
    title = svg_texts(svg, "pipeline-title")[0]
    assert title.startswith("Pipeline: 3 stages, 4 micro-batches x 2 iterations;")


def test_rows_are_stages_per_replica(tmp_path):
    trace = load_trace(write_json(tmp_path / "t.json", chrome_trace(stages=2, replicas=2)))
    assert row_labels(trace) == [((0, 0), "replica 0 stage 0 (S0)"), ((0, 1), "replica 0 stage 1 (S1)"),
                                 ((1, 0), "replica 1 stage 0 (S0)"), ((1, 1), "replica 1 stage 1 (S1)")]
    one = load_trace(write_json(tmp_path / "one.json", chrome_trace(stages=2, replicas=1)))
    assert [label for _, label in row_labels(one)] == ["stage 0 (S0)", "stage 1 (S1)"]

"""All of the report from its inputs: the pictures of each memory report and of a trace,
then the page that shows them."""
import os

from plexus.report.chrome_trace import load_trace
from plexus.report.html_page import write_page
from plexus.report.json_input import ReportInputError
from plexus.report.memory_plot import file_label, plot_memory
from plexus.report.memory_report import load_memory_report
from plexus.report.pipeline_plot import plot_pipeline


def parse_memory_argument(text):
    """--memory's value "[LABEL=]FILE" as (label, path): LABEL defaults to the file's stem. A
    text that names an existing file is a path even if it holds '='. Raises
    ReportInputError for an empty label or path."""
    label, sep, path = text.partition("=")
    if not sep or os.path.exists(text) or "/" in label:
        return os.path.splitext(os.path.basename(text))[0], text
    if not label or not path:
        raise ReportInputError(f"--memory {text}: expected [LABEL=]FILE with a non-empty label and file")
    return label, path


def render(out_dir, memory=(), trace=None, top_tensors=5):
    """Reads every (label, path) of `memory` (memory report JSON) and the Chrome trace at
    `trace` (or None), checks them all before drawing, then writes into `out_dir`:
    memory-<label>.png/.svg per report, pipeline.png/.svg for the trace, and index.html.
    Returns the list of written paths (pathlib.Path), the page last. Raises
    ReportInputError when nothing is given, a label repeats, or an input is bad (naming
    the file and the key)."""
    if not memory and trace is None:
        raise ReportInputError("nothing to draw: give --memory REPORT.json and/or --trace TRACE.json")
    labels = [file_label(label) for label, _ in memory]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ReportInputError(f"--memory: label '{repeated[0]}' names two reports (give LABEL=FILE)")
    reports = [load_memory_report(path, label) for label, path in memory]
    pipeline = load_trace(trace) if trace is not None else None
    written, sections = [], []
    for report in reports:
        png, svg = plot_memory(report, out_dir, top_tensors)
        written += [png, svg]
        sections.append((report, svg))
    pipeline_section = None
    if pipeline is not None:
        png, svg = plot_pipeline(pipeline, out_dir)
        written += [png, svg]
        pipeline_section = (pipeline, svg)
    return written + [write_page(out_dir, sections, pipeline_section)]

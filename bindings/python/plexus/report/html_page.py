"""The report's HTML page (index.html): self-contained (the SVG pictures inline, no file or
network fetched), with tables of the numbers behind the pictures.

Every number cell is <td data-key="<key>" data-value="<exact value>"> in a <tr data-row>
of a <table id>; tests and scripts read the values from there. A first script records any
script or resource error of the page in the data-errors attribute of <html>, and once the
page has loaded the number of SVGs in data-loaded and its height in CSS pixels in
data-height (headless Chromium checks read them)."""
from html import escape
import pathlib

from plexus.report.figures import format_bytes, format_percent
from plexus.report.memory_plot import file_label
from plexus.report.memory_report import DEVICE_TOTALS
from plexus.report.svg_inline import inline_svg

PEAK_TENSORS_SHOWN = 20
_ERROR_MARKER = """<script>
(function () {
  var errors = [];
  function note(text) {
    errors.push(String(text));
    document.documentElement.setAttribute("data-errors", errors.join(" | "));
  }
  window.addEventListener("error", function (e) {
    note(e.message || ("failed to load " + (e.target && (e.target.src || e.target.href || e.target.tagName))));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { note("unhandled rejection: " + e.reason); });
  var consoleError = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };
  window.addEventListener("load", function () {
    var root = document.documentElement;
    root.setAttribute("data-loaded", String(document.querySelectorAll("svg").length));
    root.setAttribute("data-height", String(root.scrollHeight));
  });
})();
</script>"""
_STYLE = """<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
figure { margin: 0 0 1em 0; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th:first-child, td.name { text-align: left; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; white-space: nowrap; }
</style>"""


def bytes_cell(key, n):
    """A table cell of `n` bytes: data-value the exact integer, shown as "123,456 (120.6 KiB)"."""
    return f'<td data-key="{key}" data-value="{n}">{n:,} ({format_bytes(n)})</td>'


def fraction_cell(key, fraction):
    """A table cell of a fraction: data-value the exact float, shown as a percent ("12.3%")."""
    return f'<td data-key="{key}" data-value="{fraction!r}">{format_percent(fraction)}</td>'


def count_cell(key, n):
    """A table cell of an integer count (right-aligned as the other numbers)."""
    return f'<td data-key="{key}" data-value="{n}">{n}</td>'


def text_cell(key, text, value=None):
    """A table cell of text (escaped); data-value is `value` when given, else the text."""
    value = text if value is None else value
    return f'<td class="name" data-key="{key}" data-value="{escape(str(value))}">{escape(str(text))}</td>'


def table(table_id, caption, headers, rows):
    """A <table id=table_id> with a caption, a header row and `rows`: a list of (row key,
    list of cell HTML)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "\n".join(f'<tr data-row="{escape(key)}">{"".join(cells)}</tr>' for key, cells in rows)
    return f'<table id="{table_id}">\n<caption>{escape(caption)}</caption>\n<tr>{head}</tr>\n{body}\n</table>'


def memory_section(report, svg_path):
    """The page's section of one MemoryReport: its picture (the SVG at svg_path, inline),
    the devices' totals and, per device, the tensors live at its peak."""
    label = file_label(report.label)
    rows = [(f"device{d.device}", [text_cell("device", d.device), text_cell("stages", ", ".join(map(str, d.stages)))]
             + [bytes_cell(key, getattr(d, key)) for key in DEVICE_TOTALS]) for d in report.devices]
    parts = [f'<section id="memory-{label}">',
             f"<h2>Memory: {escape(report.label)}</h2>",
             f"<p>{escape(report.path)}; replication factor {report.replication_factor}.</p>",
             _figure(f"fig-memory-{label}", svg_path),
             table(f"memory-{label}-devices", "Per device (planned bytes of one replica's devices; remote buffers and "
                   "offloaded tensors are host memory)", ["device", "stages", "arena", "planned peak", "variables",
                                                          "remote buffers", "offloaded"], rows)]
    parts += [_peak_table(label, d) for d in report.devices]
    return "\n".join(parts + ["</section>"])


def _peak_table(label, device):
    shown = device.peak_tensors[:PEAK_TENSORS_SHOWN]
    rows = [(f"tensor{i}", [text_cell("name", t.name), text_cell("kind", t.kind), bytes_cell("bytes", t.bytes)])
            for i, t in enumerate(shown)]
    more = len(device.peak_tensors) - len(shown)
    caption = (f"Device {device.device}: tensors live at the peak (step {device.peak_step}, "
               f"{device.peak_bytes:,} bytes), largest first" + (f"; {more} smaller not shown" if more else "")
               if device.peak_step >= 0 else f"Device {device.device}: no step in its schedule")
    return table(f"memory-{label}-peak-device{device.device}", caption, ["tensor", "kind", "bytes"], rows)


def pipeline_section(trace, svg_path):
    """The page's section of a PipelineTrace: its diagram (the SVG at svg_path, inline), a
    summary (stages, micro-batches, iterations, step counts, bubble fraction) and each
    device's busy fraction."""
    summary = [count_cell("stages", len({s for _, s in trace.stages()})),
               count_cell("micro_batches", len(trace.micro_batches())),
               count_cell("iterations", len({s.iteration for s in trace.steps})),
               count_cell("forward_steps", trace.count("forward")),
               count_cell("backward_steps", trace.count("backward")),
               fraction_cell("bubble_fraction", trace.bubble_fraction)]
    busy = []
    for i, fraction in enumerate(trace.busy_fractions):
        replica, device = divmod(i, max(trace.devices_per_replica, 1))
        stages = sorted({s.stage for s in trace.steps if (s.replica, s.device) == (replica, device)})
        busy.append((f"replica{replica}-device{device}", [text_cell("replica", replica), text_cell("device", device),
                     text_cell("stages", ", ".join(map(str, stages))), fraction_cell("busy_fraction", fraction)]))
    return "\n".join([
        '<section id="pipeline">', "<h2>Pipeline</h2>", f"<p>{escape(trace.path)}</p>",
        _figure("fig-pipeline", svg_path),
        table("pipeline-summary", "The run", ["stages", "micro-batches", "iterations", "forward steps",
                                              "backward steps", "bubble fraction"], [("pipeline", summary)]),
        table("pipeline-busy", "Share of the run each device spent in steps", ["replica", "device", "stages",
                                                                               "busy fraction"], busy),
        "</section>"])


def _figure(figure_id, svg_path):
    svg = inline_svg(pathlib.Path(svg_path).read_text(encoding="utf-8"), figure_id)
    return f'<figure id="{figure_id}">\n{svg}\n</figure>'


def write_page(out_dir, memory=(), pipeline=None):
    """Writes <out_dir>/index.html: a section per (MemoryReport, svg path) of `memory`, then
    the pipeline's section when `pipeline` is a (PipelineTrace, svg path). Returns its path."""
    sections = [memory_section(report, svg) for report, svg in memory]
    if pipeline is not None:
        sections.append(pipeline_section(*pipeline))
    page = "\n".join(['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
                      "<title>Plexus report</title>", _ERROR_MARKER, _STYLE, "</head>", "<body>",
                      "<h1>Plexus report</h1>"] + sections + ["</body>", "</html>", ""])
    path = pathlib.Path(out_dir) / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path

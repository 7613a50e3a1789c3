"""plexus.report: pictures of a compiled program and of a run, as PopVision showed IPU users
(issue 36). From a memory report (JSON, schema "plexus.memory_report" version 1,
docs/profiling.md) it draws, per device, the planned bytes live at each step of the
schedule stacked by kind, with the peak and its largest tensors; from a run's Chrome trace
it draws the pipeline (stages by time, forward and backward boxes per micro-batch, the
bubble fraction); and it writes one HTML page with both and the numbers behind them.

    python3 -m plexus.report --memory memory.json --trace training.json --out report
    # or, installed: plexus-report ...

Matplotlib (Debian's python3-matplotlib) draws on the Agg backend: no display is needed."""
from plexus.report.chrome_trace import PipelineTrace, TraceStep, load_trace
from plexus.report.html_page import write_page
from plexus.report.json_input import ReportInputError
from plexus.report.memory_plot import plot_memory
from plexus.report.memory_report import DeviceMemory, LiveTensor, MemoryReport, Step, load_memory_report
from plexus.report.pipeline_plot import plot_pipeline
from plexus.report.render import render
from plexus.report.cli import main

__all__ = ["DeviceMemory", "LiveTensor", "MemoryReport", "PipelineTrace", "ReportInputError", "Step", "TraceStep",
           "load_memory_report", "load_trace", "main", "plot_memory", "plot_pipeline", "render", "write_page"]

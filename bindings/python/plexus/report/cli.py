"""The command line of plexus-report (and python3 -m plexus.report): draws a session's memory reports and a run's
Chrome trace as PNG and SVG pictures and one HTML page (docs/profiling.md, "Pictures")."""
import argparse
import sys

from plexus.report.json_input import ReportInputError
from plexus.report.render import parse_memory_argument, render


def parser():
    """The command line's argparse.ArgumentParser (prog "plexus-report")."""
    p = argparse.ArgumentParser(
        prog="plexus-report",
        description="Draws Plexus memory reports (per device: planned bytes over the schedule, stacked by kind, "
                    "the peak and its largest tensors) and a pipelined run's Chrome trace (stages by time, a box "
                    "per micro-batch's forward and backward, the bubble fraction) as PNG and SVG, and writes "
                    "index.html showing them with the numbers behind them.",
        epilog="Example: plexus-report --memory rts=profile/memory.json --trace profile/training.json --out report")
    p.add_argument("--memory", metavar="[LABEL=]REPORT.json", action="append", default=[],
                   help="a memory report (schema plexus.memory_report, version 1); repeat for several, each named "
                        "by LABEL (default: the file's stem)")
    p.add_argument("--trace", metavar="TRACE.json", help="a Chrome trace of a run (Trace Event JSON as --profile "
                                                         "and plx_session_get_trace write it)")
    p.add_argument("--out", metavar="DIR", default="report", help="output folder, created if missing "
                                                                   "(default: %(default)s)")
    p.add_argument("--top-tensors", metavar="N", type=int, default=5,
                   help="tensors labelled at each device's peak (default: %(default)s)")
    return p


def main(argv=None):
    """Runs plexus-report on `argv` (default sys.argv[1:]); prints the files it wrote. Returns
    the exit status: 0, or 2 after printing "plexus-report: error: ..." (naming the file
    and key) for a bad argument or input."""
    p = parser()
    args = p.parse_args(argv)
    if args.top_tensors < 0:
        p.error(f"--top-tensors {args.top_tensors}: expected a count >= 0")
    try:
        memory = [parse_memory_argument(m) for m in args.memory]
        written = render(args.out, memory, args.trace, args.top_tensors)
    except ReportInputError as e:
        print(f"plexus-report: error: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0

"""What the report's figures share: matplotlib on the Agg backend (no display needed), SVG
text kept as text (searchable, and a test reads it), stable SVG ids, and saving a figure
as PNG and SVG side by side."""
import functools
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

DPI = 100
STYLE = {"svg.fonttype": "none", "svg.hashsalt": "plexus-report", "font.size": 9,
         "axes.spines.top": False, "axes.spines.right": False}


def styled(draw):
    """Decorator: runs `draw` with the report's matplotlib settings (STYLE), leaving the
    caller's settings as they were."""
    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with plt.rc_context(STYLE):
            return draw(*args, **kwargs)
    return wrapper


def new_figure(width_in, height_in, rows=1):
    """A figure of `width_in` x `height_in` inches with `rows` axes stacked vertically.
    Call it from a @styled function. Returns (figure, list of axes)."""
    fig, axes = plt.subplots(rows, 1, figsize=(width_in, height_in), dpi=DPI, squeeze=False)
    return fig, [a for row in axes for a in row]


def save_figure(fig, out_dir, stem):
    """Writes `fig` as <out_dir>/<stem>.png and <stem>.svg (creating out_dir), closes it and
    returns the two paths (pathlib.Path). Call it from a @styled function."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / f"{stem}.png", out / f"{stem}.svg")
    for path in paths:
        fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"Date": None} if path.suffix == ".svg" else None)
    plt.close(fig)
    return paths


def format_bytes(n, compact=False):
    """`n` bytes as a short text with binary units: "512 B", "1.50 KiB", "12.0 MiB", "2.00 GiB";
    `compact` drops trailing zeros (axis ticks: "5 KiB", "2.5 MiB")."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            value = n / scale
            if compact:
                return f"{value:.4g} {unit}"
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.1f} {unit}"
    return f"{int(n)} B"


def format_percent(fraction):
    """A fraction (0.1234) as the percent text the report shows ("12.3%")."""
    return f"{fraction * 100:.1f}%"

"""The memory picture of a memory report: per device, the planned bytes live at each step
of its schedule, stacked by kind, with the device's arena, the peak and the largest
tensors live at the peak.

In the SVG each device's stacked areas are groups with id "device<d>-series-<kind>" (one
per kind of the device), the peak marker "device<d>-peak", its tensor labels
"device<d>-peak-tensors" and the arena line "device<d>-arena"."""
import matplotlib.ticker as ticker
import numpy as np

from plexus.report.figures import format_bytes, new_figure, save_figure, styled

# Fixed colours for the schema's kinds, so that the pictures of several reports compare.
KIND_COLOURS = {"variables": "#4c72b0", "activations": "#dd8452", "gradients": "#c44e52",
                "optimizer_state": "#8172b3", "stream_slots": "#55a868", "scratch": "#937860"}
_OTHER_COLOURS = ("#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")


def kind_colour(kind, kinds):
    """The colour of `kind` in the pictures: fixed for the schema's kinds, else one of a few
    spare colours by its position in `kinds` (the device's list)."""
    return KIND_COLOURS.get(kind) or _OTHER_COLOURS[kinds.index(kind) % len(_OTHER_COLOURS)]


def stacked_tops(device):
    """The cumulative bytes of the device's kinds at each step: a numpy int64 array of shape
    [len(kinds), len(steps)] whose row k is the sum of the series of kinds 0..k."""
    series = np.array([device.series(kind) for kind in device.kinds], dtype=np.int64).reshape(len(device.kinds), -1)
    return np.cumsum(series, axis=0)


# Inches above the panels: the figure's title, then the legend's row under it. Fixed in
# inches (not a fraction of the figure) so that neither overlaps the other nor the first
# panel's title however many panels there are.
_HEADER_IN = 0.75


@styled
def plot_memory(report, out_dir, top_tensors=5):
    """Draws `report` (a MemoryReport) and writes <out_dir>/memory-<label>.png and .svg; one
    panel per device, `top_tensors` of its peak's tensors labelled. Returns the (png, svg)
    paths."""
    return save_figure(memory_figure(report, top_tensors), out_dir, f"memory-{file_label(report.label)}")


@styled
def memory_figure(report, top_tensors=5):
    """The memory picture of `report` as an open matplotlib figure, laid out: the title and
    the legend in a header of _HEADER_IN inches, then one panel per device. The caller
    saves or closes it."""
    fig, axes = new_figure(11, _HEADER_IN + 0.45 + 3.3 * len(report.devices), rows=len(report.devices))
    for ax, device in zip(axes, report.devices):
        _draw_device(ax, device, top_tensors)
    axes[-1].set_xlabel("step of the device's schedule")
    height = fig.get_figheight()
    title = fig.suptitle(f"Planned device memory: {report.label} (replication factor {report.replication_factor})",
                         x=0.01, y=1 - 0.08 / height, ha="left", va="top")
    legend = _legend(fig, axes, 1 - 0.38 / height)
    for header in (title, legend):  # placed by hand above the rect tight_layout fills...
        header.set_in_layout(False)
    fig.tight_layout(rect=(0, 0, 1, 1 - _HEADER_IN / height))
    for header in (title, legend):  # ...and kept by savefig's bbox_inches="tight"
        header.set_in_layout(True)
    return fig


def _legend(fig, axes, top):
    """One legend in the header, its top at figure fraction `top`, with every kind of every
    device, once each; returns it."""
    kinds = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            kinds.setdefault(label, handle)
    return fig.legend(kinds.values(), kinds.keys(), loc="upper left", fontsize=8, ncol=min(len(kinds), 8),
                      frameon=False, bbox_to_anchor=(0.01, top))


def file_label(label):
    """`label` with every character other than letters, digits, '.', '_' and '-' as '_'
    (for file names and SVG ids)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in label)


def _draw_device(ax, device, top_tensors):
    tops = stacked_tops(device)
    x = np.arange(len(device.steps) + 1)
    bottom = np.zeros(len(device.steps) + 1, dtype=np.int64)
    for kind, top in zip(device.kinds, tops):
        upper = np.append(top, top[-1:] if len(top) else [0])  # step="post": the last step's value spans it
        area = ax.fill_between(x, bottom, upper, step="post", color=kind_colour(kind, device.kinds), linewidth=0,
                               label=kind)
        area.set_gid(f"device{device.device}-series-{kind}")
        bottom = upper
    _draw_arena(ax, device)
    if device.peak_step >= 0:
        _draw_peak(ax, device, top_tensors)
    top = max(device.arena_bytes, device.peak_bytes, int(bottom.max(initial=0)), 1) * 1.08
    ax.yaxis.set_major_locator(ticker.MultipleLocator(byte_tick(top)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: format_bytes(v, compact=True)))
    ax.set_xlim(0, max(len(device.steps), 1))
    ax.set_ylim(0, top)
    stages = ", ".join(str(s) for s in device.stages) or "none"
    host = f"host: remote buffers {format_bytes(device.remote_buffer_bytes)}, " \
           f"offloaded {format_bytes(device.offloaded_bytes)}"
    ax.set_title(f"device {device.device} (stages {stages}): peak {format_bytes(device.planned_peak_bytes)} "
                 f"of arena {format_bytes(device.arena_bytes)}; {host}", loc="left", fontsize=9)
    ax.set_ylabel("bytes")


def byte_tick(top):
    """A tick spacing for a bytes axis from 0 to `top`: 1, 2 or 5 times a power of 1024 times
    a power of ten (labels read 50.0 KiB, 1.00 MiB...), the smallest giving at most 8 intervals."""
    unit = 1 << (10 * min(3, max(0, (int(top).bit_length() - 1) // 10)))
    for factor in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        if top / (unit * factor) <= 8:
            return unit * factor
    return unit * 1000


def _draw_arena(ax, device):
    line = ax.axhline(device.arena_bytes, color="#333333", linestyle="--", linewidth=0.8)
    line.set_gid(f"device{device.device}-arena")
    ax.text(0.995, device.arena_bytes, f"arena {format_bytes(device.arena_bytes)}", transform=ax.get_yaxis_transform(),
            ha="right", va="bottom", fontsize=7)


def _draw_peak(ax, device, top_tensors):
    x = device.peak_step + 0.5
    marker = ax.plot([x], [device.peak_bytes], marker="v", color="black", markersize=7, linestyle="none")[0]
    marker.set_gid(f"device{device.device}-peak")
    ax.axvline(x, color="black", linewidth=0.6, alpha=0.5)
    lines = [f"peak {format_bytes(device.peak_bytes)} at step {device.peak_step}"]
    lines += [f"{t.name} ({t.kind}) {format_bytes(t.bytes)}" for t in device.peak_tensors[:top_tensors]]
    right = x > len(device.steps) / 2
    label = ax.annotate("\n".join(lines), xy=(x, device.peak_bytes), xytext=(-12 if right else 12, -6),
                        textcoords="offset points", ha="right" if right else "left", va="top", fontsize=7,
                        bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85, "linewidth": 0.4})
    label.set_gid(f"device{device.device}-peak-tensors")

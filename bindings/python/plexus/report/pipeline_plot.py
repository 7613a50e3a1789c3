"""The pipeline diagram of a run's Chrome trace: one row per stage (per replica when there
are several), time across, a box per forward (blue) and backward (orange) step labelled
with its micro-batch number where it fits, updates in grey, the bubble fraction in the title.

In the SVG each box is a group with id "box-<kind>-<n>" (kind forward, backward or update,
n counting from 0 in the trace's order), its label "label-<kind>-<n>", and the title
"pipeline-title". Transfers and collectives run inside the steps and are not drawn."""
from matplotlib.patches import Rectangle

from plexus.report.figures import format_percent, new_figure, save_figure, styled

BOX_COLOURS = {"forward": "#4c72b0", "backward": "#dd8452", "update": "#9a9a9a"}
_LABEL_FONT_PT = 7
_CHAR_WIDTH_PT = 0.62 * _LABEL_FONT_PT  # DejaVu Sans digits: about 0.62 em


def pipeline_title(trace):
    """The diagram's title: stages, micro-batches, iterations and the trace's bubble fraction
    (otherData's, as a percent with one decimal)."""
    iterations = len({s.iteration for s in trace.steps})
    return (f"Pipeline: {len({s for _, s in trace.stages()})} stages, {len(trace.micro_batches())} micro-batches "
            f"x {iterations} iterations; bubble {format_percent(trace.bubble_fraction)} of device time "
            f"(1 - mean busy fraction)")


def row_labels(trace):
    """The diagram's rows, top to bottom: a list of ((replica, stage), label), the label the
    stage's name as the trace gives it ("stage 0 (B1)"), prefixed by the replica when there
    are several."""
    names = {(s.replica, s.stage): s.stage_name for s in trace.steps}
    replicas = len({r for r, _ in names})
    return [((r, st), (f"replica {r} " if replicas > 1 else "") + f"stage {st} ({names[(r, st)]})")
            for r, st in trace.stages()]


@styled
def plot_pipeline(trace, out_dir):
    """Draws `trace` (a PipelineTrace) and writes <out_dir>/pipeline.png and .svg. Returns the
    (png, svg) paths."""
    rows = row_labels(trace)
    width = min(40.0, max(10.0, 0.25 * max(sum(1 for s in trace.steps if (s.replica, s.stage) == key)
                                             for key, _ in rows)))
    fig, (ax,) = new_figure(width, 1.4 + 0.6 * len(rows))
    end_ms = max(s.start_us + s.duration_us for s in trace.steps) / 1000.0
    ax.set_xlim(0, end_ms)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [label for _, label in rows])
    ax.set_xlabel("time from the run's start (ms)")
    fig.tight_layout()
    points_per_ms = ax.get_window_extent().width / fig.dpi * 72.0 / end_ms
    row_of = {key: i for i, (key, _) in enumerate(rows)}
    counts = {kind: 0 for kind in BOX_COLOURS}
    for step in trace.steps:
        _draw_box(ax, step, row_of[(step.replica, step.stage)], counts[step.kind], points_per_ms)
        counts[step.kind] += 1
    title = ax.set_title(pipeline_title(trace), loc="left")
    title.set_gid("pipeline-title")
    _legend(ax)
    return save_figure(fig, out_dir, "pipeline")


def _draw_box(ax, step, row, n, points_per_ms):
    start, width = step.start_us / 1000.0, step.duration_us / 1000.0
    # A white edge parts neighbouring boxes; on a box a few points wide it would hide the fill.
    box = Rectangle((start, row - 0.38), width, 0.76, facecolor=BOX_COLOURS[step.kind], edgecolor="white",
                    linewidth=0.3 if width * points_per_ms > 3 else 0)
    box.set_gid(f"box-{step.kind}-{n}")
    ax.add_patch(box)
    text = str(step.micro_batch) if step.kind != "update" else "U"
    if width * points_per_ms >= len(text) * _CHAR_WIDTH_PT + 2:
        label = ax.text(start + width / 2, row, text, ha="center", va="center", color="white",
                        fontsize=_LABEL_FONT_PT)
        label.set_gid(f"label-{step.kind}-{n}")


def _legend(ax):
    handles = [Rectangle((0, 0), 1, 1, facecolor=colour) for colour in BOX_COLOURS.values()]
    ax.legend(handles, [f"{kind} (micro-batch number)" if kind != "update" else kind for kind in BOX_COLOURS],
              loc="upper right", bbox_to_anchor=(1, 1.22), ncol=3, fontsize=8, frameon=False)

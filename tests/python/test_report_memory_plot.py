"""plexus.report.memory_plot: the memory picture has one series per kind per device (counted
by the SVG's ids), the peak marked and its largest tensors labelled, as PNG and SVG."""
import numpy as np

from plexus.report import load_memory_report, plot_memory
from plexus.report.figures import format_bytes
from plexus.report.memory_plot import byte_tick, file_label, memory_figure, stacked_tops
from report_fixtures import KINDS, memory_report, svg_ids, svg_texts, write_json


def _plotted(tmp_path, doc, top=5):
    report = load_memory_report(write_json(tmp_path / "in.json", doc), "a b")
    png, svg = plot_memory(report, tmp_path / "out", top)
    return report, png, svg.read_text(encoding="utf-8")


def test_one_series_per_kind_per_device(tmp_path):
    report, png, svg = _plotted(tmp_path, memory_report(num_devices=3))
    assert png.name == "memory-a_b.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ids = svg_ids(svg)
    series = [i for i in ids if "-series-" in i]
    assert len(series) == 3 * len(KINDS)
    assert series == [f"device{d}-series-{k}" for d in range(3) for k in KINDS]
    assert [i for i in ids if i.endswith("-peak")] == ["device0-peak", "device1-peak", "device2-peak"]


def test_a_device_with_other_kinds_has_its_own_series(tmp_path):
    doc = memory_report(num_devices=2)
    device = doc["devices"][1]
    device["kinds"] = ["variables", "activations", "spill"]
    for step in device["steps"]:
        step["bytes"] = {"variables": 10, "activations": step["step"], "spill": 3}
    device["peak"] = {"step": len(device["steps"]) - 1, "bytes": 13 + len(device["steps"]) - 1, "tensors": []}
    _, _, svg = _plotted(tmp_path, doc)
    series = [i for i in svg_ids(svg) if i.startswith("device1-series-")]
    assert series == ["device1-series-variables", "device1-series-activations", "device1-series-spill"]


def test_a_device_with_no_step_has_empty_series_and_no_peak(tmp_path):
    doc = memory_report(num_devices=2)
    doc["devices"][1].update(steps=[], peak={"step": -1, "bytes": 0, "tensors": []})
    _, _, svg = _plotted(tmp_path, doc)
    ids = svg_ids(svg)
    assert sum(1 for i in ids if i.startswith("device1-series-")) == len(KINDS)
    assert [i for i in ids if i.endswith("-peak")] == ["device0-peak"]


def test_the_title_legend_and_panel_titles_do_not_overlap(tmp_path):
    # A 4-device report once drew the figure's title over the legend (both placed by
    # figure fraction, the header squeezed as the figure grew).
    import matplotlib.pyplot as plt
    for devices in (1, 4, 8):
        report = load_memory_report(write_json(tmp_path / f"in{devices}.json", memory_report(num_devices=devices)), "x")
        fig = memory_figure(report)
        try:
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            boxes = {"title": fig._suptitle.get_window_extent(renderer), "legend": fig.legends[0].get_window_extent(renderer)}
            for d, ax in enumerate(fig.axes):
                boxes[f"panel {d} title"] = ax._left_title.get_window_extent(renderer)  # set_title(loc="left")
            names = list(boxes)
            for i, a in enumerate(names):
                assert boxes[a].y1 <= fig.bbox.y1 and boxes[a].height > 0, (devices, a, boxes[a])
                for b in names[i + 1:]:
                    assert not boxes[a].overlaps(boxes[b]), (devices, a, boxes[a], b, boxes[b])
            # savefig(bbox_inches="tight") keeps the header: the figure's tight box holds it
            kept = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
            assert kept.y1 >= boxes["title"].y1 - 1 and kept.y1 >= boxes["legend"].y1 - 1, (devices, kept, boxes)
            # top to bottom: the figure's title, the legend, the first panel's title
            assert boxes["title"].y0 > boxes["legend"].y1 > boxes["legend"].y0 > boxes["panel 0 title"].y1, boxes
        finally:
            plt.close(fig)
        (tmp_path / str(devices)).mkdir()
        _, _, svg = _plotted(tmp_path / str(devices), memory_report(num_devices=devices))
        texts = svg_texts(svg)
        assert any(t.startswith("Planned device memory: a b") for t in texts), texts[:5]  # not cropped away
        assert set(KINDS) <= set(texts), texts


def test_the_peak_label_names_the_largest_tensors(tmp_path):
    report, _, svg = _plotted(tmp_path, memory_report(num_devices=2), top=5)
    for device in report.devices:
        lines = svg_texts(svg, f"device{device.device}-peak-tensors")
        assert lines[0] == f"peak {format_bytes(device.peak_bytes)} at step {device.peak_step}"
        assert lines[1:] == [f"{t.name} ({t.kind}) {format_bytes(t.bytes)}" for t in device.peak_tensors[:5]]
        assert len(device.peak_tensors) == 8   # the three smallest are left out
    _, _, svg = _plotted(tmp_path, memory_report(num_devices=1), top=2)
    assert len(svg_texts(svg, "device0-peak-tensors")) == 1 + 2


def test_the_stack_tops_are_the_step_sums():
    report_doc = memory_report(num_devices=1, num_steps=7)
    steps = report_doc["devices"][0]["steps"]

    class Device:
        kinds = KINDS

        def series(self, kind):
            return [s["bytes"][kind] for s in steps]
    tops = stacked_tops(Device())
    assert tops.shape == (len(KINDS), 7)
    np.testing.assert_array_equal(tops[-1], [sum(s["bytes"].values()) for s in steps])
    np.testing.assert_array_equal(tops[0], [s["bytes"]["variables"] for s in steps])


def test_byte_ticks_are_round_binary_sizes():
    assert byte_tick(200 * 1024) == 50 * 1024          # 0, 50, 100, 150, 200 KiB
    assert byte_tick(3 << 30) == 1 << 30
    assert byte_tick(700) == 100 and byte_tick(1) == 1
    assert byte_tick(123456789) == 20 << 20             # 117.7 MiB: 10 MiB would make 11 intervals


def test_file_labels_keep_safe_characters():
    assert file_label("rts R=2/x") == "rts_R_2_x"
    assert file_label("seed-000.a_b") == "seed-000.a_b"

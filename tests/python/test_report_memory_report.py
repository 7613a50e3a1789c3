"""plexus.report.memory_report and json_input: a memory report read into objects, and every
kind of bad file refused with a message naming the file and the key."""
import json

import pytest

from plexus.report import ReportInputError, load_memory_report
from report_fixtures import KINDS, memory_report, write_json


def test_a_report_reads_into_devices_steps_and_peak(tmp_path):
    doc = memory_report(num_devices=2, num_steps=9)
    report = load_memory_report(write_json(tmp_path / "rts.json", doc))
    assert (report.label, report.replication_factor, len(report.devices)) == ("rts", 2, 2)
    for device, raw in zip(report.devices, doc["devices"]):
        assert device.kinds == KINDS and len(device.steps) == len(raw["steps"])
        assert device.series("scratch") == [s["bytes"]["scratch"] for s in raw["steps"]]
        assert (device.peak_step, device.peak_bytes) == (raw["peak"]["step"], raw["peak"]["bytes"])
        assert device.planned_peak_bytes == max(sum(s.bytes.values()) for s in device.steps)
        assert [t.bytes for t in device.peak_tensors] == sorted((t["bytes"] for t in raw["peak"]["tensors"]),
                                                               reverse=True)
        assert device.arena_bytes == raw["arena_bytes"] and device.offloaded_bytes == raw["offloaded_bytes"]
    assert load_memory_report(tmp_path / "rts.json", "with label").label == "with label"


def _broken(tmp_path, change):
    doc = memory_report(num_devices=2, num_steps=5)
    change(doc)
    return write_json(tmp_path / "bad.json", doc)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("devices"), r"bad.json: missing key 'devices'"),
    (lambda d: d.update(schema="other"), r"bad.json: schema: expected \"plexus.memory_report\""),
    (lambda d: d.update(version=2), r"bad.json: version: this renderer reads version 1, found 2"),
    (lambda d: d.update(devices=[]), r"bad.json: devices: no devices"),
    (lambda d: d["devices"][1].pop("arena_bytes"), r"bad.json: devices\[1\]: missing key 'arena_bytes'"),
    (lambda d: d["devices"][0]["steps"][3]["bytes"].pop("scratch"),
     r"bad.json: devices\[0\].steps\[3\].bytes: missing key 'scratch'"),
    (lambda d: d["devices"][0]["steps"][2]["bytes"].update(activations=-1),
     r"bad.json: devices\[0\].steps\[2\].bytes.activations: expected an integer >= 0, found -1"),
    (lambda d: d["devices"][0]["peak"].update(step=99),
     r"bad.json: devices\[0\].peak.step: step 99 is outside the schedule's 5 steps"),
    (lambda d: d["devices"][0]["peak"].update(step=-1),
     r"bad.json: devices\[0\].peak.step: step -1 is outside the schedule's 5 steps "
     r"\(-1 only for a device with no step\)"),
    (lambda d: d["devices"][1]["peak"]["tensors"][0].update(name=3),
     r"bad.json: devices\[1\].peak.tensors\[0\].name: expected a string, found 3"),
    (lambda d: d["devices"][0].update(kinds="variables"), r"bad.json: devices\[0\].kinds: expected an array"),
    (lambda d: d["devices"][0].update(stages=[0.5]), r"bad.json: devices\[0\].stages\[0\]: expected an integer"),
])
def test_a_bad_report_is_refused_naming_the_file_and_key(tmp_path, change, message):
    with pytest.raises(ReportInputError, match=message):
        load_memory_report(_broken(tmp_path, change))


def test_a_missing_or_non_json_file_is_refused_naming_it(tmp_path):
    with pytest.raises(ReportInputError, match=r"nope.json: cannot read: No such file or directory"):
        load_memory_report(tmp_path / "nope.json")
    (tmp_path / "cut.json").write_text(json.dumps(memory_report())[:200])
    with pytest.raises(ReportInputError, match=r"cut.json: not JSON: .* at line 1 column \d+"):
        load_memory_report(tmp_path / "cut.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ReportInputError, match=r"list.json: expected an object, found an array"):
        load_memory_report(tmp_path / "list.json")


def test_a_device_with_no_step_has_peak_step_minus_one(tmp_path):
    doc = memory_report(num_devices=2)
    doc["devices"][1].update(steps=[], peak={"step": -1, "bytes": 0, "tensors": []}, later_key="ignored")
    device = load_memory_report(write_json(tmp_path / "m.json", doc)).devices[1]
    assert (device.steps, device.peak_step, device.peak_tensors) == ([], -1, [])

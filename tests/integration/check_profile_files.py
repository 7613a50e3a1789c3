"""Checks what a sample's --profile wrote (samples/common/profile.h, sample_common.write_profile):
<dir>/<name>.json is a Chrome trace of a run (complete events on device tracks, the busy
fractions of `devices` devices), and <dir>/<name>.memory.json beside it is a memory report
(docs/profiling.md) of `devices` devices per replica in which each device's largest step
total is its planned_peak_bytes, the peak's bytes, and fits its arena. With a metrics file,
its "profile" entry names both files, and the per-device planned peaks it lists (char_gpt's
"memory", mnist_rts's "memory"."replicas") equal the report's.

Usage: check_profile_files.py SAMPLE DIR NAME DEVICES [METRICS]
Prints one "ok:" line with the peaks; exits 1 with the reason otherwise.
"""
import json
import os
import sys


def check_trace(path, devices):
    """The trace parses, has complete ("X") events, and busy fractions for `devices` devices."""
    trace = json.load(open(path))
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert spans, f"{path}: no complete events"
    busy = trace["otherData"]["busy_fraction"]
    assert len(busy) >= devices, (path, busy)
    return len(spans)


def check_memory(path, devices):
    """The report's schema, its device count, and each device's largest step = its planned peak."""
    report = json.load(open(path))
    assert report["schema"] == "plexus.memory_report" and report["version"] == 1, (path, report.get("schema"))
    assert report["devices_per_replica"] == devices == len(report["devices"]), (path, report["devices_per_replica"])
    peaks = []
    for dev in report["devices"]:
        assert dev["steps"], f"{path}: device {dev['device']} has no step"
        largest = max(sum(step["bytes"].values()) for step in dev["steps"])
        assert largest == dev["planned_peak_bytes"] == dev["peak"]["bytes"], (path, dev["device"], largest,
                                                                            dev["planned_peak_bytes"])
        assert 0 < dev["planned_peak_bytes"] <= dev["arena_bytes"], (path, dev["device"], dev["arena_bytes"])
        peaks.append(dev["planned_peak_bytes"])
    return peaks


def check_metrics(path, name, trace_path, memory_path, peaks):
    """The metrics' profile entry names the files; their per-device planned peaks are the report's."""
    metrics = json.load(open(path))
    files = metrics["profile"][name]
    assert files["file"] == trace_path and files["memory_report"] == memory_path, (files, trace_path)
    memory = metrics.get("memory")
    listed = memory.get("replicas") if isinstance(memory, dict) else memory
    if listed:
        assert [d["planned_peak_bytes"] for d in listed[:len(peaks)]] == peaks, (listed, peaks)


def main(sample, folder, name, devices, metrics=None):
    """Runs the checks; prints the ok line."""
    trace_path = os.path.join(folder, name + ".json")
    memory_path = os.path.join(folder, name + ".memory.json")
    spans = check_trace(trace_path, devices)
    peaks = check_memory(memory_path, devices)
    if metrics:
        check_metrics(metrics, name, trace_path, memory_path, peaks)
    print(f"ok: {sample} --profile wrote {name}.json ({spans} spans) and {name}.memory.json beside it: "
          f"{devices} device(s), each largest step its planned peak {peaks} B")


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:6])
    except (AssertionError, KeyError, OSError, ValueError) as e:
        print(f"FAIL: {sys.argv[1]} --profile: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)

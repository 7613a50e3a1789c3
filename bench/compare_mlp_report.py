#!/usr/bin/python3
"""Prints bench/compare_mlp.sh's table from the JSON files it left in --out-dir, and writes
summary.json there. Not meant to be run by hand (compare_mlp.sh passes the arguments)."""
import argparse
import json
import os
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--arch-id", type=int, required=True)
    p.add_argument("--arch-name", required=True)
    p.add_argument("--repeats", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--big-di", type=int, required=True)
    p.add_argument("--busy", type=float, nargs=3, required=True, metavar=("B8", "B80", "ACCURACY"),
                   help="cores other processes kept busy per phase; negative = phase skipped")
    a = p.parse_args()

    def load(name):
        with open(os.path.join(a.out_dir, name)) as f:
            return json.load(f)

    def plexus(b, di):
        """(best, median) items_per_second over the repetitions of one Google Benchmark."""
        runs = [x for x in load(f"plexus_b{b}.json")["benchmarks"]
                if x["run_name"].endswith(f"batch:{b}/device_iterations:{di}/real_time")
                and x.get("run_type") == "iteration"]
        if not runs:
            raise SystemExit(f"compare_mlp_report: no batch {b}, device_iterations {di} runs in plexus_b{b}.json")
        rates = [x["items_per_second"] for x in runs]
        return max(rates), statistics.median(rates)

    def torch(b, variant):
        d = load(f"pytorch_b{b}.json" if variant == "default" else f"pytorch_b{b}_arch.json")
        return d["samples_per_second_best"], d["samples_per_second"]

    busy = {8: a.busy[0], 80: a.busy[1]}
    variants = (("default", "as installed"), ("arch", f"BLIS_ARCH_TYPE={a.arch_id} ({a.arch_name})"))
    print(f"Training-step throughput, samples/s: best of {a.repeats} (median in brackets), ratio = Plexus / PyTorch.")
    print("Plexus: bench/mlp_step_bench (wall time, preloaded synthetic MNIST-like data, the loss streamed back each")
    print("step); PyTorch: bench/pytorch_mlp.py (preloaded real MNIST, loss.item() each step,")
    print(f"torch.set_num_threads({a.threads}), BLIS_NUM_THREADS={a.threads}).")
    fmt = "{:<6} {:<22} {:>18}   {:<24} {:>16} {:>16}"
    print(fmt.format("batch", "Plexus", "samples/s", "PyTorch", "samples/s", "ratio"))
    rows = []
    for b in (8, 80):
        for di in (1, a.big_di):
            pb, pm = plexus(b, di)
            for variant, label in variants:
                tb, tm = torch(b, variant)
                rows.append({"batch": b, "plexus_device_iterations": di, "pytorch": label,
                             "plexus_best": pb, "plexus_median": pm, "pytorch_best": tb, "pytorch_median": tm,
                             "ratio_best": pb / tb, "ratio_median": pm / tm})
                print(fmt.format(b, f"device_iterations {di}", f"{pb:.0f} ({pm:.0f})", label,
                                 f"{tb:.0f} ({tm:.0f})", f"{pb / tb:.2f}x ({pm / tm:.2f}x)"))
    for b in (8, 80):
        note = "  <- contended: rerun on an idle machine" if busy[b] > 0.25 else ""
        print(f"  other processes kept {busy[b]:.2f} cores busy during the batch-{b} measurements{note}")

    p8 = plexus(8, 1)[0]
    t8 = max(torch(8, "default")[0], torch(8, "arch")[0])
    ratio = p8 / t8
    print(f"headline, batch 8 (best of {a.repeats}): Plexus, device_iterations 1, {p8:.0f} samples/s vs the faster "
          f"PyTorch variant {t8:.0f} samples/s: {ratio:.2f}x (target >= 3x: {'met' if ratio >= 3 else 'NOT met'})")
    summary = {"throughput": rows, "others_busy_cores": {"batch8": busy[8], "batch80": busy[80]},
               "blis_arch_type": a.arch_id, "blis_arch_name": a.arch_name, "headline_ratio_batch8": ratio}

    if a.busy[2] >= 0:
        p, t = load("plexus_mnist.json"), load("pytorch_mnist.json")
        print(f"test accuracy after 1 epoch (batch 8, lr 0.005, seed 42, test batch 80): "
              f"Plexus {100 * p['test_accuracy']:.2f}%  |  PyTorch {100 * t['test_accuracy']:.2f}%")
        print(f"  whole-epoch training samples/s (with batch preparation and bookkeeping): "
              f"Plexus {p['train_samples_per_second']:.0f}  |  PyTorch {t['train_samples_per_second']:.0f}"
              f"  (other processes kept {a.busy[2]:.2f} cores busy)")
        summary["accuracy"] = {"plexus": p["test_accuracy"], "pytorch": t["test_accuracy"],
                               "plexus_train_samples_per_second": p["train_samples_per_second"],
                               "pytorch_train_samples_per_second": t["train_samples_per_second"],
                               "others_busy_cores": a.busy[2]}
    with open(os.path.join(a.out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()

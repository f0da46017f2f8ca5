#!/usr/bin/python3
"""scar_torch.py - SCAR on a real PyTorch training loop, through the scar tools only.

A small MLP learns Fashion-MNIST on the CPU, deterministically. The loop stays
thin: it trains, writes its parameters as safetensors and its objective and
step norm as a scar-events stream (so scar-bound fit can fit c), and calls the
tools; every SCAR decision is theirs:

  scar-ckpt save     checkpoints each iteration by a policy (priority at
                     fraction 1/4, or full at the same I/O) into a run directory
  scar-ckpt apply    the run directory's saved view, at a failure
  scar-ckpt export   that view as safetensors
  scar-inject        loses a quarter of the shards of the live parameters and
                     restores them from the saved view (SCAR), byte for byte
  scar-bound cost    the iteration cost of each run against the unperturbed one

Traditional recovery rolls every parameter back to the last full checkpoint
and redoes the iterations since (the data order is keyed by the iteration, so
a redo is exact). A null trial restores the lost rows from the live
parameters themselves: it must cost exactly 0.

usage: scar_torch.py [--iters N] [--trials K] [--examples M] [--extra E] [--lr LR]
                     [--lr-decay D] [--out DIR] [--data DIR]
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch

SHARDS, INTERVAL, FRACTION = 8, 8, "1/4"
LR, LR_DECAY = 0.1, 0.0


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def write_safetensors(path, model):
    """The state_dict as safetensors (F32), tensors in state_dict order."""
    header, blobs, off = {}, [], 0
    for name, t in model.state_dict().items():
        b = t.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".part", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(path + ".part", path)


def read_safetensors(path, model):
    """load_state_dict from a safetensors file (F32)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    state = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=8 + n + a)
        state[name] = torch.from_numpy(arr.copy().reshape(t["shape"]))
    model.load_state_dict(state)


def tool(*args, capture=False):
    r = subprocess.run(list(args), check=True, stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
    return r.stdout.decode() if capture else None


class Run:
    """One training run: the model, its data, its event stream."""

    def __init__(self, x, y, xe, ye, events):
        torch.manual_seed(1)
        self.model = torch.nn.Sequential(torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
        self.x, self.y, self.xe, self.ye = x, y, xe, ye
        self.events = open(events, "w")
        self.event({"type": "header", "format": "scar-events", "version": 1,
                    "objective": "cross_entropy", "objective_higher_better": False,
                    "model": "torch-mlp", "shards": SHARDS})

    def event(self, rec):
        self.events.write(json.dumps(rec) + "\n")
        self.events.flush()

    def objective(self):
        with torch.no_grad():
            return float(torch.nn.functional.cross_entropy(self.model(self.xe), self.ye))

    def params64(self):
        return [p.detach().to(torch.float64) for p in self.model.parameters()]

    def step(self, k):
        """Iteration k -> k + 1: one pass over the data, the order keyed by (seed, k).
        Returns the step norm ||x(k+1) - x(k)||: L2 over all parameter tensors, in float64."""
        before = self.params64()
        order = np.random.default_rng([1, k]).permutation(len(self.x))
        lr = LR / (1 + LR_DECAY * k)
        opt = torch.optim.SGD(self.model.parameters(), lr=lr)
        for b in range(0, len(order), 100):
            i = torch.from_numpy(order[b:b + 100])
            opt.zero_grad()
            torch.nn.functional.cross_entropy(self.model(self.x[i]), self.y[i]).backward()
            opt.step()
        return float(torch.sqrt(sum(((a - b) ** 2).sum() for a, b in zip(self.params64(), before))))


def trial(kind, T, seed, n, extra, data, work):
    """kind: reference, scar, traditional or null. Returns the events file."""
    d = os.path.join(work, f"{kind}-{T}-{seed}")
    os.makedirs(d, exist_ok=True)
    ev = os.path.join(d, "events.jsonl")
    run = Run(*data, ev)
    snap, runs = os.path.join(d, "now.safetensors"), os.path.join(d, "run")
    policy = ["--policy", "full"] if kind == "traditional" else ["--policy", "priority", "--fraction", FRACTION]
    k, clock, saved, last = 0, 0, 0, n + (extra if kind != "reference" else 0)
    run.event({"type": "iteration", "iter": 0, "objective": run.objective()})
    while clock < last:
        s = run.step(k)
        k, clock = k + 1, clock + 1
        run.event({"type": "iteration", "iter": clock, "objective": run.objective(), "step_norm": s})
        if kind == "reference":
            continue
        write_safetensors(snap, run.model)
        if k > saved:
            # (after a rollback, the iterations redone up to T are checkpointed already)
            tool("scar-ckpt", "save", "--no-sync", *policy, "--interval", str(INTERVAL),
                 "--shards", str(SHARDS), "--iteration", str(k), snap, runs)
            saved = k
        if clock != T:
            continue
        # The failure after iteration T: a quarter of the shards are lost.
        rec = os.path.join(d, "recovered.safetensors")
        if kind == "traditional":
            # Roll everything back to the last full checkpoint and redo from there.
            c = k - k % INTERVAL
            tool("scar-ckpt", "export", os.path.join(runs, f"ckpt-{c:010d}.ckpt"), "-o", rec)
            read_safetensors(rec, run.model)
            k = c
        else:
            donor = snap
            if kind == "scar":
                view = os.path.join(d, "view.ckpt")
                tool("scar-ckpt", "apply", "--no-sync", "-o", view, runs)
                donor = os.path.join(d, "view.safetensors")
                tool("scar-ckpt", "export", view, "-o", donor)
            tool("scar-inject", "--shards", str(SHARDS), "--lose-fraction", "1/4", "--seed", str(seed),
                 "--report", os.path.join(d, "inject.json"), "--reset", "from=" + donor, snap, rec)
            read_safetensors(rec, run.model)
        run.event({"type": "recovery", "iter": clock, "resume_state_iter": k, "objective": run.objective()})
    run.events.close()
    return ev


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--examples", type=int, default=6000)
    p.add_argument("--extra", type=int, default=30, help="iterations past --iters to reach the target")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--lr-decay", type=float, default=0.0, help="step lr / (1 + decay k) at iteration k")
    p.add_argument("--out", default="results-pytorch")
    p.add_argument("--data", default=os.path.join(os.environ.get("SCAR_DATA", os.path.expanduser("~/.cache/scar")),
                                                  "fashion-mnist"))
    a = p.parse_args()
    global LR, LR_DECAY
    LR, LR_DECAY = a.lr, a.lr_decay
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    x = idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))[:a.examples].reshape(-1, 784)
    y = idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))[:a.examples]
    x = torch.from_numpy(x.astype(np.float32) / 255)
    y = torch.from_numpy(y.astype(np.int64))
    data = (x, y, x[:2000], y[:2000])
    os.makedirs(a.out, exist_ok=True)
    ref = trial("reference", 0, 0, a.iters, 0, data, a.out)
    rows = []
    for t in range(1, a.trials + 1):
        T = INTERVAL + 1 + (t - 1) * max(1, (a.iters // 2 - INTERVAL)) // a.trials
        costs = {}
        for kind in ("traditional", "scar", "null"):
            ev = trial(kind, T, t, a.iters, a.extra, data, a.out)
            c = json.loads(tool("scar-bound", "cost", "--json", ref, ev, capture=True))
            costs[kind] = c
        rows.append((t, T, costs))
    with open(os.path.join(a.out, "pytorch.md"), "w") as f:
        f.write("| trial | failure after | traditional | SCAR | null (nothing lost) |\n|---|---:|---:|---:|---:|\n")
        for t, T, c in rows:
            f.write(f"| {t} | {T} | {c['traditional']['cost_interp']:.2f} | {c['scar']['cost_interp']:.2f} "
                    f"| {c['null']['cost_interp']:.2f} |\n")
        mt = sum(c["traditional"]["cost_interp"] for _, _, c in rows) / len(rows)
        ms = sum(c["scar"]["cost_interp"] for _, _, c in rows) / len(rows)
        f.write(f"| mean | | {mt:.2f} | {ms:.2f} | "
                f"{sum(c['null']['cost_interp'] for _, _, c in rows) / len(rows):.2f} |\n")
    json.dump([{"trial": t, "fail_at": T, **{k: v for k, v in c.items()}} for t, T, c in rows],
              open(os.path.join(a.out, "pytorch.json"), "w"), indent=1)
    plot(rows, a.out)
    sys.stdout.write(open(os.path.join(a.out, "pytorch.md")).read())


def plot(rows, out):
    """pytorch.png with gnuplot, when it is there: the cost of each trial, by recovery."""
    gp = os.path.join(out, "pytorch.gp")
    with open(gp, "w") as f:
        f.write("set terminal pngcairo size 800,450 noenhanced\n")
        f.write(f"set output '{os.path.join(out, 'pytorch.png')}'\n")
        f.write("set title 'PyTorch MLP on Fashion-MNIST: iteration cost of losing 1/4 of the shards'\n")
        f.write("set style data histograms\nset style fill solid 0.8 border -1\nset boxwidth 0.9\n")
        f.write("set ylabel 'iteration cost'\nset xlabel 'trial (failure after iteration T)'\n")
        f.write("set yrange [0:*]\nset offsets 0, 0, graph 0.1, 0\nset key top left\n")
        f.write("plot '-' using 2:xtic(1) title 'traditional (rollback)', '' using 2:xtic(1) title 'SCAR (partial recovery)'\n")
        for kind in ("traditional", "scar"):
            for t, T, c in rows:
                f.write(f"\"{t} (T={T})\" {c[kind]['cost_interp']}\n")
            f.write("e\n")
    try:
        subprocess.run(["gnuplot", gp], check=True, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        pass


if __name__ == "__main__":
    main()

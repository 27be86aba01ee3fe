#!/usr/bin/env python3
"""How the writers scale with cores: bench/writers.py run pinned to 2, 4, 8,
16 cores (those the machine has; --cores to choose), one codec (blosc-zstd:1
by default), into the directory named; then a markdown table and a PNG plot
(GB/s of input against cores: retile CLI, retile Python, tensorstore,
acquire-zarr and the codec alone; the storage alone is in the table).

    python3 bench/scaling.py target/release/retile /dev/shm/bench --report scaling
    python3 bench/scaling.py --plot scaling.json --report scaling   # redraw from a run's figures

writes scaling.md, scaling.png and scaling.json (every run's figures, as
writers.py --json gives them). Options after -- go to writers.py (e.g.
-- --case ragged); PLANES, REPS and the other variables of writers.py apply.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# (key in a run's figures, label): the lines of the table and the plot
LINES = [
    ("retile", "retile CLI"),
    ("retile-py", "retile Python"),
    ("tensorstore", "tensorstore"),
    ("acquire-zarr", "acquire-zarr"),
    ("codec", "codec alone"),
    ("storage", "storage alone"),
]


def core_counts(asked):
    """The core counts to run: those asked, or 2, 4, 8, 16 up to the cores this process may use."""
    have = len(os.sched_getaffinity(0))
    if asked:
        counts = [int(n) for n in asked.split(",")]
        if max(counts) > have:
            raise SystemExit(f"--cores {asked}: this process may use {have} cores")
        return counts
    return [n for n in (2, 4, 8, 16) if n <= have] or [have]


def run_one(retile, outdir, codec, cores, extra, json_path):
    """writers.py pinned to the first `cores` CPUs (its children inherit the pinning); its figures."""
    cpus = sorted(os.sched_getaffinity(0))[:cores]
    cmd = [sys.executable, os.path.join(HERE, "writers.py"), retile, outdir, codec, "--cores", str(cores),
           "--json", json_path, *extra]
    print(f"== {cores} cores: {' '.join(cmd)}", flush=True)
    subprocess.run(cmd, check=True, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    with open(json_path) as f:
        return json.load(f)


def figures(run, codec):
    """{line key: GB/s} of one run of writers.py."""
    c = run["codecs"][codec]
    got = dict(c["best"])
    got["codec"] = c["ceilings"].get("codec")
    got["storage"] = run["storage"]
    return got


def table(runs, codec):
    """The markdown table: a row per core count, a column per line, and retile's ratio to tensorstore."""
    first = runs[0]
    case = first["case"]
    head = (f"{case['planes']} frames {'x'.join(map(str, case['frame']))} {case['dtype']}, chunk "
            f"{'x'.join(map(str, case['chunk']))}, shard {'x'.join(map(str, case['shard']))}, {codec}, into "
            f"{first['work']} ({first['file_system']}); {first['machine']}; {first['when']}")
    cols = [label for _, label in LINES] + ["retile / tensorstore", "retile / lowest ceiling"]
    rows = [f"GB/s of input, best of {first['reps']}. {head}", "",
            "| cores | " + " | ".join(cols) + " |", "|---:|" + "---:|" * len(cols)]
    for run in runs:
        f = figures(run, codec)
        cells = [f"{f[k]:.2f}" if f.get(k) else "-" for k, _ in LINES]
        ts, r = f.get("tensorstore"), f.get("retile")
        lowest = min(v for v in run["codecs"][codec]["ceilings"].values() if v)
        cells += [f"{r / ts:.2f}" if r and ts else "-", f"{r / lowest:.2f}" if r else "-"]
        rows.append(f"| {run['cores']} | " + " | ".join(cells) + " |")
    problems = {(run["cores"], k): v for run in runs for k, v in run["codecs"][codec]["problems"].items()}
    rows += [""] + [f"- {cores} cores, {name}: {why}" for (cores, name), why in problems.items()]
    loose = [run for run in runs if run.get("pinning") and not run["pinning"]["enforced"]]
    rows += [f"- {run['cores']} cores: pinning NOT enforced on this host (busy processes ran "
             f"{run['pinning']['slowdown']}x one's time, {run['pinning']['expected']}x where it holds): "
             "the writers sized their threads by it, but ran on every CPU" for run in loose]
    return "\n".join(rows) + "\n"


def plot(runs, codec, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    cores = [run["cores"] for run in runs]
    for key, label in LINES:
        if key == "storage":  # in the table; on tmpfs it is many times any writer, and would flatten the lines
            continue
        ys = [figures(run, codec).get(key) for run in runs]
        pts = [(c, y) for c, y in zip(cores, ys) if y]
        if pts:
            style = "--" if key == "codec" else "-"
            ax.plot(*zip(*pts), style, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(cores, [str(c) for c in cores])
    ax.set_xlabel("cores")
    ax.set_ylabel("GB/s of input")
    ax.set_ylim(bottom=0)
    case = runs[0]["case"]
    ax.set_title(f"{'x'.join(map(str, case['frame']))} {case['dtype']}, {codec}, {runs[0]['file_system']}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("retile", nargs="?", help="the retile CLI")
    p.add_argument("outdir", nargs="?", help="where the stores are written")
    p.add_argument("--codec", default="blosc-zstd:1")
    p.add_argument("--cores", help="core counts, e.g. 2,4,8,16 (default: those of 2, 4, 8, 16 the machine has)")
    p.add_argument("--report", default="scaling", help="writes REPORT.md, REPORT.png and REPORT.json")
    p.add_argument("--plot", help="redraw the table and plot from this JSON of an earlier run; nothing is run")
    args = p.parse_args(argv)
    if args.plot:
        with open(args.plot) as f:
            saved = json.load(f)
        report(saved["runs"], saved["codec"], args.report)
        return
    if not (args.retile and args.outdir):
        p.error("give the retile CLI and the output directory (or --plot JSON)")
    os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
    runs = []
    for n in core_counts(args.cores):
        figures_of_one = os.path.join(tempfile.gettempdir(), f"scaling-{os.getpid()}-{n}cores.json")
        runs.append(run_one(os.path.abspath(args.retile), args.outdir, args.codec, n, extra, figures_of_one))
        os.remove(figures_of_one)
        with open(args.report + ".json", "w") as f:  # after every core count: a run cut short keeps what it measured
            json.dump({"codec": args.codec, "command": " ".join(sys.argv), "runs": runs}, f, indent=1)
        report(runs, args.codec, args.report)


def report(runs, codec, path):
    """Writes PATH.md (and prints it) and PATH.png from the runs' figures."""
    text = table(runs, codec)
    with open(path + ".md", "w") as f:
        f.write(text)
    print(text, flush=True)
    try:
        plot(runs, codec, path + ".png")
        print(f"plot: {path}.png")
    except ImportError as e:
        print(f"no plot ({e}); the figures are in {path}.json: redraw with --plot {path}.json")


if __name__ == "__main__":
    main()

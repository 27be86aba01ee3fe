import os, subprocess, sys, time, shutil, re
import numpy as np
retile, raw, out = sys.argv[1], sys.argv[2], sys.argv[3]
if not os.path.exists(raw):
    sys.path.insert(0, "bench"); from frames import frames_file
    raw = frames_file(os.path.dirname(raw), int(os.environ.get("PLANES", "384")), 2048, 2048)
codec = sys.argv[4] if len(sys.argv) > 4 else "blosc-lz4:1"
reps = int(os.environ.get("REPS", "3"))
H = W = 2048
frames = np.fromfile(raw, dtype=np.uint16).reshape(-1, H, W)
planes = frames.shape[0]; gb = frames.nbytes / 1e9
def cli():
    cmd = [retile, "stream", "--shape", f"0,{H},{W}", "--tile", "64,256,256", "--dtype", "u16",
           "--shard", "1,4,4", "--codec", codec, "--input", raw, "--output", out]
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in p.stdout:
        lines.append((time.perf_counter() - t, line))
    p.wait(); w = time.perf_counter() - t
    text = "".join(l for _, l in lines)
    m = re.search(r"in ([0-9.]+) s:", text)
    first, last = lines[0][0], lines[-1][0]
    return w, (float(m.group(1)) if m else -1, first, last), text
def py():
    import retile as rt
    t = time.perf_counter()
    with rt.Stream(out, shape=(0, H, W), tile=(64, 256, 256), dtype="uint16", shard=(1, 4, 4), codec=codec) as s:
        for i in range(planes):
            s.append(frames[i])
    return time.perf_counter() - t, s
def spawn():
    t = time.perf_counter(); subprocess.run([retile, "--version"], capture_output=True); return time.perf_counter() - t
for rep in range(reps):
    shutil.rmtree(out, ignore_errors=True)
    w, inner, err = cli()
    shutil.rmtree(out, ignore_errors=True)
    p, s = py()
    print(f"rep {rep}: cli wall {w:.3f} s ({gb/w:.2f} GB/s) inner {inner[0]:.3f} first line {inner[1]:.3f} last line {inner[2]:.3f} exit {w-inner[2]:.3f} | py {p:.3f} s ({gb/p:.2f} GB/s) | spawn {spawn()*1e3:.1f} ms", flush=True)
    print("   ", " | ".join(l.strip() for l in err.splitlines()[:2]))
    d = s.summary
    print("    py:", {k: round(v, 3) for k, v in d.items() if k.endswith("seconds") and v is not None}, flush=True)

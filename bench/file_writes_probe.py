"""How fast N threads write into F files at once, here: whether a file
system serializes the writes of one file (a per-inode lock), so that the
number of files written at once, not the threads, decides the rate; and
what the waiting costs: the CPU time (user + system) the writes took.

    python3 bench/file_writes_probe.py DIR [GB]

Each case writes the same bytes (8 MiB pwrites, threads spread over the
files, each file's offsets disjoint), best of 3, and prints GB/s and the
CPU seconds of that run.
"""
import os
import resource
import shutil
import sys
import threading
import time

work = sys.argv[1]
total = int(float(sys.argv[2] if len(sys.argv) > 2 else "3.2") * 1e9)
block = 8 << 20
data = os.urandom(block)


def run(threads, files, direct=False):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_DIRECT if direct else 0)
    fds = [os.open(os.path.join(work, f"f{k}"), flags, 0o644) for k in range(files)]
    blocks = total // block
    buf = data
    if direct:
        import mmap
        buf = mmap.mmap(-1, block)
        buf.write(data)
    counter = iter(range(blocks))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            f = i % files
            os.pwrite(fds[f], buf, (i // files) * block)

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    used = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    for x in ts:
        x.start()
    for x in ts:
        x.join()
    secs = time.perf_counter() - t
    now = resource.getrusage(resource.RUSAGE_SELF)
    cpu = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
    for fd in fds:
        os.close(fd)
    shutil.rmtree(work, ignore_errors=True)
    return blocks * block / secs / 1e9, cpu


cores = os.cpu_count()
print(f"{total / 1e9:.1f} GB in 8 MiB pwrites into {work}, {cores} cores")
for threads, files in [(cores, 1), (cores, 4), (cores, 8), (cores, cores), (4, 4), (8, 8), (cores, 4 * cores)]:
    rate, cpu = max(run(threads, files) for _ in range(3))
    print(f"  {threads:3d} threads, {files:3d} files: {rate:6.2f} GB/s, {cpu:5.2f} s of CPU")

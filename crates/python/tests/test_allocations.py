"""Sizes that come from the user are checked before anything is allocated:
a request too large for the machine is a MemoryError or ValueError saying
what to change, never an abort ("memory allocation ... failed") or the OOM
killer. Each case runs in a child process with its address space limited
to 4 GiB, so that an unchecked allocation fails fast (and could not take
the test run down with it)."""
import subprocess
import sys
import textwrap

import pytest

CASES = {
    "a table of 10**12 entries": "retile.Layout(10**12, 1).table()",
    "a table asked for 10**12 entries": "retile.Layout(4, 1).table(10**12)",
    "a table of 2**25 entries": "retile.Layout((2**13, 2**12)).table()",
    "a table of a huge nested layout": "retile.Layout.parse('((1000000,1000000),(1000,1000)):((1,1000000),(0,7))').table()",
    "tile buffers past memory": "retile.Stream(None, shape=(0, 10**6, 10**6), tile=(10**6, 10**6, 10**6), dtype='u8')",
    "planes of 10**18 tiles": "retile.Stream(None, shape=(0, 10**9, 10**9), tile=(1, 1, 1), dtype='u8')",
    "shards too large to address": "retile.Stream(OUT, shape=(0, 64, 64), tile=(1, 1, 1), dtype='u8', shard=(10**12, 10**12, 10**12))",
    "a pyramid over planes of 10**12 tiles": "retile.Stream(OUT, shape=(0, 10**6, 10**6), tile=(1, 1, 1), dtype='u8', pyramid='mean')",
    "a drawing of 10**8 cells": "retile.show('local(10000, 10000)')",
    "a drawing of 10**12 offsets": "retile.show('1000000000000:1')",
    "holders of 10**12 threads": "retile.eval('holders(spatial(-1000000000000, 2), [1])')",
}


@pytest.mark.parametrize("name", CASES)
def test_user_sized_allocations_are_errors_not_aborts(tmp_path, name):
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import retile
        OUT = sys.argv[1]
        try:
            {CASES[name]}
        except (MemoryError, ValueError) as e:
            print(type(e).__name__, e)
        else:
            print("no error")
    """)
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "out.zarr")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{name}: exit {run.returncode}: {run.stderr[-2000:]}"
    answer = run.stdout.strip()
    assert answer.startswith(("MemoryError", "ValueError")), f"{name}: {answer}"

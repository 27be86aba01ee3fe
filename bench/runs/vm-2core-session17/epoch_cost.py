import time, retile, numpy as np, sys
for out in [None, "/tmp/epoch-cost.zarr"]:
  for what in ["skip","append"]:
    s = retile.Stream(out, shape=(0,), tile=(4,), dtype="u8", **({"overwrite":True} if out else {}))
    n=200000
    t=time.perf_counter()
    if what=="skip": s.append(np.ones(4,np.uint8)); s.skip(n)
    else:
        a=np.ones(n,np.uint8); s.append(a)
    dt=time.perf_counter()-t; f=s.finish()
    print(out, what, n, "planes", round(dt,2), "s", round(dt/(n/4)*1e6,1), "us/epoch", f.get("files"))

import time, retile, numpy as np, signal, os, threading, sys
for shape,tile in [((0,),(4,)),((0,16),(2,16))]:
    s = retile.Stream(f"/tmp/skip-tiny{len(shape)}.zarr", shape=shape, tile=tile, dtype="u8", overwrite=True)
    s.append(np.ones(shape[1:] or (1,), np.uint8) if len(shape)>1 else np.ones(4,np.uint8))
    t=time.perf_counter(); s.skip(10**6); dt=time.perf_counter()-t
    print(shape, tile, "skip 1e6 planes:", round(dt,2), "s")
    fired=[0]
    def fire(): fired[0]=time.perf_counter(); os.kill(os.getpid(), signal.SIGINT)
    threading.Timer(0.3, fire).start()
    try: s.skip(2**31)
    except KeyboardInterrupt: print("  interrupt latency", round(time.perf_counter()-fired[0],3), "s")
    print("  skipped", s.finish()["skipped_planes"])

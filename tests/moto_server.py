#!/usr/bin/env python3
"""A moto S3 server on 127.0.0.1 for the S3 tests (Rust, CLI and Python).

    python3 tests/moto_server.py [--bucket NAME]

The server listens on a port the system chooses as it binds, so servers and
fault proxies started at once by parallel tests never meet on one port (a
port picked free and bound later can be taken in between). Once it takes
requests, with NAME made, it prints `port P` on its first line. It exits
when its standard input closes or after --lifetime seconds.
"""

import argparse
import logging
import os
import sys
import threading
import urllib.error
import urllib.request


def start(bucket=None):
    """Starts moto in this process on a port of 127.0.0.1 the system
    chooses, with `bucket` made if given; its port."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()  # returns once the socket listens
    port = server.get_host_and_port()[1]
    if bucket is not None:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/{bucket}", method="PUT")
        try:
            urllib.request.urlopen(request, timeout=60).read()
        except urllib.error.HTTPError as e:
            sys.exit(f"moto refused the bucket {bucket!r}: {e}")
    return port


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bucket", help="a bucket to make before the port is printed")
    parser.add_argument("--lifetime", type=float, default=900.0, help="seconds before the server exits")
    args = parser.parse_args()
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    print(f"port {start(args.bucket)}", flush=True)
    threading.Event().wait(args.lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()

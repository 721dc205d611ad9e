"""A small HTTP load generator for machines without wrk: ``python -m config.devtools.loadgen URL
CONNECTIONS SECONDS`` keeps CONNECTIONS keep-alive connections busy with GETs of URL for SECONDS
and prints one JSON line: requests, seconds, errors and latency percentiles in ms. It imports
nothing of the site and runs in its own process, so what it measures is the server's time.
(bench_load prefers wrk, whose client costs far less CPU than this one.)"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from urllib.parse import urlsplit


def drive(url: str, connections: int, seconds: float) -> dict:
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def client():
        mine, failed = [], 0
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        while time.monotonic() < deadline:
            begin = time.perf_counter()
            try:
                connection.request("GET", target, headers={"Accept-Encoding": "gzip"})
                response = connection.getresponse()
                response.read()
                ok = response.status < 400
            except (OSError, http.client.HTTPException):
                ok = False
                connection.close()
                connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            if ok:
                mine.append(time.perf_counter() - begin)
            else:
                failed += 1
        connection.close()
        with lock:
            latencies.extend(mine)
            errors[0] += failed

    begin = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - begin
    latencies.sort()

    def percentile(p: float) -> float:
        return 1000 * latencies[int(p / 100 * (len(latencies) - 1))] if latencies else 0.0

    return {
        "requests": len(latencies) + errors[0],
        "seconds": wall,
        "errors": errors[0],
        "p50": percentile(50),
        "p95": percentile(95),
        "p99": percentile(99),
    }


if __name__ == "__main__":
    url, connections, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    print(json.dumps(drive(url, connections, seconds)))

"""Open-loop HTTP load: GET PATH at RATE requests/s for SECONDS, on keep-alive
connections to 127.0.0.1:PORT. Each latency runs from the moment the request was
due (not sent), so a stall counts against every request it delayed. Prints one JSON
object: requests, errors, statuses, p50/p90/p99/max in milliseconds.

usage: api_load.py PORT PATH RATE SECONDS
"""
import http.client
import json
import sys
import time


def main(port, path, rate, seconds):
    port, rate, seconds = int(port), float(rate), float(seconds)
    connection = None
    latencies, statuses, errors = [], {}, 0
    start = time.monotonic()
    total = int(rate * seconds)
    for i in range(total):
        due = start + i / rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        try:
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            statuses[response.status] = statuses.get(response.status, 0) + 1
            if response.will_close:
                connection.close()
                connection = None
        except (OSError, http.client.HTTPException):
            errors += 1
            if connection:
                connection.close()
            connection = None
            continue
        latencies.append(time.monotonic() - due)
    latencies.sort()

    def pct(p):
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 3) if latencies else None

    print(json.dumps({"requests": total, "errors": errors, "statuses": statuses,
                      "seconds": round(time.monotonic() - start, 2),
                      "p50_ms": pct(0.50), "p90_ms": pct(0.90), "p99_ms": pct(0.99),
                      "max_ms": round(latencies[-1] * 1000, 3) if latencies else None}))


if __name__ == "__main__":
    main(*sys.argv[1:])

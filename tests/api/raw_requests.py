"""Bad requests over real HTTP, byte for byte, to a running daemon.

usage: raw_requests.py table PORT TOKEN | budget PORT PER_PEER WORKERS | rate PORT PER_SECOND
       | siege PORT UID STOP_FILE

Each row of the table is a request no curl would send (smuggling, oversize, stalls,
injection); each must get a clear 4xx (or a closed connection where HTTP cannot
answer) and leave the daemon serving. Prints "ok: ..." or "FAIL: ..." per row; exits
1 when any row fails.
"""
import json
import os
import select
import socket
import sys
import time

HOST = "127.0.0.1"


def connect(port):
    s = socket.create_connection((HOST, port), timeout=15)
    s.settimeout(15)
    return s


def read_response(s):
    """The status, headers and body of one response, or None if the peer closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    length = int(headers.get("content-length", ["0"])[0])
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def exchange(port, raw):
    s = connect(port)
    try:
        s.sendall(raw)
        return read_response(s)
    finally:
        s.close()


def request(method, path, headers=(), body=b"", token=None, host=HOST):
    lines = [f"{method} {path} HTTP/1.1"] + ([f"Host: {host}"] if host is not None else [])
    if token:
        lines.append(f"Authorization: Bearer {token}")
    lines += list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Checks:
    def __init__(self):
        self.failed = 0

    def check(self, ok, what, got):
        print(("ok: " if ok else "FAIL: ") + what + f" ({got})", flush=True)
        if not ok:
            self.failed += 1

    def status(self, response, want, what):
        got = "closed" if response is None else response[0]
        self.check(got == want, what, got)
        return response


def settings(port):
    r = exchange(port, request("GET", "/v1/settings"))
    return json.loads(r[2]) if r and r[0] == 200 else None


def main(port, token):
    port = int(port)
    c = Checks()
    before = settings(port)
    patch = b'{"max_parallel": 7}'
    length = f"Content-Length: {len(patch)}"
    json_type = "Content-Type: application/json"

    # Request smuggling and bodies the library would not bound.
    c.status(exchange(port, request("PATCH", "/v1/settings", ["Transfer-Encoding: chunked", json_type],
                                    b"13\r\n" + patch + b"\r\n0\r\n\r\n", token)),
             400, "Transfer-Encoding refused")
    c.status(exchange(port, request("PATCH", "/v1/settings", [length, "Transfer-Encoding: chunked",
                                                              json_type], patch, token)),
             400, "Content-Length with Transfer-Encoding refused")
    c.status(exchange(port, request("PATCH", "/v1/settings", [length, length, json_type], patch, token)),
             400, "two Content-Length headers refused")
    c.status(exchange(port, request("PATCH", "/v1/settings", ["Content-Length: 19, 19", json_type],
                                    patch, token)),
             400, "a Content-Length list refused")
    c.status(exchange(port, request("PATCH", "/v1/settings", ["Content-Length: -1", json_type], b"", token)),
             400, "a negative Content-Length refused")
    c.status(exchange(port, request("PATCH", "/v1/settings", ["Content-Length: 1048576", json_type],
                                    b"", token)),
             413, "a 1 MiB Content-Length refused before the body is sent")
    c.status(exchange(port, request("PATCH", "/v1/settings", [length, "Content-Encoding: gzip", json_type],
                                    patch, token)),
             415, "Content-Encoding refused")

    # Headers: count and size bounded; values never echoed.
    many = [f"X-Filler-{i}: {i}" for i in range(70)]
    c.status(exchange(port, request("GET", "/v1/disks", many)), 431, "70 headers refused (the guard's 64)")
    # Debian 13's library counts too (100 at most, CVE-2025-52887), before the guard.
    r = exchange(port, request("GET", "/v1/disks", [f"X-Filler-{i}: {i}" for i in range(1000)]))
    c.check(r is not None and r[0] in (400, 431), "1000 headers refused", r and r[0])
    r = exchange(port, request("GET", "/v1/disks", ["X-Big: " + "a" * 20000]))
    c.check(r is not None and r[0] in (400, 431), "a 20 KB header refused", r and r[0])
    r = exchange(port, request("GET", "/v1/disks/%0d%0aX-Injected:%20yes", ["X-Echo: %0d%0aX-Injected: yes"]))
    c.check(r is not None and "x-injected" not in r[1] and "x-echo" not in r[1],
            "no request header or CR/LF echoed into the response headers", r and r[0])
    r = exchange(port, request("GET", "/v1/nothing"))
    c.check(r is not None and r[0] == 404 and r[1].get("content-type") == ["application/problem+json"],
            "an unknown route: problem+json", r and r[0])

    # Odd request lines and paths.
    c.status(exchange(port, b"GARBAGE\r\n\r\n"), 400, "a request line that is not HTTP")
    r = exchange(port, request("GET", "/v1/disks/..%2F..%2Fetc%2Fpasswd"))
    c.check(r is not None and r[0] in (400, 404), "an id with encoded slashes", r and r[0])
    c.status(exchange(port, request("GET", "/v1/disks/a%00b")), 400, "an id with a NUL")
    c.status(exchange(port, request("GET", "/v1/disks/" + "a" * 600)), 404, "an id over 512 characters")
    r = exchange(port, request("BREW", "/v1/disks"))
    c.check(r is not None and r[0] in (400, 405, 501), "an unknown method", r and r[0])

    # DNS rebinding: a name someone else resolves to 127.0.0.1 is not this daemon's,
    # nor is a page from another origin; this machine's own names are.
    c.status(exchange(port, request("GET", "/v1/disks", host=f"evil.example:{port}")), 421,
             "a Host of another name refused")
    c.status(exchange(port, request("GET", "/v1/disks", host="127.0.0.1.evil.example")), 421,
             "a Host that only starts like an address refused")
    c.status(exchange(port, request("GET", "/v1/disks", [f"Host: localhost:{port}"])), 421,
             "two Host headers refused")
    for host in (f"localhost:{port}", f"[::1]:{port}", f"127.0.0.1:{port}", f"{socket.gethostname()}:{port}"):
        c.status(exchange(port, request("GET", "/v1/disks", host=host)), 200, f"Host {host} served")
    c.status(exchange(port, request("GET", "/v1/disks", host=None)), 200, "no Host (HTTP/1.0 style) served")
    c.status(exchange(port, request("GET", "/v1/disks", ["Origin: http://evil.example"])), 403,
             "an Origin of another site refused")
    c.status(exchange(port, request("GET", "/v1/disks", ["Origin: null"])), 403, "Origin null refused")
    c.status(exchange(port, request("GET", "/v1/disks", [f"Origin: http://127.0.0.1:{port}"])), 200,
             "an Origin of this address served")

    # The token: mutating requests need it; a wrong one or a second header is refused.
    r = c.status(exchange(port, request("PATCH", "/v1/settings", [length, json_type], patch)), 401,
                 "PATCH without the token")
    c.check(r is not None and "www-authenticate" in r[1], "401 says how to authenticate", r and r[1].get("www-authenticate"))
    c.status(exchange(port, request("PATCH", "/v1/settings", [length, json_type], patch, "x" * len(token))),
             401, "PATCH with a wrong token")
    c.status(exchange(port, request("PATCH", "/v1/settings", [length, json_type, "Authorization: Bearer x"],
                                    patch, token)),
             400, "two Authorization headers")
    c.status(exchange(port, request("POST", "/v1/disks/none/start")), 401, "start without the token")
    c.status(exchange(port, request("GET", "/v1/settings")), 200, "GET from loopback without the token")
    c.check(settings(port) == before, "settings unchanged by every refused request", settings(port))

    # A length-less POST has no body: answered at once, not after a read timeout.
    c.status(exchange(port, request("POST", "/v1/disks/none/pause", [], b"", token)), 404,
             "a POST without a body")

    # Stalled clients: the server hangs up on them; others are served meanwhile.
    stalled_since = time.monotonic()
    stalled_head = connect(port)
    stalled_head.sendall(b"GET /v1/disks HTTP/1.1\r\nHost: x\r\n")
    stalled_body = connect(port)
    stalled_body.sendall(request("PATCH", "/v1/settings", ["Content-Length: 100", json_type], b'{"max_', token))
    c.status(exchange(port, request("GET", "/healthz")), 200, "served while two clients stall")
    for s, what in ((stalled_head, "headers"), (stalled_body, "body")):
        s.settimeout(30)
        try:
            r = read_response(s)
        except (ConnectionResetError, socket.timeout) as e:
            r = e
        waited = time.monotonic() - stalled_since
        c.check(r is None or (isinstance(r, tuple) and r[0] in (400, 408)),
                f"a client stalled in its {what} is let go", r if not isinstance(r, tuple) else r[0])
        if not isinstance(r, socket.timeout):
            print(f"   (after {waited:.1f} s)")
        s.close()
    c.check(settings(port) == before, "settings unchanged by the stalled PATCH", settings(port))

    # The right token works (last: it changes the settings).
    c.status(exchange(port, request("PATCH", "/v1/settings", [length, json_type], patch, token)), 200,
             "PATCH with the token")
    c.check((settings(port) or {}).get("max_parallel") == 7, "the PATCH applied", settings(port))
    return 1 if c.failed else 0


def hold(port, n, head=b"GET /v1/disks HTTP/1.1\r\nHost: x\r\n"):
    """N connections, each with a head begun and never finished."""
    held = []
    for _ in range(n):
        s = connect(port)
        s.sendall(head)
        held.append(s)
    return held


def answered_within(s, seconds):
    """The response on S if one (or a close) comes within SECONDS, else "nothing"."""
    ready, _, _ = select.select([s], [], [], seconds)
    if not ready:
        return "nothing"
    try:
        return read_response(s)
    except OSError:
        return None


HELD = []  # what a child holds open until it is let go


class AsUser:
    """A child process of uid UID that holds N connections until it is let go, or
    answers one question: the kernel tells the daemon its peer's uid."""

    def __init__(self, uid, fn):
        r, w = os.pipe()
        self.go_r, self.go_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(r)
            os.close(self.go_w)
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                out = fn()
            except Exception as e:  # the parent reports it
                out = repr(e)
            os.write(w, (json.dumps(out) + "\n").encode())
            os.read(self.go_r, 1)  # hold what fn opened until let go
            os._exit(0)
        os.close(w)
        os.close(self.go_r)
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(r, 65536)
            if not chunk:
                break
            line += chunk
        os.close(r)
        self.result = json.loads(line) if line else "the child died"

    def let_go(self):
        os.close(self.go_w)
        os.waitpid(self.pid, 0)


def status_of(r):
    return "nothing" if r == "nothing" else ("closed" if r is None else r[0])


def connection_budget(port, per_peer, workers):
    """Each local user holds at most PER_PEER connections; others are served
    meanwhile; a request must come whole within its deadline however it trickles; a
    huge header line is refused early; past WORKERS busy and as many waiting, a
    connection is refused at once."""
    port, per_peer, workers = int(port), int(per_peer), int(workers)
    c = Checks()
    nobody = 65534
    mine = hold(port, per_peer)
    time.sleep(0.3)
    extra = connect(port)
    extra.sendall(request("GET", "/healthz"))
    r = answered_within(extra, 2)
    c.check(status_of(r) == 503 and b"too-many-connections" in r[2],
            f"a connection past {per_peer} of one user is refused at once", status_of(r))
    other = AsUser(nobody, lambda: status_of(answered_within(
        (lambda s: (s.sendall(request("GET", "/healthz")), s)[1])(connect(port)), 5)))
    other.let_go()
    c.check(other.result == 200, "another user is served meanwhile", other.result)
    for s in mine:
        s.close()
    time.sleep(0.3)

    # Trickled: a byte every half second never finishes a head, and the deadline
    # counts from the first byte, not from the last read.
    s = connect(port)
    s.sendall(b"GET /v1/disks HTTP/1.1\r\n")
    started = time.monotonic()
    r = "nothing"
    while time.monotonic() - started < 15:
        ready, _, _ = select.select([s], [], [], 0.5)
        if ready:
            r = read_response(s)
            break
        try:
            s.sendall(b"X")
        except OSError:
            r = None
            break
    took = time.monotonic() - started
    c.check(status_of(r) == 408 and took < 8, "a trickled head gets 408 within its deadline",
            f"{status_of(r)} after {took:.1f} s")
    s.close()

    # A header line without end, as another user: refused after a few KiB, not read
    # on for as long as it comes.
    def huge_line():
        s = connect(port)
        s.sendall(b"GET /v1/disks HTTP/1.1\r\nX-Long: ")
        sent, chunk = 0, b"a" * 65536
        while sent < 256 << 20:
            ready, _, _ = select.select([s], [], [], 0)
            if ready:
                break
            try:
                s.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
        r = answered_within(s, 5)
        return [status_of(r), sent]
    other = AsUser(nobody, huge_line)
    other.let_go()
    got, sent = other.result if isinstance(other.result, list) else (other.result, 0)
    c.check(got == 431 and sent < 64 << 20, "a header line without end gets 431 early",
            f"{got} after {sent >> 10} KiB sent")

    # Every worker held: the other users' share (all but an eighth) by several
    # users, a budget's worth each, the rest (root's) by root, this process; as many
    # waiting: the next connection is refused at once, not queued.
    reserve = max(1, workers // 8)
    others = workers - reserve
    counts = [per_peer] * (others // per_peer) + ([others % per_peer] if others % per_peer else [])
    users = [AsUser(nobody - i, lambda n=n: (HELD.extend(hold(port, n)), "held")[1])
             for i, n in enumerate(counts)]
    time.sleep(0.3)
    roots = hold(port, reserve)
    time.sleep(0.3)
    waiting = [connect(port) for _ in range(workers)]
    time.sleep(0.3)
    late = connect(port)
    r = answered_within(late, 2)
    c.check(status_of(r) == 503 and b"busy" in r[2], "past every worker and the queue: 503 at once",
            status_of(r))
    for u in reversed(users):  # a later child holds the earlier ones' pipes too
        u.let_go()
    for s in roots + waiting + [late, extra]:
        s.close()
    return 1 if c.failed else 0


def rate_limit(port, rate):
    """Over the per-client rate: 429 with Retry-After; a forwarded-for header is no way out."""
    port, rate = int(port), int(rate)
    c = Checks()
    statuses = []
    for i in range(4 * rate):
        r = exchange(port, request("GET", "/v1/settings", [f"X-Forwarded-For: 10.0.0.{i}",
                                                           f"X-Real-IP: 10.0.1.{i}"]))
        statuses.append(r and r[0])
        if r and r[0] == 429:
            c.check("retry-after" in r[1], "429 says when to retry", r[1].get("retry-after"))
            c.check(r[1].get("content-type") == ["application/problem+json"], "429 is problem+json",
                    r[1].get("content-type"))
            break
    c.check(429 in statuses, f"a burst over {rate}/s meets 429", f"{statuses.count(200)} served first")
    time.sleep(2)
    c.status(exchange(port, request("GET", "/v1/settings")), 200, "served again after a pause")
    return 1 if c.failed else 0


def siege(port, uid, stop_file):
    """As user UID, until STOP_FILE exists: 40 connections kept begun and trickled a
    byte every half second (each reconnected once refused or timed out), event
    streams opened, and a header line without end sent again and again (a second
    process). Prints what the daemon answered, as JSON, at the end."""
    port, uid = int(port), int(uid)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    seen = {}

    def note(r):
        key = str(status_of(r))
        seen[key] = seen.get(key, 0) + 1

    liner = os.fork()
    if liner == 0:
        while not os.path.exists(stop_file):
            try:
                s = connect(port)
                s.sendall(b"GET /v1/disks HTTP/1.1\r\nX-Long: ")
                for _ in range(1024):
                    if select.select([s], [], [], 0)[0]:
                        break
                    s.sendall(b"a" * 65536)
                s.close()
            except OSError:
                time.sleep(0.1)
        os._exit(0)
    held = []  # [socket, is an event stream]
    while not os.path.exists(stop_file):
        while len(held) < 40:
            stream = len(held) % 4 == 0
            try:
                s = connect(port)
                s.sendall(request("GET", "/v1/events") if stream
                          else b"GET /v1/disks HTTP/1.1\r\n")
                s.setblocking(False)
                held.append([s, stream])
            except OSError:
                break
        time.sleep(0.5)
        for entry in list(held):
            s, stream = entry
            try:
                if not select.select([s], [], [], 0)[0]:
                    if not stream:
                        s.send(b"X")
                    continue
                data = s.recv(65536)
                if stream and data.startswith(b"HTTP/1.1 200"):
                    note(["stream 200"])
                    entry[1] = "open"
                    continue
                if stream == "open" and data:
                    continue
                note([int(data.split(b" ")[1])] if data.startswith(b"HTTP/1.1 ") else None)
            except (OSError, ValueError, IndexError):
                note(None)
            s.close()
            held.remove(entry)
    for s, _ in held:
        s.close()
    os.waitpid(liner, 0)
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    modes = {"table": main, "budget": connection_budget, "rate": rate_limit, "siege": siege}
    sys.exit(modes[sys.argv[1]](*sys.argv[2:]))

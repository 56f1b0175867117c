#!/usr/bin/env python3
"""A webhook receiver for the events test: checks each POST's signature as the
Standard Webhooks specification says, from the specification alone (not from
prewarmd's code), and writes one JSON line per request to LOG:
{"id", "type", "subject", "time", "received_ms", "valid", "why"}.

  webhook_receiver.py PORT SECRET_FILE LOG CERT KEY [--hang]

It serves HTTPS with CERT and KEY. Valid: 204; not: 401. With --hang it reads the
request, writes {"held": true} and never answers.
"""
import base64
import hashlib
import hmac
import http.server
import json
import ssl
import sys
import threading
import time

port, secret_file, log_path, cert, key = sys.argv[1:6]
hang = "--hang" in sys.argv[6:]
secret = open(secret_file).read().strip()
# "whsec_" and base64: the key is the decoded bytes (Standard Webhooks).
key_bytes = base64.b64decode(secret[len("whsec_"):]) if secret.startswith("whsec_") else secret.encode()
lock = threading.Lock()
TOLERANCE_S = 5 * 60


def record(entry):
    with lock, open(log_path, "a") as log:
        log.write(json.dumps(entry) + "\n")


def verify(headers, body):
    msg_id = headers.get("webhook-id", "")
    timestamp = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not msg_id or not timestamp.isdigit():
        return "no webhook-id or webhook-timestamp"
    if abs(time.time() - int(timestamp)) > TOLERANCE_S:
        return "timestamp out of tolerance"
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key_bytes, signed, hashlib.sha256).digest()).decode()
    for signature in signatures.split(" "):
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return ""
    return "no signature matches"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if hang:
            record({"held": True})
            time.sleep(3600)
            return
        why = verify(self.headers, body)
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        if self.headers.get("Content-Type") != "application/cloudevents+json":
            why = why or "content type " + str(self.headers.get("Content-Type"))
        if event.get("specversion") != "1.0" or event.get("id") != self.headers.get("webhook-id"):
            why = why or "not a CloudEvent whose id is the webhook-id"
        record({"id": event.get("id"), "type": event.get("type"), "subject": event.get("subject"),
                "time": event.get("time"), "source": event.get("source"),
                "data_state": (event.get("data") or {}).get("state"),
                "received_ms": int(time.time() * 1000), "valid": not why, "why": why})
        self.send_response(401 if why else 204)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
server.daemon_threads = True
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()

#!/usr/bin/env python3
"""registry_proxy.py — a registry's misbehaviours for test_pull.c: a proxy on 127.0.0.1 in
front of a real docker-registry (also on 127.0.0.1) that passes everything through except
what MODE changes, and logs every request (method, path, Range, Authorization kind, status).

Usage: registry_proxy.py MODE UPSTREAM_PORT PORT_FILE LOG [DIGEST]
  pass      nothing changed
  cut       the first GET of blob DIGEST sends half its bytes, then drops the connection
  corrupt   blob (or manifest) DIGEST is sent with one byte flipped (same length)
  truncate  blob DIGEST is sent short, with a Content-Length that says so
  error     GETs of blob DIGEST answer 500
  bearer    every /v2/ request needs a Bearer token, handed out at /token to user:pass
            (basic auth) only, as docker's token authentication has it
The proxy binds an ephemeral port, writes it to PORT_FILE, and serves until killed.
"""
import base64
import http.client
import http.server
import os
import secrets
import sys
import threading

MODE, UP, PORT_FILE, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
DIGEST = sys.argv[5] if len(sys.argv) > 5 else ""
TOKEN = secrets.token_hex(16)
cut_done = threading.Event()
log_lock = threading.Lock()


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def note(self, status):
        auth = self.headers.get("Authorization", "")
        with log_lock, open(LOG, "a") as f:
            f.write("%s %s range=%s auth=%s status=%s\n" % (
                self.command, self.path, self.headers.get("Range", "-"),
                auth.split(" ")[0] if auth else "-", status))

    def plain(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.note(status)

    def bearer_gate(self):
        if self.path.startswith("/token"):
            want = "Basic " + base64.b64encode(b"user:pass").decode()
            if self.headers.get("Authorization") != want:
                self.plain(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}')
                return False
            self.plain(200, ('{"token":"%s"}' % TOKEN).encode(),
                       [("Content-Type", "application/json")])
            return False
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            port = self.server.server_address[1]
            ch = ('Bearer realm="http://127.0.0.1:%d/token",service="test-registry",'
                  'scope="repository:layers:pull"' % port)
            self.plain(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                       [("WWW-Authenticate", ch), ("Content-Type", "application/json")])
            return False
        return True

    def do_GET(self):
        if MODE == "bearer" and not self.bearer_gate():
            return
        target = DIGEST and (self.path.endswith("/blobs/" + DIGEST) or
                             self.path.endswith("/manifests/" + DIGEST))
        if MODE == "error" and target:
            self.plain(500, b"upstream trouble")
            return
        up = http.client.HTTPConnection("127.0.0.1", UP, timeout=60)
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() not in ("host", "authorization", "connection")}
        up.request("GET", self.path, headers=hdrs)
        r = up.getresponse()
        body = r.read()
        up.close()
        status = r.status
        if target and status in (200, 206):
            if MODE == "corrupt":
                body = body[:-1] + bytes([body[-1] ^ 0xFF])
            elif MODE == "truncate":
                body = body[: len(body) // 2]
            elif MODE == "cut" and not cut_done.is_set():
                cut_done.set()
                self.send_response(status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.note("%d-cut" % status)
                self.close_connection = True
                self.connection.shutdown(2)
                return
        self.send_response(status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.note(status)



srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
srv.daemon_threads = True
tmp = PORT_FILE + ".tmp"
with open(tmp, "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(tmp, PORT_FILE)
srv.serve_forever()

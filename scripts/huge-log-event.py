#!/usr/bin/env python3
# A loopback proxy before the emulator: every FilterLogEvents answer's first event carries a
# message of SIZE bytes, to measure what `quotatop logs` holds for a huge event
# (docs/figures.md). Usage, with the release binary:
#   target/release/quotatop emulator --port 5601 --speed 60 &
#   python3 scripts/huge-log-event.py 5601 5602 67108864 &
#   sleep 20; AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1 \
#     /usr/bin/time -f "%e s %M kB" target/release/quotatop logs video-pretrain \
#     --endpoint-url http://127.0.0.1:5602 >/dev/null
# Arguments: the emulator's port, this proxy's port (both on 127.0.0.1), the message's bytes.
import http.server, http.client, json, sys
UP = int(sys.argv[1]); PORT = int(sys.argv[2]); SIZE = int(sys.argv[3])
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self): self.fwd("POST")
    def do_GET(self): self.fwd("GET")
    def fwd(self, m):
        n = int(self.headers.get("Content-Length", 0)); body = self.rfile.read(n) if n else None
        c = http.client.HTTPConnection("127.0.0.1", UP)
        c.request(m, self.path, body=body, headers={k: v for k, v in self.headers.items()})
        r = c.getresponse(); data = r.read()
        if "FilterLogEvents" in (self.headers.get("X-Amz-Target") or "") and r.status == 200:
            j = json.loads(data)
            if j.get("events"):
                j["events"][0]["message"] = "x" * SIZE
                data = json.dumps(j).encode()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()

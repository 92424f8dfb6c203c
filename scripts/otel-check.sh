#!/usr/bin/env bash
# Builds `storekeeper` with the OTel trait (its own scratch path: swift-otel and swift-protobuf,
# a few minutes cold), starts `serve --simulator` pointed at a stand-in OTLP/HTTP collector (a
# Python server that records what it receives), makes requests, stops the server with SIGTERM and
# checks that the spans arrived as OTLP protobuf under the service name. Not part of
# scripts/test.sh: the default build never compiles swift-otel (docs/DEPLOYMENT.md, "Traces").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
swift build --product storekeeper --traits OTel --scratch-path .build-otel
BIN=$ROOT/.build-otel/debug/storekeeper
WORK=$(mktemp -d)
SERVER='' COLLECTOR=''
stop() { for pid in $SERVER $COLLECTOR; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap stop EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
OTLP=$(port) API=$(port) SIM=$(port)
python3 - "$OTLP" "$WORK/received" <<'PY' &
import http.server, sys
port, path = int(sys.argv[1]), sys.argv[2]
class Collector(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(path, "ab") as f:
            f.write(f"POST {self.path} {self.headers.get('Content-Type')}\n".encode() + body + b"\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", port), Collector).serve_forever()
PY
COLLECTOR=$!
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$OTLP OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
  "$BIN" serve --simulator --port "$API" --simulator-port "$SIM" --database "$WORK/db.sqlite" >"$WORK/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$API/healthz" >/dev/null && break; sleep 0.1; done
for _ in 1 2 3; do curl -sf "http://127.0.0.1:$API/healthz" >/dev/null; done
kill -TERM "$SERVER"
wait "$SERVER"
SERVER=
grep -aq '^POST /v1/traces application/x-protobuf' "$WORK/received" || { echo "otel-check: no OTLP export received"; exit 1; }
grep -aq 'storekeeper' "$WORK/received" || { echo "otel-check: no service name in the export"; exit 1; }
grep -aq '/healthz' "$WORK/received" || { echo "otel-check: no HTTP span in the export"; exit 1; }
echo "otel-check: $(grep -ac '^POST /v1/traces' "$WORK/received") OTLP/HTTP exports received, with the HTTP spans of storekeeper"

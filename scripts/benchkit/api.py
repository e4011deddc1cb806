"""`scripts/bench --mode api`: the app's API (`badgepipe api`, release build) beside a running pipeline.

Figures, each with a baseline from the same run:
- change-to-stream latency: 1,000 streams open (one per user of the load) while the pipeline runs at a tenth of
  the rate it drained a backlog at (C/10, measured first in the same run); for every new notification a stream
  announced, the stream's arrival less the notification's `stored_at` (when its transaction stored it), p50 and
  p99; beside it, the same events' push latency (the sink's received_at less occurred_at);
- the API's CPU while it serves those streams, per event of the live run, also in broker-messages (the broker's
  own CPU per message from amqp-bench, as `--cpu` reports the pipeline): what the design costs in place of the
  workers publishing count changes (they publish nothing; the instance reads the counts of its streams' users
  every 250 ms);
- the instance's RSS with no stream, then with 10,000 idle streams open;
- `GET /v1/me/counts` requests/s and `GET /healthz` requests/s, by the same client against the same instance.
"""

import base64
import hashlib
import hmac
import json
import os
import resource
import selectors
import socket
import subprocess
import threading
import time
import urllib.request

from . import cpu, figures, runs
from .pipeline import free_port, stop
from .services import BenchError

SECRET = b"bench-secret-" + b"x" * 32
LIVE_STREAMS = 1_000
IDLE_STREAMS = 10_000


def token(user, lifetime=3600):
    """An HS256 JWT for `user`, as an app's backend signs one."""
    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).rstrip(b"=")
    now = int(time.time())
    signing_input = part({"alg": "HS256", "typ": "JWT"}) + b"." + part({"sub": user, "iat": now, "exp": now + lifetime})
    signature = base64.urlsafe_b64encode(hmac.new(SECRET, signing_input, hashlib.sha256).digest()).rstrip(b"=")
    return (signing_input + b"." + signature).decode()


class Streams:
    """Many SSE streams on non-blocking sockets, read by one thread: when each `notification` event arrived (by the
    notification's id) and how many `counts` events came."""

    def __init__(self, port):
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.arrivals = {}
        self.counts_events = 0
        self.opened = 0
        self.refused = 0
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def open(self, user):
        connection = socket.create_connection(("127.0.0.1", self.port))
        connection.sendall((f"GET /v1/me/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token(user)}"
                            "\r\nAccept: text/event-stream\r\n\r\n").encode())
        connection.setblocking(False)
        with self.lock:
            self.selector.register(connection, selectors.EVENT_READ, {"buffer": b"", "head": False})
            self.opened += 1

    def _read(self):
        while self.running:
            with self.lock:
                ready = self.selector.select(timeout=0.05) if self.selector.get_map() else []
            if not ready:
                time.sleep(0.01)
                continue
            now = time.time()
            for key, _ in ready:
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    with self.lock:
                        self.selector.unregister(key.fileobj)
                    continue
                state = key.data
                state["buffer"] += data
                if not state["head"]:
                    end = state["buffer"].find(b"\r\n\r\n")
                    if end < 0:
                        continue
                    if not state["buffer"].startswith(b"HTTP/1.1 200"):
                        self.refused += 1
                        with self.lock:
                            self.selector.unregister(key.fileobj)
                        key.fileobj.close()
                        continue
                    state["buffer"], state["head"] = state["buffer"][end + 4:], True
                # Chunked transfer: the chunk sizes are lines of hex digits; events end with a blank line.
                while True:
                    end = state["buffer"].find(b"\n\n")
                    if end < 0:
                        break
                    event, state["buffer"] = state["buffer"][:end], state["buffer"][end + 2:]
                    name, payload = None, None
                    for line in event.split(b"\n"):
                        if line.startswith(b"event: "):
                            name = line[7:].strip()
                        elif line.startswith(b"data: "):
                            payload = line[6:]
                    if name == b"counts":
                        self.counts_events += 1
                    elif name == b"notification" and payload:
                        try:
                            identifier = json.loads(payload.split(b"\r\n")[0])["id"]
                        except (ValueError, KeyError):
                            continue
                        self.arrivals.setdefault(identifier, now)

    def close(self):
        self.running = False
        self.thread.join(timeout=5)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def requests_per_second(port, path, authorization=None, seconds=8, threads=4):
    """Keep-alive GETs of `path` from `threads` client threads for `seconds`: requests/s answered 200 or 304."""
    import http.client
    done = [0] * threads
    deadline = time.monotonic() + seconds

    def client(index):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Authorization": f"Bearer {authorization}"} if authorization else {}
        while time.monotonic() < deadline:
            connection.request("GET", path, headers=headers)
            answer = connection.getresponse()
            answer.read()
            if answer.status in (200, 304):
                done[index] += 1
        connection.close()

    workers = [threading.Thread(target=client, args=(index,)) for index in range(threads)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(done) / (time.monotonic() - started)


def start_api(setup, port):
    secret = os.path.join(setup.work, "jwt-secret")
    with open(secret, "wb") as out:
        out.write(SECRET)
    log = open(os.path.join(setup.work, "api.log"), "w")
    env = dict(setup.env, BADGEPIPE_JWT_SECRET_FILE=secret, BADGEPIPE_API_MAX_STREAMS=str(IDLE_STREAMS + LIVE_STREAMS + 10),
               BADGEPIPE_API_MAX_STREAMS_PER_USER="1000")
    process = subprocess.Popen([setup.binary, "api", "--database-url", setup.database.url, "--port", str(port),
                                "--namespace", "badgepipe", "--log-level", "warning"], env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"badgepipe api did not become ready (log {log.name})")
            time.sleep(0.2)


def run(setup, options, broker_us_per_message=None):
    """The API run (see the module's description); the pipeline's drain and live runs are runs.backlog and
    runs.live."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    users, count = options.users, options.count
    setup.prepare_broker()
    setup.start_sink()
    print(f"== backlog drain: {count:,} events over {users:,} users, {options.workers} worker(s) "
          f"({options.database})", flush=True)
    capacity, _ = runs.backlog(setup, count, users, options.seed, options.workers)
    port = free_port()
    api = start_api(setup, port)
    try:
        idle_rss = rss_mib(api.pid)
        streams = Streams(port)
        for index in range(min(users, LIVE_STREAMS)):
            streams.open(f"load-u{index}")
        time.sleep(2)
        rate = capacity / 10
        live_count = int(rate * options.live_seconds)
        print(f"== live at C/10 = {rate:,.0f} events/s for {options.live_seconds} s with {streams.opened:,} streams "
              f"open (C = {capacity:,.0f} events/s, drained above)", flush=True)
        parts = lambda: setup.cpu_parts() + [("api", [api.pid])]  # noqa: E731
        with cpu.Sampler(parts) as sampler:
            started = time.monotonic()
            report = runs.live(setup, live_count, users, options.seed + 1, rate)
            ended = time.monotonic()
        time.sleep(2)
        seconds = figures.cpu_between(sampler.nearest(started)[1], sampler.nearest(ended)[1])
        stored = {}
        for key, value in setup.database.query(
                f"SELECT id, stored_at FROM {setup.database.table('notifications')} WHERE id LIKE 'load-%' "
                "AND stored_at IS NOT NULL"):
            stored[key] = int(value) / 1e6
        lags = sorted((arrival - stored[key]) * 1000 for key, arrival in streams.arrivals.items() if key in stored)
        streams.close()
        if lags:
            print(f"  change to stream (stream arrival - stored_at) over {len(lags):,} new notifications: p50 "
                  f"{figures.percentile(lags, 0.5):.0f} ms, p99 {figures.percentile(lags, 0.99):.0f} ms, max "
                  f"{lags[-1]:.0f} ms; {streams.counts_events:,} counts events", flush=True)
        else:
            print("  change to stream: no notification announced", flush=True)
        if report is not None and getattr(report, "p99", None) is not None:
            print(f"  (the same run's push latency p99, occurred_at to the sink: {report.p99:.0f} ms)", flush=True)
        api_us = seconds.get("api", 0) / max(live_count, 1) * 1e6
        line = f"  the API instance's CPU: {api_us:.0f} µs per event of the live run"
        if broker_us_per_message:
            line += f" = {api_us / broker_us_per_message:.2f} broker-messages"
        print(line + " (the workers publish nothing for it)", flush=True)

        print(f"== {IDLE_STREAMS:,} idle streams", flush=True)
        idle = Streams(port)
        for index in range(IDLE_STREAMS):
            idle.open(f"load-u{index % users}")
        time.sleep(5)
        print(f"  RSS: {idle_rss:.0f} MiB with no stream, {rss_mib(api.pid):.0f} MiB with "
              f"{idle.opened - idle.refused:,} open ({idle.refused:,} refused; goal <= 200 MiB)", flush=True)
        idle.close()
        time.sleep(2)

        print("== requests/s, one client (4 keep-alive connections), the same instance", flush=True)
        health = requests_per_second(port, "/healthz")
        counts = requests_per_second(port, "/v1/me/counts", authorization=token("load-u1"))
        print(f"  GET /healthz {health:,.0f}/s; GET /v1/me/counts {counts:,.0f}/s ({counts / health:.0%} of it)",
              flush=True)
    finally:
        stop(api)

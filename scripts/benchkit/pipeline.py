"""The sink and the workers as processes, and the sink's HTTP API."""

import json
import os
import resource
import socket
import subprocess
import time
import urllib.error
import urllib.request

from .services import ROOT, BenchError


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop(process, grace=10):
    """SIGTERM, up to `grace` seconds for a graceful exit, then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def peak_rss_mib(pid):
    """The kernel's high-water mark of a running process's resident memory (VmHWM), or None."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class Sink:
    """`badgepipe sink` on `port`; `program` replaces the binary at the head of its command line (a valgrind run)."""

    def __init__(self, binary, port, work, max_deliveries, program=None, start_timeout=10):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        try:
            get_json(self.base + "/stats", timeout=1)
            raise BenchError(f"something already listens on 127.0.0.1:{port} (set BADGEPIPE_BENCH_SINK_PORT)")
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        self.log = open(os.path.join(work, "sink.log"), "w")
        self.process = subprocess.Popen(
            [*(program or [binary]), "sink", "--port", str(port), "--log-level", "warning", "--max-deliveries",
             str(max_deliveries)], stdout=self.log, stderr=self.log)
        for _ in range(start_timeout * 10):
            try:
                self.stats()
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.1)
        raise BenchError(f"the sink did not start (log {self.log.name})")

    def stats(self):
        return get_json(self.base + "/stats", timeout=30)

    def deliveries(self):
        return get_json(self.base + "/deliveries", timeout=300)["deliveries"]

    def clear(self):
        request = urllib.request.Request(self.base + "/deliveries", method="DELETE")
        urllib.request.urlopen(request, timeout=30).read()

    def add_fault(self, fault):
        """Adds a fault (`POST /faults`, the sink's JSON fields)."""
        request = urllib.request.Request(self.base + "/faults", data=json.dumps(fault).encode(), method="POST",
                                         headers={"content-type": "application/json"})
        urllib.request.urlopen(request, timeout=30).read()


class Fleet:
    """`count` workers on one database, each with its own id and metrics port, logs in `work`."""

    def __init__(self, binary, env, database_url, sink_port, partitions, work, run_id):
        self.binary, self.env, self.database_url = binary, env, database_url
        self.sink_port, self.partitions, self.work, self.run_id = sink_port, partitions, work, run_id
        self.workers = []

    def start(self, name, metrics_port=None, program=None):
        """Starts a worker; `program` replaces the binary at the head of its command line (a valgrind run)."""
        env = dict(self.env, BADGEPIPE_WORKER_ID=f"bench-{self.run_id}-{name}")
        if metrics_port:
            env["BADGEPIPE_METRICS_PORT"] = str(metrics_port)
        log = open(os.path.join(self.work, f"{name}.log"), "w")
        process = subprocess.Popen(
            [*(program or [self.binary]), "worker", "--database-url", self.database_url,
             "--apns-url", f"http://127.0.0.1:{self.sink_port}", "--fcm-url", f"http://127.0.0.1:{self.sink_port}",
             "--namespace", "badgepipe", "--partitions", str(self.partitions), "--log-level", "info"],
            env=env, stdout=log, stderr=log)
        worker = Worker(name, process, log.name, metrics_port)
        self.workers.append(worker)
        return worker

    def await_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            while True:
                with open(worker.log) as log:
                    if "worker ready" in log.read():
                        break
                if worker.process.poll() is not None:
                    raise BenchError(f"worker {worker.name} exited (log {worker.log})")
                if time.monotonic() > deadline:
                    raise BenchError(f"no \"worker ready\" in {worker.log} after {timeout} s")
                time.sleep(0.1)

    def pids(self):
        return [worker.process.pid for worker in self.workers if worker.process.poll() is None]

    def check_alive(self):
        for worker in self.workers:
            if worker.process.poll() is not None:
                raise BenchError(f"worker {worker.name} exited (log {worker.log})")

    def stop(self):
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.terminate()
        for worker in self.workers:
            stop(worker.process)
        self.workers = []


class Worker:
    def __init__(self, name, process, log, metrics_port):
        self.name, self.process, self.log, self.metrics_port = name, process, log, metrics_port

    def metrics(self):
        """`/metrics` as {name{labels}: value}."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
        found = {}
        for line in text.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            name, value = line.rsplit(" ", 1)
            try:
                found[name] = float(value)
            except ValueError:
                pass
        return found


def publish(binary, env, arguments, log):
    """Runs `badgepipe publish ARGUMENTS`; returns (its summary line, its CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log, "a") as errors:
        result = subprocess.run([binary, "publish", *arguments], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=errors, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise BenchError(f"badgepipe publish failed (log {log})")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "", cpu

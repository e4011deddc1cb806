"""The broker, the database and the build, as the benchmark uses them."""

import os
import re
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# rabbitmqctl on the broker the run uses: the single node, or (`use_cluster`) the first cluster node that answers.
CTL = ["scripts/services", "ctl"]
CLUSTER = False


def use_cluster():
    """Runs on the three-node cluster of `scripts/services cluster up` instead of the single node."""
    global CTL, CLUSTER
    CTL = ["scripts/services", "cluster", "ctl", "any"]
    CLUSTER = True


class BenchError(Exception):
    """A run that cannot go on; its message is printed as the command's one line."""


def run(*args, env=None, capture=True, timeout=None):
    result = subprocess.run(args, cwd=ROOT, env=env, text=True, timeout=timeout,
                            stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout or "").strip().splitlines()[-5:] if capture else []
        raise BenchError(f"{' '.join(args[:3])} … failed ({result.returncode}): " + " | ".join(detail))
    return result.stdout if capture else ""


def services_env():
    """The environment with the local services' variables (`scripts/services env`); on the cluster, every client
    is given the three nodes."""
    env = dict(os.environ)
    lines = run("scripts/services", "env").splitlines()
    if CLUSTER:
        lines += run("scripts/services", "cluster", "env").splitlines()
    for line in lines:
        match = re.match(r"export (\w+)=(.*)", line)
        if match:
            env[match.group(1)] = match.group(2).strip('"')
    if CLUSTER:
        env["BADGEPIPE_AMQP_URL"] = env["BADGEPIPE_TEST_AMQP_URL"] = env["BADGEPIPE_TEST_CLUSTER_AMQP_URLS"]
    return env


def build(products, build_path, package_path):
    """Release builds of `products` (with the extra `swift build` arguments of BADGEPIPE_BENCH_BUILD_FLAGS, e.g.
    `-Xswiftc -g` for a build that valgrind can name functions in); returns the directory of the binaries."""
    prebuilt = os.environ.get("BADGEPIPE_BENCH_BINARIES")
    if prebuilt:
        # Binaries built before (copies kept aside: alternating runs of two commits without rebuilding either).
        missing = [product for product in products if not os.path.exists(os.path.join(prebuilt, product))]
        if missing:
            raise BenchError(f"BADGEPIPE_BENCH_BINARIES={prebuilt} has no {', '.join(missing)}")
        print(f"bench: the binaries in {prebuilt} (BADGEPIPE_BENCH_BINARIES), not built", flush=True)
        return prebuilt
    flags = os.environ.get("BADGEPIPE_BENCH_BUILD_FLAGS", "").split()
    for product in products:
        print(f"bench: swift build -c release --product {product} (scratch path {build_path})", flush=True)
        result = subprocess.run(
            ["swift", "build", "-c", "release", *flags, "--package-path", package_path, "--scratch-path", build_path,
             "--product", product], cwd=ROOT, capture_output=True, text=True)
        if result.returncode != 0:
            errors = [line for line in result.stdout.splitlines() if "error:" in line][:20]
            raise BenchError("the build failed:\n" + "\n".join(errors or result.stdout.splitlines()[-20:]))
    return run("swift", "build", "-c", "release", *flags, "--package-path", package_path, "--scratch-path",
               build_path, "--show-bin-path").strip()


def newest_wal():
    """The newest write-ahead log file of the local broker's quorum queues (scripts/services), or None. RabbitMQ 3.10
    rolls it over after every 512 MiB written (about every 650,000 events here), and every partition queue then
    stalls for seconds: a run that saw a new file says so beside its latency."""
    base = os.path.join(os.environ.get("BADGEPIPE_SERVICES_DIR", os.path.join(ROOT, ".services")), "rabbitmq", "mnesia")
    found = []
    for directory, _, files in os.walk(base):
        if "quorum" in directory.split(os.sep):
            found.extend(os.path.join(directory, name) for name in files if name.endswith(".wal"))
    return max(found) if found else None


def partition_queues(partitions):
    return [f"badgepipe.events.{n}" for n in range(partitions)]


def queue_counts():
    """{queue: (messages, consumers)} from rabbitmqctl (exact, unlike the management API's samples)."""
    out = run(*CTL, "list_queues", "name", "messages", "consumers", "--quiet",
              "--no-table-headers", timeout=60)
    counts = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
            counts[fields[0]] = (int(fields[1]), int(fields[2]))
    return counts


def purge(queues):
    for queue in queues:
        subprocess.run([*CTL, "purge_queue", queue], cwd=ROOT, capture_output=True)


class Database:
    """The run's database: a fresh PostgreSQL schema (dropped at the end unless kept) or a fresh SQLite file."""

    def __init__(self, kind, postgres_url, work, run_id):
        self.kind = kind
        self.postgres_url = postgres_url
        if kind == "postgres":
            self.schema = f"bench_{run_id}"
            # Plain TCP: the figures measure the pipeline, not the encryption.
            self.url = f"{postgres_url}?schema={self.schema}&sslmode=disable"
            self.path = None
        else:
            self.schema = None
            self.path = os.path.join(work, "badgepipe.sqlite")
            self.url = f"sqlite:{self.path}"

    def table(self, name):
        return f"{self.schema}.{name}" if self.schema else name

    def query(self, sql):
        """Rows of `sql` (tab-separated text on PostgreSQL, tuples on SQLite) as lists of strings."""
        if self.kind == "postgres":
            out = run("psql", self.postgres_url, "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c",
                      sql, timeout=120)
            return [line.split("\t") for line in out.splitlines() if line]
        connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        try:
            return [[str(value) for value in row] for row in connection.execute(sql)]
        finally:
            connection.close()

    def scalar(self, sql):
        try:
            rows = self.query(sql)
        except (BenchError, sqlite3.Error):
            return None
        return rows[0][0] if rows and rows[0] else None

    def execute_script(self, sql):
        if self.kind == "postgres":
            subprocess.run(["psql", self.postgres_url, "-X", "-q", "-v", "ON_ERROR_STOP=1"], input=sql, text=True,
                           check=True, capture_output=True)
        else:
            connection = sqlite3.connect(self.path, timeout=30)
            with connection:
                connection.executescript(sql)
            connection.close()

    def drop(self, keep):
        if self.kind != "postgres":
            return
        if keep:
            print(f"bench: kept PostgreSQL schema {self.schema}")
            return
        subprocess.run(["psql", self.postgres_url, "-X", "-q", "-c", f"DROP SCHEMA IF EXISTS {self.schema} CASCADE"],
                       capture_output=True)


def warn(message):
    print(message, file=sys.stderr, flush=True)

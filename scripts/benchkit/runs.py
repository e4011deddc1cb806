"""The benchmark's runs: a backlog drain, live publishing, the broker alone, one user's million follows, the sender."""

import os
import re
import resource
import subprocess
import tempfile
import time
import urllib.parse

from . import cpu, figures, instructions
from .pipeline import Fleet, Sink, free_port, get_json, peak_rss_mib, publish, stop
from . import services
from .services import ROOT, BenchError, partition_queues, purge, queue_counts, run


class Setup:
    """What every run against the broker shares: binaries, environment, database, sink, logs."""

    def __init__(self, options, binaries, env, database, work, run_id):
        self.options, self.env, self.database, self.work, self.run_id = options, env, database, work, run_id
        self.binary = os.path.join(binaries, "badgepipe")
        self.amqp_bench = os.path.join(binaries, "amqp-bench")
        self.sink = None
        self.fleet = None
        self.migrated = False  # see migrate()

    def prepare_broker(self):
        run(self.binary, "setup", "--partitions", str(self.options.partitions), env=self.env)
        queues = set(partition_queues(self.options.partitions))
        # The broker drops a closed connection's consumers a moment after it closes.
        for _ in range(15):
            busy = [name for name, (_, consumers) in queue_counts().items() if name in queues and consumers > 0]
            if not busy:
                break
            time.sleep(1)
        else:
            raise BenchError(f"other consumers are attached to {' '.join(sorted(busy))} (a running worker?)")
        purge(sorted(queues))

    def start_sink(self, max_deliveries=None, program=None):
        port = int(os.environ.get("BADGEPIPE_BENCH_SINK_PORT", "18787"))
        self.sink = Sink(self.binary, port, self.work, max_deliveries or 1_000_000, program=program,
                         start_timeout=120 if program else 10)

    def start_fleet(self, workers, program=None):
        self.fleet = Fleet(self.binary, self.env, self.database.url, self.sink.port, self.options.partitions,
                           self.work, self.run_id)
        for index in range(workers):
            self.fleet.start(f"w{index + 1}", metrics_port=free_port(), program=program)
        return self.fleet

    def publish_load(self, count, users, seed, log_name, *more):
        """`badgepipe publish` of the load (`more`: further arguments, e.g. a rate); returns (its summary line, its
        CPU seconds)."""
        return publish(self.binary, self.env, ["--count", str(count), "--users", str(users), "--seed", str(seed),
                                               *more], os.path.join(self.work, log_name))

    def cpu_parts(self):
        """The parts whose CPU a run reports, by pid or process name."""
        fleet_pids = self.fleet.pids() if self.fleet else []
        return [("workers", fleet_pids), ("postgres", "postgres"), ("rabbitmq", "beam.smp"),
                ("sink", [self.sink.process.pid] if self.sink else [])]

    def stop(self):
        if self.fleet:
            self.fleet.stop()
        if self.sink:
            stop(self.sink.process)

    def outbox_count(self):
        value = self.database.scalar(f"SELECT count(*) FROM {self.database.table('outbox')}")
        return int(value) if value is not None else None

    def queued(self):
        names = set(partition_queues(self.options.partitions))
        try:
            return sum(messages for name, (messages, _) in queue_counts().items() if name in names)
        except BenchError:
            return None

    def wait_drained(self, poll=0.5, patience=10):
        """Until the sink is quiet: `received` unchanged for 3 s with the partition queues and the outbox empty; or
        unchanged for `patience` s (some pushes received); or no push at all for 120 s. Asks the sink every `poll`
        s."""
        last, changed, started = -1, time.monotonic(), time.monotonic()
        while True:
            received = self.sink.stats()["received"]
            now = time.monotonic()
            if received != last:
                last, changed = received, now
            quiet = now - changed
            if self.fleet:
                self.fleet.check_alive()
            if quiet >= 3 and received > 0:
                if self.queued() == 0 and self.outbox_count() == 0:
                    return
                if quiet >= patience:
                    print(f"  note: the sink was quiet for {quiet:.0f} s with work left: stopped waiting")
                    return
            if received == 0 and now - started >= max(120, patience):
                print(f"  note: no push at all in {max(120, patience)} s: stopped waiting")
                return
            time.sleep(poll)

    def migrate(self):
        """Creates the run's schema with a worker of its own, stopped once ready, so that no measured run counts
        the schema's creation (tables, indexes, the migration lock): a deployment's drain starts on a schema it has.
        The worker's leases are then set free and its fleet row removed, so the measured fleet starts as a new
        deployment's would."""
        if self.migrated:
            return
        fleet = Fleet(self.binary, self.env, self.database.url, self.sink.port, self.options.partitions, self.work,
                      self.run_id)
        fleet.start("migrate")
        fleet.await_ready()
        fleet.stop()
        if self.database.kind == "postgres":
            self.database.execute_script(f"""
SET search_path TO {self.database.schema};
UPDATE partition_leases SET owner = NULL, expires_at = 0;
DELETE FROM fleet_workers;
""")
        self.migrated = True

    def prestore(self, count, users):
        """`count` read and seen notifications over the load's users, so that tables and indexes are large while
        every user's counters stay consistent (zero)."""
        print(f"bench: migrating the schema, then storing {count:,} read notifications", flush=True)
        self.migrate()
        started = time.monotonic()
        if self.database.kind == "postgres":
            schema = self.database.schema
            self.database.execute_script(f"""
SET search_path TO {schema};
INSERT INTO users (user_id) SELECT 'load-u' || u FROM generate_series(0, {users} - 1) AS u
    ON CONFLICT (user_id) DO NOTHING;
INSERT INTO notifications (user_id, id, occurred_at, read, seen)
    SELECT 'load-u' || (n % {users}), 'pre-' || n,
           (extract(epoch FROM now()) * 1000000)::bigint - 86400000000 - ({count} - n) * 1000, true, true
    FROM generate_series(1, {count}) AS n;
INSERT INTO processed_events (event_id) SELECT 'pre-' || n FROM generate_series(1, {count}) AS n;
VACUUM ANALYZE users, notifications, processed_events;
""")
        else:
            base = int(time.time() * 1_000_000) - 86_400_000_000 - count * 1000
            rows = "\n".join(
                f"INSERT INTO notifications (user_id, id, occurred_at, read, seen) VALUES "
                f"('load-u{n % users}', 'pre-{n}', {base + n * 1000}, 1, 1);"
                f"INSERT INTO processed_events (event_id) VALUES ('pre-{n}');" for n in range(1, count + 1))
            user_rows = "\n".join(f"INSERT OR IGNORE INTO users (user_id) VALUES ('load-u{u}');" for u in range(users))
            self.database.execute_script("BEGIN;\n" + user_rows + "\n" + rows + "\nCOMMIT;")
        print(f"  stored in {time.monotonic() - started:.1f} s", flush=True)


class CpuReport:
    """CPU seconds per part over a run of `events`, and the per-event figures against the broker's."""

    def __init__(self, seconds, events, label):
        self.seconds, self.events, self.label = seconds, events, label
        self.busy = None  # a live run's share of the machine's cores while publishing
        self.p99 = None  # a live run's p99 latency in ms, when it measured alerts

    def per_event(self, part):
        return figures.CpuShare(part, self.seconds.get(part, 0.0)).per_event_us(self.events)

    def print(self, broker_us=None, extra=None):
        parts = ["workers", "postgres", "rabbitmq", "sink"] + list(extra or {})
        seconds = dict(self.seconds, **(extra or {}))
        line = ", ".join(f"{part} {seconds.get(part, 0.0) / self.events * 1e6:.0f}" for part in parts)
        machine = self.per_event("machine")
        print(f"  CPU per {self.label} (µs): machine {machine:.0f} = {line}, other "
              f"{max(0.0, machine - sum(self.per_event(p) for p in ['workers', 'postgres', 'rabbitmq', 'sink'])):.0f}")
        if broker_us:
            print(f"  machine CPU per event / broker-only CPU per message: {machine:.0f} / {broker_us:.0f} µs = "
                  f"{figures.broker_messages_per_event(machine, broker_us):.2f} broker-messages")


def backlog(setup, count, users, seed, workers):
    """Publishes `count` events while no worker runs, then times the workers' drain from their start to the last push
    the sink received, on a schema created before (see Setup.migrate). Returns (events/s, CpuReport over the
    drain)."""
    setup.migrate()
    summary, publisher_cpu = setup.publish_load(count, users, seed, "publish.log")
    print(f"  {summary} (publisher CPU {publisher_cpu / count * 1e6:.0f} µs per event)", flush=True)
    with cpu.Sampler(setup.cpu_parts) as sampler:
        start_wall, start = time.time(), time.monotonic()
        setup.start_fleet(workers)
        setup.wait_drained()
        deliveries = setup.sink.deliveries()
        if not deliveries:
            raise BenchError("no push reached the sink")
        last_ms = max(figures.millis(d["received_at"]) for d in deliveries)
    last = start + (last_ms / 1000.0 - start_wall)
    elapsed = last - start
    by_status = setup.sink.stats().get("by_status", {})
    print(f"  {count:,} events, {len(deliveries):,} pushes (by status {by_status}) in {elapsed:.2f} s from the "
          f"workers' start to the last push: {count / elapsed:,.0f} events/s, {len(deliveries) / elapsed:,.0f} "
          f"pushes/s", flush=True)
    seconds = figures.cpu_between(sampler.nearest(start)[1], sampler.nearest(last)[1])
    report = CpuReport(seconds, count, "event")
    report.publisher_us = publisher_cpu / count * 1e6
    report.pushes = len(deliveries)
    return count / elapsed, report


def live(setup, count, users, seed, rate):
    """Publishes `count` events at `rate` events/s to running workers; prints the latency of every accepted alert
    (the sink's received_at less the event's occurred_at); returns the run's CpuReport (the publisher included)."""
    setup.sink.clear()
    stages = {"event to commit": "badgepipe_event_lag_seconds", "commit to accepted": "badgepipe_push_latency_seconds"}
    stages_before = worker_histograms(setup.fleet, stages.values())
    with cpu.Sampler(setup.cpu_parts) as sampler:
        started = time.monotonic()
        summary, publisher_cpu = setup.publish_load(count, users, seed, "publish-live.log", "--rate", f"{rate:.0f}")
        ended = time.monotonic()
        print(f"  {summary} ({ended - started:.0f} s)", flush=True)
        setup.wait_drained()
    first, last = sampler.nearest(started), sampler.nearest(ended)
    seconds = figures.cpu_between(first[1], last[1])
    report = CpuReport(dict(seconds, publisher=publisher_cpu), count, "event while publishing")
    report.print(extra={"publisher": publisher_cpu})
    report.busy = figures.utilisation(seconds["machine"], last[0] - first[0])
    print(f"  machine busy while publishing: {report.busy:.0%} of {os.cpu_count()} cores", flush=True)
    stages_after = worker_histograms(setup.fleet, stages.values())
    described = []
    for label, name in stages.items():
        delta = figures.bucket_delta(stages_before[name], stages_after[name])
        if delta and delta[-1][1] > 0:
            within = next((count for bound, count in delta if bound >= 0.05), 0) / delta[-1][1]
            described.append(f"{label} p50 <= {figures.bucket_quantile(delta, 0.5) * 1000:.0f} ms, p99 <= "
                             f"{figures.bucket_quantile(delta, 0.99) * 1000:.0f} ms, {within:.1%} within 50 ms")
    if described:
        print("  the workers' histograms (bucket bounds): " + "; ".join(described), flush=True)
    deliveries = setup.sink.deliveries()
    occurred = {}
    notifications, messages = setup.database.table("notifications"), setup.database.table("messages")
    for key, value in setup.database.query(
            f"SELECT id, occurred_at FROM {notifications} WHERE id LIKE 'load-%' "
            f"UNION ALL SELECT event_id, occurred_at FROM {messages}"):
        occurred[key] = int(value)
    latencies, unknown = figures.latencies(deliveries, occurred)
    if not latencies:
        print("  latency: no accepted alert to measure")
        return report
    p50, p99 = figures.percentile(latencies, 0.5), figures.percentile(latencies, 0.99)
    report.p99 = p99
    print(f"  latency (sink received_at - occurred_at) over {len(latencies):,} accepted alerts: p50 {p50:.0f} ms, "
          f"p99 {p99:.0f} ms, max {latencies[-1]:.0f} ms" + (f" ({unknown} without a stored event)" if unknown else ""),
          flush=True)
    series = os.environ.get("BADGEPIPE_BENCH_SERIES")
    if series:
        with open(series, "w") as out:
            out.writelines(f"{value:.1f}\n" for value in latencies)
    return report


# Roughly the machine's load at which the live runs keep p99 near 50 ms (ten runs at C/10: 62-78 % busy, p99 28-99
# ms, eight of them within 57 ms; at C/5: 84-93 %, p99 60-96 ms; docs/performance.md, *Latency at C/2*): the
# reference for the live event's budget.
LATENCY_BUSY = 0.70


def publishing_alone(setup, count, users, seed, rate, live_report=None, drain_report=None):
    """The live run's publishing without the pipeline: `badgepipe publish` of `count` events at `rate` events/s into
    the partition queues of a scratch namespace that nothing consumes (declared for the run, deleted after it).
    Prints its CPU per event (the machine, RabbitMQ, the publisher) and how busy the machine was; with the live run's
    `live_report`, what the pipeline itself spent an event there (the machine less RabbitMQ and the publisher), and
    how busy that alone keeps the machine's cores at `rate` (as if publishing ran elsewhere); with the drain's
    `drain_report`, how busy the machine would be at `rate` if a live event cost the pipeline what a drained one does
    (the drain's machine CPU less RabbitMQ's), and what a live event may cost the pipeline for the machine to stay
    `LATENCY_BUSY` busy."""
    namespace = f"bench-alone-{setup.run_id}"
    env = dict(setup.env, BADGEPIPE_NAMESPACE=namespace)
    run(setup.binary, "setup", "--partitions", str(setup.options.partitions), env=env)
    try:
        with cpu.Sampler(lambda: [("rabbitmq", "beam.smp")]) as sampler:
            started = time.monotonic()
            summary, publisher_cpu = publish(
                setup.binary, env, ["--count", str(count), "--users", str(users), "--seed", str(seed), "--rate",
                                    f"{rate:.0f}"], os.path.join(setup.work, "publish-alone.log"))
            ended = time.monotonic()
        print(f"  {summary} ({ended - started:.0f} s)", flush=True)
        first, last = sampler.nearest(started), sampler.nearest(ended)
        seconds = figures.cpu_between(first[1], last[1])
        alone = CpuReport(dict(seconds, publisher=publisher_cpu), count, "event")
        machine, rabbitmq, publisher = (alone.per_event(part) for part in ("machine", "rabbitmq", "publisher"))
        busy = figures.utilisation(seconds["machine"], last[0] - first[0])
        cores = os.cpu_count()
        print(f"  CPU per event (µs): machine {machine:.0f} = rabbitmq {rabbitmq:.0f}, publisher {publisher:.0f}, "
              f"other {figures.less_publishing(machine, rabbitmq, publisher):.0f}; the machine {busy:.0%} busy of "
              f"{cores} cores", flush=True)
        if live_report is not None:
            pipeline = figures.less_publishing(*(live_report.per_event(part)
                                                 for part in ("machine", "rabbitmq", "publisher")))
            on_its_own = figures.busy_at(rate, pipeline, cores)
            print(f"  the live run's pipeline (its machine CPU less RabbitMQ's and the publisher's): {pipeline:.0f} µs "
                  f"an event, which alone keeps the {cores} cores {on_its_own:.0%} busy at this rate (as if "
                  f"publishing ran elsewhere)", flush=True)
        if drain_report is not None:
            drained = figures.less_publishing(drain_report.per_event("machine"), drain_report.per_event("rabbitmq"), 0)
            floor = figures.busy_at(rate, machine + drained, cores)
            budget = figures.live_budget_us(rate, LATENCY_BUSY, machine, cores)
            print(f"  with a live event as cheap as a drained one ({drained:.0f} µs: the drain's machine CPU less "
                  f"RabbitMQ's) and this publishing, the machine would be {floor:.0%} busy; {LATENCY_BUSY:.0%} busy "
                  f"leaves the pipeline {budget:.0f} µs a live event", flush=True)
        if drain_report is not None and live_report is not None:
            drained_machine = drain_report.per_event("machine")
            live_machine = live_report.per_event("machine")
            print(f"  a live event against a drained one: machine {live_machine:.0f} µs = "
                  f"{live_machine / drained_machine:.1f}x the drain's {drained_machine:.0f} µs; with its pipeline at "
                  f"a drained event's cost and this publishing ({machine:.0f} µs), it would still be "
                  f"{figures.live_ratio_floor(drained_machine, machine):.1f}x", flush=True)
    finally:
        for queue in figures.namespace_queues(queue_counts(), namespace):
            subprocess.run([*services.CTL, "delete_queue", queue], cwd=ROOT, capture_output=True)


def callgrind(setup, valgrind, count, users, seed, top=15, idle_seconds=10):
    """One worker and the sink under callgrind (see instructions.py). Once both are ready, their counts are taken
    for `idle_seconds` of idling, then while `count` events are published and drained: prints the worker's
    instructions per event and the sink's per push, with the functions that executed the most instructions
    themselves. The publisher runs natively and is far faster than the worker under valgrind, so the worker drains
    a backlog. What a part does on timers (polls, lease renewals, gauges) runs by the clock, and valgrind makes the
    drain tens of times longer than it is natively: the idle rate is printed beside, with the figure that takes it
    out over the whole drain (a lower bound, since a busy partition does not poll). A dump zeroes the counts."""
    worker = setup.fleet.workers[0]
    time.sleep(5)  # leases taken, first polls done: what follows is the steady state
    processes = {"worker": worker.process, "sink": setup.sink.process}
    for process in processes.values():
        valgrind.zero(process)
    idle_started = time.monotonic()
    time.sleep(idle_seconds)
    idle = {part: valgrind.dump(process, part) for part, process in processes.items()}
    drain_started = time.monotonic()
    idle_rate = {part: profile.total / (drain_started - idle_started) for part, profile in idle.items()}
    summary, _ = setup.publish_load(count, users, seed, "publish.log")
    print(f"  {summary}; draining under callgrind", flush=True)
    setup.wait_drained(poll=2, patience=60)
    profiles = {part: valgrind.dump(process, part) for part, process in processes.items()}
    elapsed = time.monotonic() - drain_started
    pushes = setup.sink.stats()["received"]
    print(f"  drained in {elapsed:.0f} s: {pushes:,} pushes", flush=True)
    units = {"worker": (count, "an event"), "sink": (pushes, "a push")}
    for part, profile in profiles.items():
        number, unit = units[part]
        if not number:
            continue
        idling = idle_rate[part] * elapsed
        print(f"  {part}: {profile.total / number:,.0f} instructions {unit} ({profile.total / 1e9:.2f} G over the "
              f"drain); idle, {idle_rate[part] / 1e6:.1f} M a second, at most {idling / number:,.0f} {unit} of "
              f"them (all of the drain's {elapsed:.0f} s at the idle rate: {max(0, profile.total - idling) / number:,.0f} "
              f"{unit} without)")
        print(f"    the functions with the most instructions of their own, {unit}:")
        entries = profile.top(top)
        for name, (symbol, cost) in zip(instructions.demangle([symbol for symbol, _ in entries]), entries):
            print(f"    {cost / number:>9,.0f} {cost / profile.total:6.1%}  {name[:150]}")


def worker_histograms(fleet, names):
    """{name: cumulative buckets summed over the fleet's workers} of the workers' `/metrics` histograms `names`
    (empty buckets for a worker without metrics)."""
    totals = {name: {} for name in names}
    for worker in fleet.workers if fleet else []:
        if not worker.metrics_port:
            continue
        try:
            metrics = worker.metrics()
        except OSError:
            continue
        for name in totals:
            for bound, count in figures.histogram_buckets(metrics, name):
                totals[name][bound] = totals[name].get(bound, 0.0) + count
    return {name: sorted(buckets.items()) for name, buckets in totals.items()}


def idle(setup, seconds):
    """The fleet at rest after the live runs: each worker's CPU, PostgreSQL's and the machine's over `seconds` with
    nothing published (what timers cost whatever the load), after a few seconds for the last records."""
    time.sleep(3)
    workers = setup.fleet.workers
    parts = [(worker.name, [worker.process.pid]) for worker in workers] + [("postgres", "postgres")]
    first = cpu.snapshot(parts)
    time.sleep(seconds)
    last = cpu.snapshot(parts)
    spent = figures.cpu_between(first, last)
    each = ", ".join(f"{worker.name} {spent[worker.name] / seconds * 1e3:.2f}" for worker in workers)
    print(f"bench: idle for {seconds} s after the live runs, CPU ms a second: {each}; postgres "
          f"{spent['postgres'] / seconds * 1e3:.2f}; the machine {spent['machine'] / seconds * 1e3:.1f}", flush=True)


def broker_only(setup, count):
    """amqp-bench: `count` persistent 512-byte messages published with confirms to a quorum queue, then consumed and
    acked, no work. Returns (confirmed publishes/s, consumed + acked/s, machine CPU µs per message)."""
    print(f"bench: the broker alone: amqp-bench --count {count} --body-size 512 (quorum queue, persistent, confirms)",
          flush=True)
    parts = [("rabbitmq", "beam.smp")]
    first = cpu.snapshot(parts)
    process = subprocess.run([setup.amqp_bench, "--count", str(count), "--body-size", "512"], cwd=ROOT,
                             env=setup.env, capture_output=True, text=True)
    last = cpu.snapshot(parts)
    if process.returncode != 0:
        raise BenchError("amqp-bench failed: " + process.stderr.strip()[-300:])
    seconds = figures.cpu_between(first, last)
    publish_rate = consume_rate = float("nan")
    for line in process.stdout.splitlines():
        print("  " + line)
        if line.startswith("confirmed publishes:"):
            publish_rate = float(line.split(":")[1].split()[0])
        if line.startswith("consumed + acked:"):
            consume_rate = float(line.split(":")[1].split()[0])
    machine_us = seconds["machine"] / count * 1e6
    print(f"  CPU per message (µs): machine {machine_us:.0f}, rabbitmq {seconds['rabbitmq'] / count * 1e6:.0f}")
    return publish_rate, consume_rate, machine_us


CEILING_SOURCE = os.environ.get("BADGEPIPE_BENCH_CEILING_SOURCE",
                                os.path.join(ROOT, "..", "shared", "bench", "ceiling.c"))


def ceiling_only(setup, count):
    """The reference ceiling (`ceiling.c`, a C client over rabbitmq-c): `count` persistent 512-byte messages through a
    quorum queue from a confirming publisher to an acking consumer, 256 in flight, both at once, no work. Returns
    (messages/s, messages/s, machine CPU µs per message), the machine's CPU read from /proc/stat around the run."""
    binary = os.path.join(setup.work, "ceiling")
    if not os.path.exists(binary):
        if not os.path.exists(CEILING_SOURCE):
            raise BenchError(f"no {CEILING_SOURCE} (BADGEPIPE_BENCH_CEILING_SOURCE names it); --baseline amqp-bench "
                             "uses the Swift client instead")
        built = subprocess.run(["gcc", "-O2", "-o", binary, CEILING_SOURCE, "-lrabbitmq", "-lpthread"],
                               capture_output=True, text=True)
        if built.returncode != 0:
            raise BenchError("building ceiling.c failed: " + built.stderr.strip()[-300:])
    url = urllib.parse.urlsplit(setup.env["BADGEPIPE_AMQP_URL"].split(",amqp")[0])
    host, port = url.hostname or "127.0.0.1", str(url.port or 5672)
    print(f"bench: the broker alone: ceiling {host} {port} {count} 512 256 quorum", flush=True)
    parts = [("rabbitmq", "beam.smp")]
    first = cpu.snapshot(parts)
    process = subprocess.run([binary, host, port, str(count), "512", "256", "quorum"], capture_output=True, text=True)
    last = cpu.snapshot(parts)
    if process.returncode != 0:
        raise BenchError("ceiling failed: " + process.stderr.strip()[-300:])
    seconds = figures.cpu_between(first, last)
    rate = float("nan")
    for line in process.stdout.splitlines():
        print("  " + line)
        match = re.search(r"msgs_per_s=([0-9.]+)", line)
        if match:
            rate = float(match.group(1))
    machine_us = seconds["machine"] / count * 1e6
    print(f"  CPU per message (µs): machine {machine_us:.0f}, rabbitmq {seconds['rabbitmq'] / count * 1e6:.0f}")
    return rate, rate, machine_us


def celebrity(setup, count, window):
    """One user receives `count` follows (backlog style, one worker), then reads them all: the time per batch over
    the first and the last windows of `window` events, and the read-all's time and transactions."""
    log = os.path.join(setup.work, "publish.log")
    print(f"bench: publishing {count:,} follows of load-u0 (after its device's registration)", flush=True)
    summary, _ = publish(setup.binary, setup.env, ["--count", str(count + 1), "--users", "1", "--celebrity"], log)
    print(f"  {summary}", flush=True)
    fleet = setup.start_fleet(1)
    worker = fleet.workers[0]

    def sample():
        while True:
            fleet.check_alive()
            try:
                metrics = worker.metrics()
            except OSError:
                time.sleep(0.2)
                continue
            parts = cpu.snapshot([("worker", [worker.process.pid]), ("postgres", "postgres")])
            return (time.monotonic(), metrics.get("badgepipe_events_applied_total", 0.0),
                    metrics.get("badgepipe_batch_transaction_seconds_count", 0.0),
                    metrics.get("badgepipe_batch_transaction_seconds_sum", 0.0), parts)

    series = [sample()]
    while series[-1][1] < count + 1:
        time.sleep(1)
        series.append(sample())
    applying = [entry for entry in series if entry[1] > 0] or series
    first, last = applying[0], series[-1]
    print(f"  {count + 1:,} events applied in {last[0] - first[0]:.1f} s "
          f"({figures.rate(last[1] - first[1], last[0] - first[0]):,.0f} events/s)")
    described = []
    for a, b in figures.windows(applying, window):
        events, batches = b[1] - a[1], max(1.0, b[2] - a[2])
        cpu_seconds = figures.cpu_between(a[4], b[4])
        entry = {"events": events, "per_batch_ms": (b[3] - a[3]) / batches * 1000, "per_batch": events / batches,
                 "rate": figures.rate(events, b[0] - a[0])}
        described.append(entry)
        print(f"  events {a[1]:>9,.0f} to {b[1]:>9,.0f}: {entry['rate']:>7,.0f} events/s, {batches:>5,.0f} batches "
              f"of {entry['per_batch']:>4.0f}, {entry['per_batch_ms']:>6.1f} ms a batch; CPU per event: worker "
              f"{cpu_seconds['worker'] / events * 1e6:.0f} µs, PostgreSQL {cpu_seconds['postgres'] / events * 1e6:.0f} "
              f"µs")
    if len(described) >= 2:
        head, tail = described[0], described[-1]
        print(f"  time per batch, last window / first: {tail['per_batch_ms'] / head['per_batch_ms']:.2f} "
              f"({head['per_batch_ms']:.1f} -> {tail['per_batch_ms']:.1f} ms; events per batch "
              f"{head['per_batch']:.0f} -> {tail['per_batch']:.0f})")
    users = setup.database.table("users")
    unread = setup.database.scalar(f"SELECT unread_notifications FROM {users} WHERE user_id = 'load-u0'")
    print(f"  load-u0: {unread} unread; {setup.outbox_count()} pushes waiting in the outbox", flush=True)
    before = sample()
    started = time.monotonic()
    publish(setup.binary, setup.env, ["--type", "notifications_read_all", "--recipient", "load-u0"], log)
    while setup.database.scalar(f"SELECT unread_notifications FROM {users} WHERE user_id = 'load-u0'") != "0":
        fleet.check_alive()
        time.sleep(0.2)
    after = sample()
    transactions = after[2] - before[2]
    print(f"  read-all: unread 0 after {time.monotonic() - started:.1f} s, {transactions:.0f} transactions "
          f"({(after[3] - before[3]) / max(1.0, transactions) * 1000:.0f} ms each on average); worker peak RSS "
          f"{peak_rss_mib(worker.process.pid) or 0:.0f} MiB", flush=True)


def push(binaries, count, port):
    """The worker's sender alone (push-bench) against the sink: over TLS, HTTP/2 on one and four connections and
    HTTP/1.1 (async-http-client); then plain HTTP/1.1 (the worker's own HTTP/1.1 client) at 8 and 100 in flight.
    Each run prints the sender's and the sink's CPU a push beside push-bench's own line."""
    binary = os.path.join(binaries, "badgepipe")

    def measured(sink, scheme, arguments):
        subprocess.run(["curl", "-skf", "-X", "DELETE", f"{scheme}://127.0.0.1:{port}/deliveries"],
                       capture_output=True)
        sink_before = cpu.process_seconds(open(f"/proc/{sink.pid}/stat").read())
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([os.path.join(binaries, "push-bench"), "--url", f"{scheme}://127.0.0.1:{port}", "--count",
                        str(count), *arguments], check=True)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        sink_seconds = cpu.process_seconds(open(f"/proc/{sink.pid}/stat").read()) - sink_before
        sender_seconds = (children_after.ru_utime + children_after.ru_stime
                          - children_before.ru_utime - children_before.ru_stime)
        print(f"  CPU a push: sender {sender_seconds / count * 1e6:.1f} µs, sink {sink_seconds / count * 1e6:.1f} µs",
              flush=True)

    def started(arguments, scheme):
        sink = subprocess.Popen([binary, "sink", "--port", str(port), "--max-deliveries", "100000", "--log-level",
                                 "warning", *arguments])
        for _ in range(50):
            if subprocess.run(["curl", "-skf", f"{scheme}://127.0.0.1:{port}/stats"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        return sink

    with tempfile.TemporaryDirectory() as tls:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days",
             "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout",
             f"{tls}/sink.key", "-out", f"{tls}/sink.crt"], check=True, capture_output=True)
        sink = started(["--tls-cert", f"{tls}/sink.crt", "--tls-key", f"{tls}/sink.key"], "https")
        try:
            for variant in (["--connections", "1"], ["--connections", "4"], ["--http1"]):
                measured(sink, "https", ["--ca-file", f"{tls}/sink.crt", "--concurrency", "100", *variant])
        finally:
            stop(sink)
    sink = started([], "http")
    try:
        for concurrency in ("8", "100"):
            measured(sink, "http", ["--http1", "--concurrency", concurrency])
    finally:
        stop(sink)


__all__ = [
    "Setup", "CpuReport", "backlog", "live", "publishing_alone", "idle", "broker_only", "ceiling_only", "celebrity", "push", "get_json",
]

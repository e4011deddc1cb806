"""scripts/bench: whole-pipeline benchmark, release builds: RabbitMQ -> `badgepipe worker` (1..N) -> `badgepipe sink`.

Figures are printed, never asserted. Every figure comes with a baseline from the same run, since machines of one
kind differ by 2x in speed and drift by the hour:

  scripts/bench --cpu [--workers 3 --database postgres]
      The efficiency figures: a backlog drain (50,000 events over 5,000 users published while no worker runs, on a
      schema a worker of its own created before, then timed from the fleet's start to the last push) with the CPU
      each part spent per event (workers, PostgreSQL, RabbitMQ, the sink, the publisher, the whole machine, from
      /proc); the broker alone (`ceiling.c`: 100,000 persistent 512-byte messages through a quorum queue from a
      confirming publisher to an acking consumer, 256 in flight, no work; median of 3) with its machine CPU per
      message;
      their ratio ("broker-messages per event"); the drain's rate against the broker's consume-and-ack rate (what a
      drain does); a live run at half the measured capacity C for 60 s with its latency (p50, p99); and the same
      rate published alone for 20 s into queues nothing consumes (the broker's and the publisher's share of the
      live run, and what is left of the machine for the pipeline). --live-fractions 0.1,0.25,0.5 runs the live
      run at each of those fractions of C instead, prints the latency by load with the latency-bounded throughput
      (the highest fraction whose p99 stays within 50 ms, every lower one's too), and also publishes alone at the
      lowest fraction: a live event there against a drained one, and the least that ratio can be, since a drained
      event publishes nothing (its events were queued before the drain) and a live one pays for its publishing. The
      fleet at rest for 20 s after the live runs: each worker's CPU (ms a second), PostgreSQL's and the machine's,
      what timers cost whatever the load.
  scripts/bench --callgrind [--database postgres]
      Instruction counts, which do not drift with the machine: one worker and the sink run under valgrind's callgrind
      while 10,000 events over 1,000 users drain (published once both are ready); prints the worker's instructions
      per event, the sink's per push, each part's instructions a second while idle (timers run by the clock, and
      valgrind stretches the drain), and the functions that executed the most instructions themselves. Judge a
      change by these, before and after (BADGEPIPE_BENCH_PACKAGE_PATH builds another checkout). The dumps stay in
      .services/bench/ for callgrind_annotate. Needs valgrind, gcc and objcopy; takes 3-8 minutes.
  scripts/bench [--mode backlog]          the drain alone (with --no-broker, no baseline)
  scripts/bench --mode live --rate R      latency at R events/s (prefer --cpu's C/2: a fixed rate means a different
                                          load on every machine)
  scripts/bench --mode celebrity          one user receives 1,000,000 follows, then reads them all: time per batch
                                          over the first and the last 50,000 (flat when ingestion is O(1) in one
                                          user's history), and the read-all's time (PostgreSQL, one worker)
  scripts/bench --mode api                the app's API beside the pipeline (benchkit/api.py): change-to-stream
                                          latency with 1,000 streams at C/10 (C drained first, --count events over
                                          --users, default 20,000 over 1,000), the API's CPU per event (also in
                                          broker-messages), its RSS with 10,000 idle streams, and GET /v1/me/counts
                                          requests/s against GET /healthz
  scripts/bench --broker-only             the broker-alone baseline alone (--baseline amqp-bench: the Swift client,
                                          publish then consume, which reads about 1.5x heavier)
  scripts/bench --mode push               the sender alone against the TLS sink: HTTP/2 (1 and 4 connections) and
                                          HTTP/1.1

Database: sqlite (one worker, a fresh file) or postgres (N workers in fleet mode, a fresh schema bench_<run> that is
dropped at exit; BADGEPIPE_BENCH_KEEP_DB=1 keeps it). --prestore M first stores M read notifications over the load's
users, so that tables and indexes are large while counters stay zero.

Environment: BADGEPIPE_BENCH_BUILD_PATH (swift build --scratch-path, default .build; relative to the package),
BADGEPIPE_BENCH_BUILD_FLAGS (more `swift build` arguments, e.g. -Xswiftc -g), BADGEPIPE_BENCH_PACKAGE_PATH (the
package to build and run, default this checkout), BADGEPIPE_BENCH_BINARIES (a directory of binaries built before:
nothing is built), BADGEPIPE_BENCH_SINK_PORT (default 18787),
BADGEPIPE_BENCH_POSTGRES_URL, BADGEPIPE_PARTITIONS (default 8), BADGEPIPE_BENCH_SERIES=FILE (live runs: every
latency, in ms). The partition queues badgepipe.events.<n> (a default deployment's names) are purged before a run,
which refuses to start while something else consumes them. Logs: .services/bench/.
"""

import argparse
import fcntl
import math
import os
import shutil
import sys
import time

from . import api, figures, instructions, runs
from . import services
from .services import ROOT, BenchError, Database, build, newest_wal, services_env, run

# How long `--cpu` publishes alone at C/2 (the rate's CPU settles within seconds; the queues hold what it sends).
ALONE_SECONDS = 20
# How long --cpu measures the fleet at rest after its live runs.
IDLE_SECONDS = 20


def parse(arguments):
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["backlog", "live", "celebrity", "push", "api"], default="backlog")
    parser.add_argument("--cpu", action="store_true",
                        help="backlog with CPU per part, the broker baseline with its CPU, and live at C/2")
    parser.add_argument("--rate", type=float, help="events/s (--mode live)")
    parser.add_argument("--count", type=int, help="events (default 50,000; celebrity 1,000,000; push 20,000)")
    parser.add_argument("--callgrind", action="store_true",
                        help="one worker and the sink under callgrind: instructions per event and per push")
    parser.add_argument("--users", type=int, help="users of the load (default 5,000; --callgrind 1,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cluster", action="store_true",
                        help="run on the three-node cluster of `scripts/services cluster up` (started if needed): "
                             "every client, the baseline's included, is given the three nodes")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--prestore", type=int, default=0)
    parser.add_argument("--live-seconds", type=int, default=60, help="length of --cpu's live run (default 60)")
    parser.add_argument("--live-fractions", default="0.5",
                        help="--cpu: live runs at these fractions of C, in order (default 0.5; e.g. 0.25,0.5), each "
                             "for --live-seconds; then the latency by load")
    parser.add_argument("--window", type=int, default=50_000, help="events per window (--mode celebrity)")
    parser.add_argument("--device-gone", action="store_true",
                        help="--mode celebrity: the sink answers the user's first push 410 Unregistered, so the "
                             "device is deactivated and the run measures ingestion without a backlog of pushes")
    broker = parser.add_mutually_exclusive_group()
    broker.add_argument("--no-broker", action="store_true", help="skip the broker-only baseline")
    broker.add_argument("--broker-only", action="store_true", help="run the broker-only baseline alone")
    parser.add_argument("--baseline", choices=["ceiling", "amqp-bench"], default="ceiling",
                        help="the broker-alone baseline: ceiling (../shared/bench/ceiling.c, a C client publishing "
                             "and consuming at once; the default) or amqp-bench (the Swift client, publish then "
                             "consume)")
    parser.add_argument("--broker-count", type=int, default=100_000)
    parser.add_argument("--broker-runs", type=int, default=3,
                        help="broker-only runs; the baseline is the median of each figure (default 3)")
    options = parser.parse_args(arguments)
    options.partitions = int(os.environ.get("BADGEPIPE_PARTITIONS", "8"))
    if options.mode == "celebrity":
        options.database = "postgres"
        options.workers = 1
    if options.count is None:
        options.count = 10_000 if options.callgrind else {"celebrity": 1_000_000, "push": 20_000,
                                                           "api": 20_000}.get(options.mode, 50_000)
    if options.users is None:
        options.users = 1000 if options.callgrind or options.mode == "api" else 5000
    for name in ("count", "users", "workers", "broker_runs"):
        if getattr(options, name) <= 0:
            parser.error(f"--{name} must be > 0")
    if options.mode == "live" and not (options.rate and options.rate > 0):
        parser.error("--mode live needs --rate R (events/s, > 0)")
    if options.rate and options.mode != "live":
        parser.error("--rate is for --mode live")
    if options.cpu and options.mode != "backlog":
        parser.error("--cpu runs a backlog drain: leave --mode out")
    if options.callgrind and (options.cpu or options.mode != "backlog" or options.workers != 1 or options.prestore):
        parser.error("--callgrind runs one worker on its own: leave --cpu, --mode, --workers and --prestore out")
    if options.callgrind:
        options.no_broker = True
    try:
        options.live_fractions = [figures.capacity_fraction(part) for part in options.live_fractions.split(",")]
    except ValueError as error:
        parser.error(f"--live-fractions: {error}")
    if options.live_fractions != [0.5] and not options.cpu:
        parser.error("--live-fractions is for --cpu")
    if options.database == "sqlite" and options.workers != 1:
        parser.error("--database sqlite runs exactly 1 worker (use --database postgres for more)")
    return options


def main(arguments=None):
    options = parse(sys.argv[1:] if arguments is None else arguments)
    build_path = os.environ.get("BADGEPIPE_BENCH_BUILD_PATH", ".build")
    package_path = os.path.abspath(os.environ.get("BADGEPIPE_BENCH_PACKAGE_PATH", ROOT))
    build_path = os.path.join(package_path, build_path)  # a relative scratch path is the built package's own
    try:
        if options.mode == "push":
            binaries = build(["badgepipe", "push-bench"], build_path, package_path)
            runs.push(binaries, options.count, int(os.environ.get("BADGEPIPE_BENCH_SINK_PORT", "18787")))
            return 0
        run("scripts/services", "up")
        if options.cluster:
            run("scripts/services", "cluster", "up")
            services.use_cluster()
        env = services_env()
        products = ["badgepipe"] + ([] if options.no_broker else ["amqp-bench"])
        binaries = build(["amqp-bench"] if options.broker_only else products, build_path, package_path)
        os.makedirs(os.path.join(ROOT, ".services"), exist_ok=True)
        lock = open(os.path.join(ROOT, ".services", "bench.lock"), "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BenchError("another scripts/bench is running (lock .services/bench.lock)")
        work = os.path.join(ROOT, ".services", "bench")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        run_id = time.strftime("%Y%m%d_%H%M%S") + f"_{os.getpid()}"
        postgres = os.environ.get("BADGEPIPE_BENCH_POSTGRES_URL",
                                  "postgres://badgepipe:badgepipe@127.0.0.1:5432/badgepipe")
        database = Database(options.database, postgres, work, run_id)
        setup = runs.Setup(options, binaries, env, database, work, run_id)
        if options.broker_only:
            broker_runs(options, setup)
            return 0
        wal = newest_wal()
        try:
            return run_pipeline(options, setup)
        finally:
            if wal and newest_wal() != wal:
                print("  note: RabbitMQ rolled its quorum-queue WAL over during this run (every 512 MiB written): "
                      "every partition queue stalled for a few seconds, which shows in the figures")
            setup.stop()
            database.drop(keep=os.environ.get("BADGEPIPE_BENCH_KEEP_DB") == "1")
            print(f"bench: logs in {os.path.relpath(work, ROOT)}/")
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def run_pipeline(options, setup):
    if options.callgrind:
        valgrind = instructions.Valgrind(setup.work)
        print(f"bench: callgrind, {options.count:,} events, {options.users:,} users, {options.database}, 1 worker "
              f"(starting the sink and the worker under valgrind)", flush=True)
        setup.start_sink(program=valgrind.command(setup.binary, "sink"))
        setup.prepare_broker()
        setup.start_fleet(1, program=valgrind.command(setup.binary, "worker")).await_ready(timeout=600)
        runs.callgrind(setup, valgrind, options.count, options.users, options.seed)
        return 0
    if options.mode == "api":
        broker_us = broker_runs(options, setup)[2] if not options.no_broker else None
        api.run(setup, options, broker_us)
        return 0
    setup.start_sink(max_deliveries=options.count + 10 if options.mode == "celebrity" else None)
    setup.prepare_broker()
    if options.mode == "celebrity":
        if options.device_gone:
            setup.sink.add_fault({"status": 410, "reason": "Unregistered"})
        runs.celebrity(setup, options.count, options.window)
        return 0
    if options.prestore:
        setup.prestore(options.prestore, options.users)
        setup.sink.clear()
    describe = f"{options.count:,} events, {options.users:,} users, {options.database}, {options.workers} worker(s)"
    if options.count <= options.users:
        print("  note: the load's first --users events register one device per user: use --count well above --users")
    if options.mode == "live":
        print(f"bench: live at {options.rate:,.0f} events/s, {describe}", flush=True)
        fleet = setup.start_fleet(options.workers)
        fleet.await_ready()
        runs.live(setup, options.count, options.users, options.seed, options.rate)
        print_rss(fleet)
        broker_baseline(options, setup, None)
        return 0
    print(f"bench: backlog, {describe}" + (f", {options.prestore:,} prestored" if options.prestore else ""),
          flush=True)
    capacity, report = runs.backlog(setup, options.count, options.users, options.seed, options.workers)
    if options.cpu:
        report.print(extra={"publisher": report.publisher_us * options.count / 1e6})
        live_reports = []  # (fraction, CpuReport), in the order run
        for index, fraction in enumerate(options.live_fractions):
            rate = capacity * fraction
            live_count = max(options.users + 1, int(rate * options.live_seconds))
            print(f"bench: live at {figures.fraction_label(fraction)} = {rate:,.0f} events/s for "
                  f"{options.live_seconds} s ({live_count:,} events) on the same workers", flush=True)
            live_reports.append((fraction, runs.live(setup, live_count, options.users, options.seed + 1 + index, rate)))
        if len(live_reports) > 1:
            print_latency_by_load(capacity, live_reports)
        runs.idle(setup, IDLE_SECONDS)
    print_rss(setup.fleet)
    setup.fleet.stop()
    if options.cpu:
        seconds = min(ALONE_SECONDS, options.live_seconds)
        for index, fraction in enumerate(alone_fractions(options.live_fractions)):
            rate = capacity * fraction
            alone_count = int(rate * seconds)
            print(f"bench: publishing alone at {figures.fraction_label(fraction)} = {rate:,.0f} events/s for {seconds} "
                  f"s ({alone_count:,} events), into partition queues nothing consumes", flush=True)
            runs.publishing_alone(
                setup, alone_count, options.users, options.seed + 1 + len(live_reports) + index, rate,
                next((report for run, report in reversed(live_reports) if run == fraction), None), report)
    broker_baseline(options, setup, capacity, report if options.cpu else None)
    return 0


def alone_fractions(live_fractions):
    """The fractions of C at which `--cpu` publishes alone: C/2 (the live run's default) and the lowest live fraction,
    where a live event's publishing weighs the most against a drained event."""
    return sorted({0.5, min(live_fractions)})


def broker_baseline(options, setup, events_per_s, report=None):
    if options.no_broker:
        return
    publish_rate, consume_rate, broker_us = broker_runs(options, setup)
    if report is not None:
        report.print(broker_us=broker_us)
    if events_per_s and not math.isnan(consume_rate):
        print(f"pipeline / broker consume + ack: {events_per_s:,.0f} events/s / {consume_rate:,.0f} msg/s = "
              f"{events_per_s / consume_rate:.3f} (the drain only consumes; confirmed publishes alone: "
              f"{publish_rate:,.0f} msg/s)")


def broker_runs(options, setup):
    """`--broker-runs` broker-only runs, one after the other; returns the median of each figure (with more than one
    run, printed with every run's CPU per message)."""
    one = runs.ceiling_only if options.baseline == "ceiling" else runs.broker_only
    results = [one(setup, options.broker_count) for _ in range(options.broker_runs)]
    baseline = figures.median_baseline(results)
    if len(results) > 1:
        each = ", ".join(f"{machine_us:.0f}" for _, _, machine_us in results)
        print(f"  the broker alone, median of {len(results)} runs: machine {baseline[2]:.0f} µs a message (runs: "
              f"{each}), consumed + acked {baseline[1]:,.0f} msg/s, confirmed publishes {baseline[0]:,.0f} msg/s")
    return baseline


def print_latency_by_load(capacity, live_reports):
    """One line per live run, by load: the rate, p99, and how busy the machine was."""
    print(f"bench: latency by load (C = {capacity:,.0f} events/s)")
    for fraction, report in sorted(live_reports, key=lambda item: item[0]):
        p99 = f"p99 {report.p99:.0f} ms" if report.p99 is not None else "no alert measured"
        print(f"  {figures.fraction_label(fraction)} ({capacity * fraction:,.0f} events/s): {p99}, the machine "
              f"{report.busy:.0%} busy")
    held = figures.latency_bounded_fraction({fraction: report.p99 for fraction, report in live_reports})
    lowest = figures.fraction_label(min(fraction for fraction, _ in live_reports))
    print(f"  latency-bounded throughput (p99 <= {figures.LATENCY_BOUND_MS} ms): "
          + (f"{figures.fraction_label(held)}" if held is not None else f"under {lowest}"))


def print_rss(fleet):
    line = ", ".join(f"{w.name} {runs.peak_rss_mib(w.process.pid) or 0:.0f} MiB" for w in fleet.workers)
    print(f"  peak RSS: {line}")

import AMQPClient
import BadgeCore
import BadgeSink
import Foundation
import Logging
import ServiceLifecycle
import SinkTestSupport
import TestServices
import Testing

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a fleet run's fault injection gets to work with.
struct FleetRun: Sendable {
    /// The workers, started and ready.
    let workers: [WorkerProcess]
    /// The PostgreSQL database's name (a fresh one per run; unused on SQLite).
    let database: String
    let databaseURL: String
    let namespace: String
    /// Each worker's `/metrics`, `/healthz` and `/readyz` port on 127.0.0.1, in the order of ``workers``.
    let metricsPorts: [Int]
    /// The sink, in this process.
    let sink: SinkState
    /// Where the workers' logs are.
    let logs: URL

    /// Every worker's `/metrics` as `name{labels}` → value (``OperationsTests/samples(_:)``), summed over the
    /// workers by `combine` for the series whose name starts with `prefix`; a worker that does not answer adds
    /// nothing.
    func metric(_ prefix: String, combine: (Double, Double) -> Double = (+)) async -> Double? {
        var result: Double?
        for port in metricsPorts {
            guard let (_, text) = try? await http("http://127.0.0.1:\(port)/metrics") else { continue }
            for (name, value) in OperationsTests.samples(text)
            where name == prefix || name.hasPrefix(prefix + "{") {
                result = result.map { combine($0, value) } ?? value
            }
        }
        return result
    }
}

/// A fleet of real `badgepipe worker` processes on PostgreSQL, with the sink in this process and a publisher that
/// re-publishes what a broker restart left unconfirmed.
/// The broker a fleet runs on: the single local node, or the three-node cluster of `scripts/services cluster up`.
struct FleetBroker: Sendable {
    /// Every node's URL, comma-separated.
    var amqpURL: String
    /// The shell command that runs `rabbitmqctl` on a node that answers (arguments are appended).
    var rabbitmqctl: String

    static let single = FleetBroker(amqpURL: TestServices.amqpURL, rabbitmqctl: TestServices.rabbitmqctl)
    static let cluster = FleetBroker(
        amqpURL: TestServices.clusterAMQPURLs, rabbitmqctl: TestServices.clusterServices + " ctl any")
}

struct FleetHarness {
    /// The broker of the fleets this task runs (`FleetHarness.$broker.withValue(.cluster) { … }`).
    @TaskLocal static var broker = FleetBroker.single

    static var amqpURL: String { broker.amqpURL }

    /// ``amqpURL`` with `query` (`key=value`) added to each node's URL; unchanged when it is empty.
    static func amqpURL(adding query: String) -> String {
        guard !query.isEmpty else { return amqpURL }
        return amqpURL.components(separatedBy: ",amqp").enumerated().map { index, part in
            let url = index == 0 ? part : "amqp" + part
            return url + (url.contains("?") ? "&" : "?") + query
        }.joined(separator: ",")
    }
    static let databaseBase = TestServices.databaseURL
    static let repository = TestServices.repository

    /// Runs `script` through `workers` workers while `chaos` injects faults; returns the checked report.
    ///
    /// With `sinkOutage`, the sink answers every push with 503 from the start for that long; just before it
    /// recovers, the report takes what the broker still holds, how many events the database has processed, and the
    /// outbox as the database holds it and as the workers' gauges report it.
    /// `sqlitePath` runs the workers on that SQLite file instead of a fresh PostgreSQL database (a single node: give
    /// one worker). `wrappers` start single workers through a command, by index (see ``withFleet``).
    static func run(
        seed: UInt64,
        workers workerCount: Int = 3,
        rate: Double = 120,
        sinkFault: Fault? = nil,
        sinkOutage: Duration? = nil,
        sqlitePath: String? = nil,
        wrappers: [Int: [String]] = [:],
        publishTimes: PublishTimes? = nil,
        chaos: @escaping @Sendable (FleetRun) async throws -> Int = { _ in 0 }
    ) async throws -> FleetReport {
        let script = FleetScript(seed: seed)
        return try await withFleet(
            seed: seed, workers: workerCount, sqlitePath: sqlitePath, wrappers: wrappers
        ) { run in
            let sinkState = run.sink
            if let sinkFault { sinkState.addFault(sinkFault) }
            if sinkOutage != nil { sinkState.addFault(try Fault(status: 503, reason: "ServiceUnavailable")) }
            let publisher = FleetPublisher(
                url: amqpURL, exchange: "\(run.namespace).events", rate: rate, times: publishTimes)
            async let republished = publisher.publish(script.steps)
            async let faults = chaos(run)
            async let atOutageEnd: (queued: Int, processed: Int, outbox: (Int, Double, Double))? = {
                guard let sinkOutage else { return nil }
                try await Task.sleep(for: sinkOutage)
                let seen = (
                    queued: try await messagesInQueues(namespace: run.namespace),
                    processed: try await count(
                        "processed_events", databaseURL: run.databaseURL, namespace: run.namespace),
                    outbox: (
                        try await count("outbox", databaseURL: run.databaseURL, namespace: run.namespace),
                        await run.metric("badgepipe_outbox_depth") ?? -1,
                        await run.metric("badgepipe_outbox_oldest_age_seconds", combine: max) ?? -1
                    )
                )
                _ = sinkState.clearFaults()
                return seen
            }()
            let (republishedCount, faultCount, outage) = try await (republished, faults, atOutageEnd)

            try await waitUntilQuiet(
                sink: sinkState, namespace: run.namespace, databaseURL: run.databaseURL, timeout: .seconds(180))
            var report = FleetReport.check(steps: script.steps, deliveries: sinkState.receivedPushes())
            report.republished = republishedCount
            report.queuedAtOutageEnd = outage?.queued
            report.processedAtOutageEnd = outage?.processed
            report.outboxAtOutageEnd = outage?.outbox
            report.faults = faultCount
            report.workerRestarts = run.workers.map(\.restarts).reduce(0, +)
            report.deadLettered = try await deadLettered(namespace: run.namespace)
            report.partitionsPerWorker = try await partitionsPerWorker(
                databaseURL: run.databaseURL, namespace: run.namespace)
            report.alertEventsLeft = try await count(
                "outbox_events", databaseURL: run.databaseURL, namespace: run.namespace)
            return report
        }
    }

    /// Starts a sink in this process and `workers` worker processes (on a fresh PostgreSQL database, or on
    /// `sqlitePath`), each ready, restarted by a supervisor when it exits; runs `body`; then stops them and removes
    /// the namespace's queues and the database (kept with the logs when `BADGEPIPE_FLEET_KEEP` is set).
    /// `environment` adds variables to every worker; `wrappers` starts single ones, by their index in
    /// ``FleetRun/workers``, through a command (e.g. ``FakeClock/wrapper(_:building:)``).
    static func withFleet<T: Sendable>(
        seed: UInt64, workers workerCount: Int = 3, sqlitePath: String? = nil,
        environment extra: [String: String] = [:], wrappers: [Int: [String]] = [:],
        _ body: @escaping @Sendable (FleetRun) async throws -> T
    ) async throws -> T {
        var logger = Logger(label: "fleet-test")
        logger.logLevel = .error
        let sink = try TestSink(seed: seed, logger: logger)

        let namespace = "fleet-\(seed)-\(UInt16.random(in: 0...UInt16.max))"
        let database = "fleet_\(seed)_\(UInt16.random(in: 0...UInt16.max))"
        let databaseURL: String
        if let sqlitePath {
            databaseURL = "sqlite:\(sqlitePath)"
        } else {
            try await shell("psql", [databaseBase, "-q", "-c", "create database \(database)"])
            databaseURL = String(databaseBase[...databaseBase.lastIndex(of: "/")!]) + database + "?sslmode=disable"
        }
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent(namespace)
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)

        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sink.run() }
            let port = try await sink.port()
            let environment = [
                "BADGEPIPE_AMQP_URL": amqpURL(adding: "heartbeat=2"),
                "BADGEPIPE_DATABASE_URL": databaseURL,
                "BADGEPIPE_APNS_URL": "http://127.0.0.1:\(port)",
                "BADGEPIPE_FCM_URL": "http://127.0.0.1:\(port)",
                "BADGEPIPE_NAMESPACE": namespace,
                "BADGEPIPE_PARTITIONS": "8",
                "BADGEPIPE_LEASE_TTL_MS": "3000",
                "BADGEPIPE_LOG_LEVEL": "info",
            ].merging(extra) { $1 }
            let metricsPorts = try (1...workerCount).map { _ in try freeListenPort() }
            let workers = (1...workerCount).map {
                WorkerProcess(
                    name: "w\($0)",
                    environment: environment.merging(["BADGEPIPE_METRICS_PORT": "\(metricsPorts[$0 - 1])"]) { $1 },
                    logDirectory: logs, wrapper: wrappers[$0 - 1] ?? [])
            }
            defer { for worker in workers { worker.stop() } }
            for worker in workers {
                try worker.start()
                try await worker.waitUntilReady()
            }

            // The supervisor: a worker that exits (crash-only) is started again, as systemd or docker would.
            let supervisor = Task {
                while !Task.isCancelled {
                    for worker in workers { try? worker.superviseOnce() }
                    try? await Task.sleep(for: .milliseconds(300))
                }
            }
            defer { supervisor.cancel() }
            let result = try await body(
                FleetRun(
                    workers: workers, database: database, databaseURL: databaseURL, namespace: namespace,
                    metricsPorts: metricsPorts, sink: sink.state, logs: logs))
            supervisor.cancel()
            for worker in workers { worker.stop() }
            await sink.shutDown()
            try await group.waitForAll()
            try await cleanUp(namespace: namespace)
            if ProcessInfo.processInfo.environment["BADGEPIPE_FLEET_KEEP"] == nil {
                if sqlitePath == nil {
                    try? await shell(
                        "psql", [databaseBase, "-q", "-c", "drop database if exists \(database) with (force)"])
                }
                try? FileManager.default.removeItem(at: logs)
            } else {
                print("fleet: kept database \(database) and logs \(logs.path)")
            }
            return result
        }
    }

    /// Until every partition queue is empty with nothing unacked, the outbox is empty (a push a dead worker may
    /// have sent waits two lease TTLs before it goes out again) and the sink has been quiet for 3 s.
    static func waitUntilQuiet(
        sink: SinkState, namespace: String, databaseURL: String, timeout: Duration
    ) async throws {
        do {
            try await waitUntilQuiet(timeout: timeout, what: "the fleet") {
                try await messagesInQueues(namespace: namespace)
                    + outboxRows(databaseURL: databaseURL, namespace: namespace)
            } received: {
                sink.count
            }
        } catch let error as FleetError {
            // Say what was still pending, so that a run that failed in CI can be understood from its log.
            let queues = (try? await queueLines(namespace: namespace)) ?? "?"
            let state =
                databaseURL.hasPrefix("sqlite:") ? "" : (try? await psql(databaseURL, Self.pendingStateQuery)) ?? "?"
            throw FleetError("\(error.description); queues: \(queues); state: \(state)")
        }
    }

    /// The leases, and the outbox per partition with its claims and schedule (times relative to now, in ms; `next`
    /// and `latest`: the earliest and latest scheduled attempt, rows due at once left out).
    static let pendingStateQuery = """
        select 'lease ' || partition_id || ' ' || coalesce(owner, '-') || ' epoch ' || epoch || ' expires ' \
        || ((expires_at - extract(epoch from clock_timestamp()) * 1000000) / 1000)::bigint from partition_leases \
        union all select 'outbox p' || partition_id || ' rows ' || count(*) || ' attempts ' || max(attempts) \
        || ' claimed_epoch ' || coalesce(max(claimed_epoch)::text, '-') || ' next ' \
        || coalesce(((min(nullif(next_attempt_at, 0)) - extract(epoch from clock_timestamp()) * 1000000) / 1000) \
        ::bigint::text, '-') || ' latest ' \
        || coalesce(((max(nullif(next_attempt_at, 0)) - extract(epoch from clock_timestamp()) * 1000000) / 1000) \
        ::bigint::text, '-') from outbox group by partition_id
        """

    /// `rabbitmqctl list_queues` lines of the namespace (name, ready + unacked, unacked, consumers), `|`-separated.
    static func queueLines(namespace: String) async throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace)-queue-lines.txt")
        try await shell(
            "sh",
            [
                "-c",
                broker.rabbitmqctl
                    + " list_queues -q name messages messages_unacknowledged consumers > \(output.path)",
            ],
            timeout: .seconds(30))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.hasPrefix("\(namespace).") }.joined(separator: " | ")
    }

    /// The rows `query` returns in the fleet database, one per line joined by ` | `.
    static func psql(_ databaseURL: String, _ query: String) async throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("psql-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: output) }
        try await shell(
            "sh", ["-c", "psql '\(databaseURL)' -Atc \"$0\" > \(output.path)", query], timeout: .seconds(30))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").joined(separator: " | ")
    }

    /// Until `pending` is 0 and `received` (pushes at the sink) has not changed for 3 s; polls every 500 ms.
    static func waitUntilQuiet(
        timeout: Duration, what: String, pending: () async throws -> Int, received: () async throws -> Int
    ) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var lastCount = -1
        var stableSince = clock.now
        while clock.now < deadline {
            let waiting = try await pending()
            let count = try await received()
            if waiting == 0, count == lastCount {
                if clock.now - stableSince > .seconds(3) { return }
            } else {
                lastCount = count
                stableSince = clock.now
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        throw FleetError("\(what) did not go quiet")
    }

    /// Ready plus unacked messages in the namespace's partition queues (`rabbitmqctl list_queues`: a passive
    /// declare counts only ready ones).
    static func messagesInQueues(namespace: String) async throws -> Int {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace)-queues.txt")
        try await shell(
            "sh", ["-c", broker.rabbitmqctl + " list_queues -q name messages > \(output.path)"],
            timeout: .seconds(30))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        var total = 0
        for line in text.split(separator: "\n") where line.hasPrefix("\(namespace).events.") {
            total += Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).last ?? "") ?? 0
        }
        return total
    }

    /// True when `pid` is gone or a zombie (Foundation's `Process` sometimes misses a child's exit).
    static func hasExited(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    /// Rows in the fleet database's outbox (pushes planned and not yet recorded as sent).
    static func outboxRows(databaseURL: String, namespace: String) async throws -> Int {
        try await count("outbox", databaseURL: databaseURL, namespace: namespace)
    }

    /// Rows in one table of the fleet database (PostgreSQL, or SQLite read with the `sqlite3` shell).
    static func count(_ table: String, databaseURL: String, namespace: String) async throws -> Int {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace)-\(table).txt")
        let query = "select count(*) from \(table)"
        let command =
            databaseURL.hasPrefix("sqlite:")
            ? "sqlite3 -readonly '\(databaseURL.dropFirst("sqlite:".count))' '\(query)'"
            : "psql '\(databaseURL)' -Atc '\(query)'"
        try await shell("sh", ["-c", "\(command) > \(output.path)"], timeout: .seconds(30))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// How many partitions each live worker leases now, fewest first (from the database, before the workers stop);
    /// none on SQLite, which has no leases.
    static func partitionsPerWorker(databaseURL: String, namespace: String) async throws -> [Int] {
        if databaseURL.hasPrefix("sqlite:") { return [] }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace)-leases.txt")
        let query =
            "select count(*) from partition_leases where owner is not null and expires_at > "
            + "extract(epoch from clock_timestamp()) * 1000000 group by owner order by 1"
        try await shell("sh", ["-c", "psql '\(databaseURL)' -Atc '\(query)' > \(output.path)"], timeout: .seconds(30))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    static func deadLettered(namespace: String) async throws -> Int {
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL))
        let channel = try await connection.openChannel()
        let count = try await channel.declareQueue("\(namespace).dead", passive: true).messageCount
        await connection.close()
        return Int(count)
    }

    static func cleanUp(namespace: String) async throws {
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL))
        let channel = try await connection.openChannel()
        for index in 0..<8 { _ = try? await channel.deleteQueue("\(namespace).events.\(index)") }
        _ = try? await channel.deleteQueue("\(namespace).dead")
        try? await channel.deleteExchange("\(namespace).events")
        try? await channel.deleteExchange("\(namespace).dlx")
        await connection.close()
    }

    /// Runs `rabbitmqctl arguments` on the test broker's node (``FleetBroker/rabbitmqctl``) and throws when it fails
    /// or takes longer than `timeout`.
    static func rabbitmqctl(_ arguments: String, timeout: Duration = .seconds(60)) async throws {
        try await shell("sh", ["-c", broker.rabbitmqctl + " " + arguments], timeout: timeout)
    }

    /// Runs a command (found on PATH, or in the repository for `scripts/…`) and throws when it fails or takes longer
    /// than `timeout`. Polls instead of `waitUntilExit`, which blocks a cooperative thread and was seen to miss the
    /// exit of a short-lived child while other children come and go.
    static func shell(_ command: String, _ arguments: [String], timeout: Duration = .seconds(60)) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [command] + arguments
        process.currentDirectoryURL = repository
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let pid = process.processIdentifier
        while process.isRunning, !hasExited(pid) {
            guard clock.now < deadline else { throw FleetError("\(command) \(arguments) took longer than \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        // When Foundation did not notice the exit, the status is unknown: the caller checks the effect instead.
        if !process.isRunning, process.terminationStatus != 0 {
            throw FleetError("\(command) \(arguments) failed")
        }
    }
}

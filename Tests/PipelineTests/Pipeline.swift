import AMQPClient
import BadgeCore
import BadgeDelivery
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import BadgeWorker
import Foundation
import Logging
import ServiceLifecycle
import SinkTestSupport
import TestServices
import Testing

/// Which database a pipeline test runs on.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The test database's URL: fresh PostgreSQL databases are made (and dropped) through it.
    static var postgresBase: String { TestServices.databaseURL }

    /// A fresh, empty database of this kind.
    func freshURL() throws -> String {
        switch self {
        case .sqlite:
            return "sqlite:"
                + FileManager.default.temporaryDirectory
                .appendingPathComponent("badgepipe-\(UUID().uuidString).sqlite").path
        case .postgres:
            let base = Self.postgresBase
            let name = "pipeline_\(UInt32.random(in: 0...UInt32.max))"
            try run("/usr/bin/env", ["psql", base, "-q", "-c", "create database \(name)"])
            guard let slash = base.lastIndex(of: "/") else { return base }
            return String(base[...slash]) + name
        }
    }
}

extension Backend {
    /// Removes a database made by ``freshURL()`` once the pipeline that used it has stopped, best effort: each
    /// test made a PostgreSQL database of its own and left it, about 190 of them per run of the suite, which the
    /// autovacuum launcher then kept visiting.
    func drop(_ url: String) {
        switch self {
        case .sqlite:
            let path = String(url.dropFirst("sqlite:".count))
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        case .postgres:
            guard let slash = url.lastIndex(of: "/") else { return }
            let name = url[url.index(after: slash)...]
            try? run(
                "/usr/bin/env", ["psql", Self.postgresBase, "-q", "-c", "drop database if exists \(name) with (force)"])
        }
    }
}

/// Runs a command and throws when it fails.
func run(_ executable: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw StoreError(
            code: StoreError.Code("test_setup"), message: "\(executable) \(arguments) failed", transient: false)
    }
}

/// A whole pipeline in one test process: the sink on an ephemeral port, a worker on its own topology namespace and a
/// fresh database, and a confirmed publisher. Everything talks over the real broker, database and HTTP.
struct Pipeline: Sendable {
    /// The first sink's records (the only sink unless the test asked for more).
    let sink: SinkState
    /// Every sink's records, in the order of `sinks` given to
    /// ``with(backend:database:partitions:policy:apnsTopic:sinks:delivery:_:)``.
    let sinks: [SinkState]
    /// Each sink's base URL (`http://` or, with a TLS certificate, `https://` on 127.0.0.1).
    let sinkURLs: [String]
    let topology: Topology
    let publisher: AMQPChannel
    let connection: AMQPConnection
    let store: any SQLBackedStore
    /// The fresh database's URL (`sqlite:PATH` or `postgres://…`).
    let databaseURL: String

    static let amqpURL = TestServices.amqpURL

    /// Starts everything, runs `body`, and shuts everything down gracefully. With `database` (a URL from
    /// ``Backend/freshURL()``), the worker uses that database and leaves it to the caller, who may run another
    /// pipeline on it; otherwise a fresh one, dropped at the end.
    static func with(
        backend: Backend,
        database: String? = nil,
        partitions: Int = 4,
        policy: BadgePolicy = .unseen,
        apnsTopic: String = "com.example.test",
        sinks sinkConfigurations: [SinkConfiguration] = [SinkConfiguration(host: "127.0.0.1", port: 0)],
        delivery: (@Sendable (_ ports: [Int]) throws -> DeliveryConfiguration)? = nil,
        _ body: @Sendable (Pipeline) async throws -> Void
    ) async throws {
        var logger = Logger(label: "pipeline-test")
        logger.logLevel = .warning
        let sinks = try sinkConfigurations.enumerated().map { index, configuration in
            try TestSink(seed: 42 + UInt64(index), configuration: configuration, logger: logger)
        }
        let sinkState = sinks[0].state
        let sinkGroup = ServiceGroup(services: sinks, logger: logger)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sinkGroup.run() }
            var ports: [Int] = []
            for sink in sinks { ports.append(try await sink.port()) }
            let port = ports[0]

            let topology = Topology(namespace: "test-\(UInt32.random(in: 0...UInt32.max))", partitions: partitions)
            let databaseURL = try database ?? backend.freshURL()
            let store = try StoreFactory.make(url: databaseURL, logger: logger)
            var configuration = WorkerConfiguration(
                amqp: try AMQPConfiguration(url: amqpURL),
                databaseURL: "unused",
                delivery: try delivery?(ports)
                    ?? DeliveryConfiguration(
                        apnsBaseURL: "http://127.0.0.1:\(port)", fcmBaseURL: "http://127.0.0.1:\(port)",
                        initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(100)),
                badgePolicy: policy,
                apnsTopic: apnsTopic,
                topology: topology,
                deliveryHeldBackPoll: .milliseconds(100))
            // Token feedback a session took and could not publish is taken again a second later.
            configuration.feedbackHold = .seconds(1)
            let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
            let worker = Worker(configuration: configuration, store: store, logger: logger) {
                readyContinuation.yield()
            }
            let workerGroup = ServiceGroup(services: [StoreService(store: store), worker], logger: logger)
            group.addTask { try await workerGroup.run() }
            var readyIterator = ready.makeAsyncIterator()
            _ = await readyIterator.next()

            let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL))
            let publisher = try await connection.openChannel()
            try await publisher.confirmSelect()
            let urls = zip(sinks, ports).map { sink, port in sink.baseURL(port: port) }
            let pipeline = Pipeline(
                sink: sinkState, sinks: sinks.map(\.state), sinkURLs: urls, topology: topology, publisher: publisher,
                connection: connection, store: store,
                databaseURL: databaseURL)
            do {
                try await body(pipeline)
            } catch {
                await pipeline.tearDown(workerGroup: workerGroup, sinkGroup: sinkGroup)
                throw error
            }
            await pipeline.tearDown(workerGroup: workerGroup, sinkGroup: sinkGroup)
            try await group.waitForAll()
            if database == nil { backend.drop(databaseURL) }
        }
    }

    private func tearDown(workerGroup: ServiceGroup, sinkGroup: ServiceGroup) async {
        await workerGroup.triggerGracefulShutdown()
        await sinkGroup.triggerGracefulShutdown()
        if let channel = try? await connection.openChannel() {
            for index in 0..<topology.partitions { _ = try? await channel.deleteQueue(topology.queueName(index)) }
            _ = try? await channel.deleteQueue(topology.deadQueueName)
            _ = try? await channel.deleteExchange(topology.exchange)
            _ = try? await channel.deleteExchange(topology.deadLetterExchange)
            _ = try? await channel.deleteExchange(topology.feedbackExchange)
        }
        await connection.close()
    }

    /// Publishes raw bodies in order with confirms, as a producer would.
    func publish(
        _ body: [UInt8], recipient: String, id: String?, contentType: String? = "application/json"
    ) async throws {
        try await publisher.publish(
            body, exchange: topology.exchange, routingKey: recipient, mandatory: true,
            properties: AMQPProperties(contentType: contentType, deliveryMode: .persistent, messageID: id))
    }

    /// Publishes a contract event (JSON object) in order with confirms.
    func publish(_ event: JSONValue) async throws {
        try await publish(
            event.serialized(), recipient: event["recipient"]?.stringValue ?? "", id: event["id"]?.stringValue)
    }

    /// Waits until every partition queue is drained and the sink has been quiet for a while.
    /// With `outboxEmpty`, quiet also needs every planned push recorded (the outbox empty): under load a push to a
    /// second provider account (a new TLS connection) can take longer than the quiet period.
    func waitUntilQuiet(timeout: Duration = .seconds(30), outboxEmpty: Bool = false) async throws {
        let clock = ContinuousClock()
        let channel = try await connection.openChannel()
        defer { Task { try? await channel.close() } }
        var lastCount = -1
        var stableSince = clock.now
        do {
            try await eventually("the pipeline quiet", timeout: timeout, every: .milliseconds(50)) {
                var ready: UInt32 = 0
                for index in 0..<topology.partitions {
                    ready += try await channel.declareQueue(topology.queueName(index), passive: true).messageCount
                }
                let count = sinks.reduce(0) { $0 + $1.count }
                guard ready == 0, count == lastCount else {
                    lastCount = count
                    stableSince = clock.now
                    return false
                }
                guard clock.now - stableSince > .milliseconds(700) else { return false }
                return try !outboxEmpty || querySQL("SELECT count(*) FROM outbox").first == "0"
            }
        } catch let error as EventuallyError {
            Issue.record("\(error)")
        }
    }

    /// The accepted pushes to a token, oldest first, as parsed APNs payloads.
    func acceptedPayloads(token: String) -> [JSONValue] {
        sink.receivedPushes(token: token).filter { $0.status == 200 }.compactMap { delivery in
            guard let json = try? JSONValue.parse(delivery.body) else { return nil }
            if delivery.provider == .fcm { return json["message"]?["apns"]?["payload"] }
            return json
        }
    }

    /// Runs SQL on the pipeline's database from outside the worker (psql, or Python's sqlite3 module), as an
    /// operator would: to make the real database refuse some data.
    func executeSQL(_ statement: String) throws {
        if databaseURL.hasPrefix("sqlite:") {
            let path = String(databaseURL.dropFirst("sqlite:".count))
            try run(
                "/usr/bin/env",
                [
                    "python3", "-c",
                    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.close()",
                    path, statement,
                ])
        } else {
            try run("/usr/bin/env", ["psql", databaseURL, "-q", "-v", "ON_ERROR_STOP=1", "-c", statement])
        }
    }

    /// Runs a query on the pipeline's database from outside the worker, as ``executeSQL(_:)`` does; returns its rows,
    /// each as its columns' text joined by `|` (NULL as the empty string).
    func querySQL(_ statement: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        if databaseURL.hasPrefix("sqlite:") {
            process.arguments = [
                "python3", "-c",
                "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nfor r in c.execute(sys.argv[2]): "
                    + "print('|'.join('' if v is None else str(v) for v in r))",
                String(databaseURL.dropFirst("sqlite:".count)), statement,
            ]
        } else {
            process.arguments = [
                "psql", databaseURL, "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", "-c", statement,
            ]
        }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw StoreError(
                code: StoreError.Code("test_setup"), message: "query failed: \(statement)", transient: false)
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Everything parked in the dead-letter queue so far, by message id (taken off the queue).
    func parked() async throws -> [String: AMQPMessage] {
        let channel = try await connection.openChannel()
        var parked: [String: AMQPMessage] = [:]
        while let delivery = try await channel.get(queue: topology.deadQueueName, noAck: true) {
            parked[delivery.properties.messageID ?? "?"] = delivery
        }
        try? await channel.close()
        return parked
    }

    /// The badge of the last accepted push to a token.
    func lastBadge(token: String) -> Int? {
        acceptedPayloads(token: token).last?["aps"]?["badge"]?.int64Value.map(Int.init)
    }
}

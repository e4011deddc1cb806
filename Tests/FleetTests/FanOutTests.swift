import BadgeCore
import BadgeSink
import BadgeWire
import Foundation
import Testing

/// A large fan-out: one user with 100 devices (APNs and FCM) receives 128 comments whose text is 20,000 `"`
/// characters (40 KB of JSON each, valid by the contract). Each alert's event is stored once, not once per device,
/// and a claim reads and decodes it once: every device gets every alert within a minute, and no worker grows past
/// 150 MB.
@Suite("A large fan-out", .serialized, .timeLimit(.minutes(10)))
struct FanOutTests {
    static let user = "u-fan-out"
    static let devices = 100
    static let comments = 128
    static let textLength = 20_000
    /// Peak resident memory allowed to a worker (VmHWM).
    static let peakLimitKB = 150 * 1024

    /// Device `index`'s token: even ones APNs (64 hex digits), odd ones FCM (longer, as FCM's are).
    static func device(_ index: Int) -> DeviceInfo {
        let digits = String(format: "%04x", index)
        if index.isMultiple(of: 2) {
            return DeviceInfo(
                token: String(repeating: "a", count: 60) + digits, provider: .apns, topic: "com.example.app",
                environment: .production)
        }
        return DeviceInfo(token: "fcm-" + String(repeating: "f", count: 150) + digits, provider: .fcm)
    }

    @Test func threeWorkersOnPostgres() async throws {
        try await Self.run(workers: 3, sqlitePath: nil)
    }

    @Test func oneWorkerOnSQLite() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fan-out-\(UUID().uuidString).sqlite")
            .path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        try await Self.run(workers: 1, sqlitePath: path)
    }

    static func run(workers workerCount: Int, sqlitePath: String?) async throws {
        let label = sqlitePath == nil ? "\(workerCount) workers on PostgreSQL" : "1 worker on SQLite"
        // The fleet tests' 3 s lease TTL makes takeovers quick; this test is about a fan-out, so its workers run with
        // the deployed default.
        try await FleetHarness.withFleet(
            seed: 33, workers: workerCount, sqlitePath: sqlitePath, environment: ["BADGEPIPE_LEASE_TTL_MS": "5000"]
        ) { run in
            let publisher = FleetPublisher(url: FleetHarness.amqpURL, exchange: "\(run.namespace).events", rate: 5000)
            let base = Timestamp.now().microsecondsSinceEpoch - 3_600_000_000
            let registrations = (0..<devices).map { index in
                FleetScript.Step(
                    event: Event(
                        id: "reg-\(index)", type: .deviceRegistered, recipient: user,
                        occurredAt: Timestamp(microsecondsSinceEpoch: base + Int64(index)), device: device(index)),
                    isDuplicate: false)
            }
            _ = try await publisher.publish(registrations)
            try await FleetHarness.waitUntilQuiet(
                sink: run.sink, namespace: run.namespace, databaseURL: run.databaseURL, timeout: .seconds(120))
            let before = run.sink.nextSeq
            let epochsBefore = try await Self.leaseEpochs(run.databaseURL)

            let memory = PeakMemory(workers: run.workers)
            let sampler = Task {
                while !Task.isCancelled {
                    memory.sample()
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            defer { sampler.cancel() }

            let text = String(repeating: "\"", count: textLength)
            let commentSteps = (0..<comments).map { index in
                FleetScript.Step(
                    event: Event(
                        id: "comment-\(index)", type: .comment, recipient: user,
                        occurredAt: Timestamp(microsecondsSinceEpoch: base + 1_000_000 + Int64(index)),
                        actor: EventActor(id: "u-\(index)", name: "Commenter \(index)", username: "c\(index)"),
                        postID: "p-1", commentID: "c-\(index)", text: text),
                    isDuplicate: false)
            }
            let clock = ContinuousClock()
            let start = clock.now
            let startDate = Date()
            _ = try await publisher.publish(commentSteps)
            let publishedAt = clock.now

            // When each alert (by event and device) was first accepted, by the sink's clock, and how often. The
            // bodies are parsed once most of the pushes are there (the sink is in this process: parsing as they
            // arrive would take the workers' CPU).
            var firstAccepted: [String: Date] = [:]
            var alerts: [String: Int] = [:]
            var after = before - 1
            let wanted = comments * devices
            let deadline = publishedAt + .seconds(120)
            while firstAccepted.count < wanted, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(250))
                guard run.sink.nextSeq - before >= wanted || clock.now >= deadline else { continue }
                for push in run.sink.receivedPushes(after: after) {
                    after = max(after, push.seq)
                    guard push.status == 200, let event = alertEvent(push) else { continue }
                    let key = "\(event)|\(push.token)"
                    alerts[key, default: 0] += 1
                    if firstAccepted[key] == nil { firstAccepted[key] = push.receivedAt }
                }
            }
            let deliveredAt =
                firstAccepted.count == wanted
                ? firstAccepted.values.max().map { Duration.seconds($0.timeIntervalSince(startDate)) } : nil
            memory.sample()
            let publishing = publishedAt - start
            let peaks = memory.peaksKB
            print(
                "fan-out (\(label)): \(comments) comments of \(textLength) quotes to \(devices) devices; "
                    + "published in \(publishing); \(firstAccepted.count) of \(wanted) alerts, all "
                    + "delivered after \(deliveredAt.map { "\($0)" } ?? "more than 120 s"); peak RSS per worker: "
                    + peaks.map {
                        "\($0.name) \($0.kilobytes / 1024) MB (reached \($0.at) "
                            + "after the comments' publishing began)"
                    }.joined(separator: ", "))

            var missing: [String] = []
            for comment in commentSteps {
                for index in 0..<devices where alerts["\(comment.event.id)|\(device(index).token)"] == nil {
                    missing.append("\(comment.event.id)|\(index)")
                }
            }
            #expect(missing.count == 0, "alerts missing, e.g. \(missing.prefix(5))")
            #expect(deliveredAt.map { $0 <= .seconds(60) } == true, "every alert within a minute of publishing")
            for peak in peaks {
                #expect(peak.kilobytes <= peakLimitKB, "\(peak.name) peaked at \(peak.kilobytes / 1024) MB")
            }
            #expect(run.workers.map(\.restarts).reduce(0, +) == 0, "no worker exited")
            #expect(try await FleetHarness.deadLettered(namespace: run.namespace) == 0)
            try await FleetHarness.waitUntilQuiet(
                sink: run.sink, namespace: run.namespace, databaseURL: run.databaseURL, timeout: .seconds(60))
            for push in run.sink.receivedPushes(after: after) {
                guard push.status == 200, let event = alertEvent(push) else { continue }
                alerts["\(event)|\(push.token)", default: 0] += 1
            }
            // A takeover re-sends what the previous owner sent but had not recorded (contract, guarantee 2: a worker
            // frozen past failover, as one starved of CPU for longer than the lease TTL is); otherwise every alert
            // goes once. (An alert's apns-id is derived from its event and token: a re-send carries the same.)
            let repeated = alerts.values.filter { $0 > 1 }.count
            let takeovers = try await Self.leaseEpochs(run.databaseURL) - epochsBefore
            print("fan-out (\(label)): alerts repeated \(repeated), partition takeovers during the run \(takeovers)")
            #expect(repeated == 0 || takeovers > 0, "every alert once, unless a partition changed hands")
            // Every event's stored row went with its last push.
            #expect(
                try await FleetHarness.count("outbox_events", databaseURL: run.databaseURL, namespace: run.namespace)
                    == 0)
        }
    }

    /// The sum of the partitions' lease epochs (each takeover adds one); 0 on SQLite (one worker).
    static func leaseEpochs(_ databaseURL: String) async throws -> Int {
        guard !databaseURL.hasPrefix("sqlite:") else { return 0 }
        let sum = try await FleetHarness.psql(databaseURL, "select coalesce(sum(epoch), 0) from partition_leases")
        guard let value = Int(sum.trimmingCharacters(in: .whitespaces)) else {
            throw FleetError("cannot read the lease epochs: \(sum)")
        }
        return value
    }

    /// The event of an alert push (APNs, or the APNs part of an FCM message), nil for a badge-only push.
    static func alertEvent(_ push: ReceivedPush) -> String? {
        guard var json = try? JSONValue.parse(push.body) else { return nil }
        if push.provider == .fcm { json = json["message"]?["apns"]?["payload"] ?? .null }
        guard json["aps"]?["alert"] != nil else { return nil }
        return json["event_id"]?.stringValue
    }
}

/// The highest VmHWM (peak resident set, `/proc/PID/status`) seen of each worker process, across its restarts, and
/// when it last grew (since the sampling began).
final class PeakMemory: @unchecked Sendable {
    private let workers: [WorkerProcess]
    private let lock = NSLock()
    private let start = ContinuousClock.now
    private var peaks: [String: (kilobytes: Int, at: Duration)] = [:]

    init(workers: [WorkerProcess]) {
        self.workers = workers
    }

    /// Reads each running worker's VmHWM now.
    func sample() {
        for worker in workers {
            guard let pid = worker.pid,
                let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kilobytes = Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "")
            else { continue }
            lock.lock()
            if kilobytes > peaks[worker.name]?.kilobytes ?? 0 {
                peaks[worker.name] = (kilobytes, ContinuousClock.now - start)
            }
            lock.unlock()
        }
    }

    /// The peaks, in worker order.
    var peaksKB: [(name: String, kilobytes: Int, at: Duration)] {
        lock.lock()
        defer { lock.unlock() }
        return workers.map { ($0.name, peaks[$0.name]?.kilobytes ?? 0, peaks[$0.name]?.at ?? .zero) }
    }
}

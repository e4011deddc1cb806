import AMQPClient
import BadgeSink
import Foundation
import Logging
import ServiceLifecycle
import SinkTestSupport
import TestServices
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The worker's operations listener: `/metrics`, `/healthz`, `/readyz` on 127.0.0.1, off unless a port is given.
@Suite("Operations listener", .serialized)
struct OperationsTests {
    /// Polls `url` until it answers (the listener starts with the worker).
    private func waitFor(_ url: String) async throws -> (Int, String) {
        try await eventuallyValue("\(url) answers") { try? await http(url) }
    }

    /// A worker on its own namespace and SQLite file; its output goes to `log` when given, else nowhere.
    private func worker(
        amqpURL: String, port: Int, database: String, sink: String = "http://127.0.0.1:1", log: String? = nil
    ) throws
        -> Process
    {
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments = [
            "worker", "--amqp-url", amqpURL, "--database-url", "sqlite:\(database)", "--apns-url", sink, "--fcm-url",
            sink, "--metrics-port", "\(port)", "--namespace", "ops-\(port)", "--partitions", "2",
        ]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        if let log {
            FileManager.default.createFile(atPath: log, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            process.standardOutput = handle
            process.standardError = handle
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        return process
    }

    /// `badgepipe health --url URL [--live]`: its exit status and output.
    private func health(_ url: String, live: Bool = false) throws -> (Int32, String) {
        let run = try runBadgepipe(["health", "--url", url] + (live ? ["--live"] : []))
        return (run.status, run.output + run.errors)
    }

    @Test func withoutABrokerTheWorkerIsAliveButNotReadyAndSaysWhy() async throws {
        let port = try freeListenPort()
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("ops-\(port).sqlite").path
        let process = try worker(amqpURL: "amqp://guest:guest@127.0.0.1:1/%2F", port: port, database: database)
        defer {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: database)
        }
        let (liveStatus, live) = try await waitFor("http://127.0.0.1:\(port)/healthz")
        #expect(liveStatus == 200, "\(live)")
        let (readyStatus, ready) = try await http("http://127.0.0.1:\(port)/readyz")
        #expect(readyStatus == 503)
        #expect(ready.contains("not connected to the broker"), "\(ready)")
        let (metricsStatus, _) = try await http("http://127.0.0.1:\(port)/metrics")
        #expect(metricsStatus == 200)
        // What a container health check runs.
        let (notReady, said) = try health("http://127.0.0.1:\(port)")
        #expect(notReady == 1)
        #expect(said.contains("not connected to the broker"), "\(said)")
        #expect(try health("http://127.0.0.1:\(port)", live: true).0 == 0)
    }

    @Test func withTheBrokerTheWorkerBecomesReadyAndExportsItsCounters() async throws {
        let port = try freeListenPort()
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("ops-\(port).sqlite").path
        let process = try worker(amqpURL: FleetHarness.amqpURL, port: port, database: database)
        defer {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: database)
        }
        _ = try await waitFor("http://127.0.0.1:\(port)/healthz")
        let ready = try await readiness(port: port, becomes: 200, within: 10)
        #expect(ready.0 == 200, "\(ready.1)")
        #expect(ready.1.contains(#""status":"ok""#))
        #expect(try health("http://127.0.0.1:\(port)").0 == 0)
        let (_, metrics) = try await http("http://127.0.0.1:\(port)/metrics")
        #expect(Self.samples(metrics)["badgepipe_partitions_held"] == 2, "\(metrics.prefix(500))")
        try await FleetHarness.cleanUp(namespace: "ops-\(port)")
    }

    /// The heartbeat the broker agreed with the worker, from its "worker ready" line: 5 s when the URL names none
    /// (so a worker gone without closing its connection frees its partition queues in seconds, not a minute),
    /// else the URL's.
    @Test(arguments: [("", 5), ("heartbeat=7", 7)])
    func theWorkerAsksForAFiveSecondHeartbeatUnlessItsURLNamesOne(query: String, agreed: Int) async throws {
        let port = try freeListenPort()
        let directory = FileManager.default.temporaryDirectory
        let database = directory.appendingPathComponent("ops-\(port).sqlite").path
        let log = directory.appendingPathComponent("ops-\(port).log").path
        let process = try worker(
            amqpURL: FleetHarness.amqpURL(adding: query), port: port, database: database, log: log)
        defer {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: database)
            try? FileManager.default.removeItem(atPath: log)
        }
        let line = try await eventuallyValue("a \"worker ready\" line", timeout: .seconds(20)) {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").first { $0.contains("worker ready") }
        }
        #expect(line.contains("amqp.heartbeat_seconds=\(agreed)"), "\(line)")
        try await FleetHarness.cleanUp(namespace: "ops-\(port)")
    }

    /// `/metrics` in the Prometheus text format, as `name{labels}` → value.
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    @Test func scrapedCountersMatchWhatWasPublishedAndDelivered() async throws {
        let port = try freeListenPort()
        let namespace = "ops-\(port)"
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("ops-\(port).sqlite").path
        try await TestSink.withSink(seed: 3, logLevel: .error) { sink in
            let process = try worker(
                amqpURL: FleetHarness.amqpURL, port: port, database: database, sink: sink.baseURL)
            defer {
                process.terminate()
                process.waitUntilExit()
                try? FileManager.default.removeItem(atPath: database)
            }
            let metricsURL = "http://127.0.0.1:\(port)/metrics"
            _ = try await waitFor("http://127.0.0.1:\(port)/healthz")
            let ready = try await readiness(port: port, becomes: 200, within: 20)
            #expect(ready.0 == 200, "\(ready.1)")

            // A scripted run (duplicates and dead tokens included), and one message that is not an event.
            let script = FleetScript(seed: 23, users: 12, events: 600, userPrefix: "ops")
            _ = try await FleetPublisher(url: FleetHarness.amqpURL, exchange: "\(namespace).events", rate: 3000)
                .publish(script.steps)
            let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: FleetHarness.amqpURL))
            let channel = try await connection.openChannel()
            try await channel.confirmSelect()
            try await channel.publish(
                Array("not json".utf8), exchange: "\(namespace).events", routingKey: "ops-u0", mandatory: true,
                properties: AMQPProperties(contentType: "application/json", deliveryMode: .persistent))
            await connection.close()

            try await FleetHarness.waitUntilQuiet(timeout: .seconds(120), what: "the worker") {
                try await FleetHarness.messagesInQueues(namespace: namespace)
            } received: {
                sink.state.count
            }
            let deliveries = sink.state.receivedPushes()
            var metrics: [String: Double] = [:]
            // The outbox gauges are sampled every 5 s; the counters below are checked whether or not they reach 0.
            try? await eventually("the outbox gauges at 0", timeout: .seconds(15), every: .milliseconds(500)) {
                metrics = Self.samples(try await http(metricsURL).1)
                return metrics[#"badgepipe_outbox_depth{partition="0"}"#] == 0
                    && metrics[#"badgepipe_outbox_depth{partition="1"}"#] == 0
            }
            #expect(metrics["badgepipe_events_consumed_total"] == Double(script.steps.count + 1))
            #expect(metrics["badgepipe_events_applied_total"] == Double(script.steps.count))
            #expect(metrics[#"badgepipe_events_parked_total{reason="invalid_json"}"#] == 1)
            #expect(metrics["badgepipe_batch_size_sum"] == Double(script.steps.count))
            #expect(metrics["badgepipe_event_lag_seconds_count"] == Double(script.steps.count))
            let accepted = deliveries.filter { $0.status == 200 }.count
            let dead = deliveries.filter { $0.status == 410 }.count
            #expect(accepted > 300)
            let apns2xx = metrics[#"badgepipe_push_attempts_total{provider="apns",status_class="2xx"}"#] ?? 0
            let fcm2xx = metrics[#"badgepipe_push_attempts_total{provider="fcm",status_class="2xx"}"#] ?? 0
            #expect(apns2xx + fcm2xx == Double(accepted))
            let apns4xx = metrics[#"badgepipe_push_attempts_total{provider="apns",status_class="4xx"}"#] ?? 0
            let fcm4xx = metrics[#"badgepipe_push_attempts_total{provider="fcm",status_class="4xx"}"#] ?? 0
            #expect(apns4xx + fcm4xx == Double(deliveries.count - accepted))
            #expect(metrics["badgepipe_dead_tokens_total", default: 0] == Double(dead))
            #expect(metrics["badgepipe_pushes_sent_total"] == Double(accepted))
            #expect(metrics["badgepipe_push_latency_seconds_count"] == Double(accepted))
            #expect(metrics["badgepipe_pushes_claimed_total", default: 0] >= Double(deliveries.count))
            #expect(metrics["badgepipe_partitions_held"] == 2)
            #expect(metrics[#"badgepipe_outbox_depth{partition="0"}"#] == 0)
            #expect(metrics[#"badgepipe_outbox_oldest_age_seconds{partition="1"}"#] == 0)
            #expect(metrics["badgepipe_push_retries_total", default: 0] == 0)
            process.terminate()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        try await FleetHarness.cleanUp(namespace: namespace)
    }

    /// Asks `/readyz` until it answers `status` (up to `seconds`); returns the last answer, for the caller to
    /// check and show.
    private func readiness(port: Int, becomes status: Int, within seconds: Int) async throws -> (Int, String) {
        var answer = (0, "")
        try? await eventually("/readyz answers \(status)", timeout: .seconds(seconds)) {
            answer = try await http("http://127.0.0.1:\(port)/readyz")
            return answer.0 == status
        }
        return answer
    }

    @Test func readinessFollowsTheBrokerAway() async throws {
        let port = try freeListenPort()
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("ops-\(port).sqlite").path
        let amqpURL = FleetHarness.amqpURL(adding: "heartbeat=2")
        let process = try worker(amqpURL: amqpURL, port: port, database: database)
        defer {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: database)
        }
        _ = try await waitFor("http://127.0.0.1:\(port)/healthz")
        let before = try await readiness(port: port, becomes: 200, within: 20)
        #expect(before.0 == 200, "\(before.1)")
        try await FleetHarness.rabbitmqctl("stop_app")
        let away: (Int, String)
        do {
            away = try await readiness(port: port, becomes: 503, within: 20)
        } catch {
            try? await FleetHarness.rabbitmqctl("start_app")
            throw error
        }
        try await FleetHarness.rabbitmqctl("start_app")
        #expect(away.0 == 503)
        #expect(away.1.contains("not connected to the broker"), "\(away.1)")
        // Still alive meanwhile: nothing is stuck, it waits for the broker.
        #expect(try await http("http://127.0.0.1:\(port)/healthz").0 == 200)
        let back = try await readiness(port: port, becomes: 200, within: 60)
        #expect(back.0 == 200, "\(back.1)")
        try await FleetHarness.cleanUp(namespace: "ops-\(port)")
    }

    @Test func theSinkCountsWhatItRecordedOnItsOwnPort() async throws {
        let port = try freeListenPort()
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments = ["sink", "--port", "\(port)"]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        _ = try await waitFor("http://127.0.0.1:\(port)/stats")
        for token in ["aa01", "aa02", "aa03"] {
            let answer = try await http(
                "http://127.0.0.1:\(port)/3/device/\(token)", method: "POST", body: #"{"aps":{"badge":1}}"#,
                headers: ["apns-topic": "com.example.app"])
            #expect(answer.status == 200)
        }
        let (status, text) = try await http("http://127.0.0.1:\(port)/metrics")
        #expect(status == 200)
        let metrics = Self.samples(text)
        #expect(metrics[#"badgepipe_sink_pushes_total{provider="apns",status="200"}"#] == 3, "\(text.prefix(2000))")
    }
}

import AsyncHTTPClient
import BadgeCore
import BadgeWire
import Foundation
import NIOCore
import TestServices
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The app's API on a fleet: three worker processes on PostgreSQL and two `badgepipe api` processes, a seeded random
/// script of ~2,500 events for 40 users (the fleet tests' reference-model script), a stream open for every user
/// (alternately on either instance). Guarantee 9: the counts every stream shows at a `badge_version` are those of
/// every push built at that version; each stream's versions only go up, across a worker's SIGKILL and a restart of
/// the instance that holds it (the reader reconnects with `Last-Event-ID`, as an app's does); and once the pipeline
/// is quiet, each stream's last counts are the user's current ones, whichever instance is asked.
@Suite("The app's API on a fleet", .serialized, .timeLimit(.minutes(6)))
struct AppAPIFleetTests {
    /// One `counts` event a stream sent.
    struct Sent: Sendable {
        var user: String
        var version: Int64
        var counts: JSONValue
    }

    /// What the streams sent, and how often each reconnected.
    final class StreamLog: @unchecked Sendable {
        private let lock = NSLock()
        private var sent: [Sent] = []
        private var connections: [String: Int] = [:]

        func add(_ event: Sent) {
            lock.withLock { sent.append(event) }
        }

        func connected(_ user: String) {
            lock.withLock { connections[user, default: 0] += 1 }
        }

        var all: [Sent] { lock.withLock { sent } }
        var connectionCounts: [String: Int] { lock.withLock { connections } }
    }

    @Test func streamsAndPushesCarryOneCountAcrossAWorkerKillAndAnAPIRestart() async throws {
        let seed: UInt64 = 41
        let script = FleetScript(seed: seed)
        try await FleetHarness.withFleet(seed: seed, workers: 3) { run in
            let secretFile = run.logs.appendingPathComponent("jwt-secret")
            try (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
                .write(to: secretFile, atomically: true, encoding: .utf8)
            let ports = [try freeListenPort(), try freeListenPort()]
            let apis = ports.enumerated().map { index, port in
                WorkerProcess(
                    name: "api\(index + 1)",
                    environment: [
                        "BADGEPIPE_AMQP_URL": FleetHarness.amqpURL, "BADGEPIPE_DATABASE_URL": run.databaseURL,
                        "BADGEPIPE_NAMESPACE": run.namespace, "BADGEPIPE_API_PORT": "\(port)",
                        "BADGEPIPE_JWT_SECRET_FILE": secretFile.path, "BADGEPIPE_LOG_LEVEL": "info",
                    ], logDirectory: run.logs, command: ["api"])
            }
            defer { for api in apis { api.stop() } }
            for (api, port) in zip(apis, ports) {
                try api.start()
                try await Self.waitUntilReady(port: port)
            }

            var users: [String] = []
            var owners: [String: String] = [:]
            for step in script.steps {
                if !users.contains(step.event.recipient) { users.append(step.event.recipient) }
                if step.event.type == .deviceRegistered, let token = step.event.device?.token {
                    owners[token] = step.event.recipient
                }
            }
            var tokens: [String: String] = [:]
            for user in users {
                tokens[user] = try await Self.developmentToken(user: user, secretFile: secretFile.path)
            }

            // One connection per stream: more than the client's default of 8 per host.
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = users.count
            // A refused connection fails its request at once and `follow` tries again 200 ms later, as EventSource
            // does. The pool's own retry backs off by 1.25× a failed attempt, shared by every stream to the port:
            // twenty streams refused for a few seconds while an instance restarts add up to waits of tens of seconds,
            // past the end of the run.
            configuration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let log = StreamLog()
            let readers = users.enumerated().map { index, user in
                let port = ports[index % 2]
                let token = tokens[user]!
                return Task { await Self.follow(client, port: port, user: user, token: token, into: log) }
            }
            // Every stream has sent its first counts before anything is published.
            try await eventually("every stream sent its first counts") {
                Set(log.all.map(\.user)).count == users.count
            }

            let publisher = FleetPublisher(url: FleetHarness.amqpURL, exchange: "\(run.namespace).events", rate: 120)
            async let published = publisher.publish(script.steps)
            try await Task.sleep(for: .seconds(6))
            let victim = run.workers[1]
            try victim.killHardAndRestart()
            try await Task.sleep(for: .seconds(5))
            try await apis[1].restartGracefully(waitForReady: false)
            try await Self.waitUntilReady(port: ports[1])
            _ = try await published
            try await FleetHarness.waitUntilQuiet(
                sink: run.sink, namespace: run.namespace, databaseURL: run.databaseURL, timeout: .seconds(180))
            // The last changes reach the streams (the instances read the counts every 250 ms).
            try await Task.sleep(for: .seconds(3))
            for reader in readers { reader.cancel() }
            var current: [String: JSONValue] = [:]
            for (index, user) in users.enumerated() {
                let (status, text) = try await http(
                    "http://127.0.0.1:\(ports[(index + 1) % 2])/v1/me/counts",
                    headers: ["Authorization": "Bearer \(tokens[user]!)"])
                #expect(status == 200)
                current[user] = try JSONValue.parse(Array(text.utf8))
            }
            try await client.shutdown()

            let pushes = run.sink.receivedPushes()
            let report = FleetReport.check(steps: script.steps, deliveries: pushes)
            print("fleet[app API]: \(report)")
            #expect(report.lostEffects.isEmpty, "lost: \(report.lostEffects.prefix(10))")
            #expect(report.badgeMismatches.isEmpty, "badges: \(report.badgeMismatches.prefix(10))")

            // The pushes' counts by user and version.
            var pushed: [String: [Int64: [JSONValue]]] = [:]
            for push in pushes where push.status == 200 {
                guard let user = owners[push.token], var payload = try? JSONValue.parse(push.body) else { continue }
                if push.provider == .fcm { payload = payload["message"]?["apns"]?["payload"] ?? .null }
                guard let version = payload["badge_version"]?.int64Value else { continue }
                pushed[user, default: [:]][version, default: []].append(payload)
            }
            let sent = log.all
            var compared = 0
            var disagreements: [String] = []
            for event in sent {
                for payload in pushed[event.user]?[event.version] ?? [] {
                    compared += 1
                    let badge = payload["aps"]?["badge"]?.int64Value ?? 0
                    var same = badge == event.counts["badge"]?.int64Value
                    for field in ["unread_notifications", "unseen_notifications", "unread_messages"] {
                        same = same && payload["counts"]?[field]?.int64Value == event.counts[field]?.int64Value
                    }
                    if !same { disagreements.append("\(event.user)@\(event.version): \(event.counts) vs \(payload)") }
                }
            }
            var backwards: [String] = []
            var stale: [String] = []
            for user in users {
                let versions = sent.filter { $0.user == user }.map(\.version)
                if versions != versions.sorted() || Set(versions).count != versions.count {
                    backwards.append("\(user): \(versions)")
                }
                let last = sent.last { $0.user == user }
                if last?.version != current[user]?["badge_version"]?.int64Value || last?.counts != current[user] {
                    stale.append("\(user): stream \(last.map { "\($0.counts)" } ?? "-"), now \(current[user] ?? .null)")
                }
            }
            let reconnected = users.enumerated().filter { $0.offset % 2 == 1 }.map {
                log.connectionCounts[$0.element] ?? 0
            }
            print(
                "fleet[app API]: \(sent.count) counts events on \(users.count) streams, \(compared) compared with "
                    + "the push at their version; streams of the restarted instance connected \(reconnected.min() ?? 0)"
                    + "–\(reconnected.max() ?? 0) times")
            #expect(disagreements.isEmpty, "guarantee 9: \(disagreements.prefix(5))")
            #expect(compared > 500, "the streams and the pushes share versions")
            #expect(backwards.isEmpty, "a stream went back: \(backwards.prefix(3))")
            #expect(stale.isEmpty, "a stream's last counts are not the user's: \(stale.prefix(3))")
            #expect(reconnected.allSatisfy { $0 >= 2 }, "every stream of the restarted instance reconnected")
            #expect(run.workers.map(\.restarts).reduce(0, +) == 0, "no worker exited on its own")
        }
    }

    static func waitUntilReady(port: Int) async throws {
        try await eventually("the API on port \(port) ready", timeout: .seconds(60), every: .milliseconds(200)) {
            await httpStatus("http://127.0.0.1:\(port)/readyz") == 200
        }
    }

    /// `badgepipe api token --user USER` with the instances' secret.
    static func developmentToken(user: String, secretFile: String) async throws -> String {
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments = ["api", "token", "--user", user, "--jwt-secret-file", secretFile]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FleetError("api token exited \(process.terminationStatus)") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Reads `user`'s stream as an app does, until cancelled: every `counts` event into `log`, and after the stream
    /// ends or fails, a new one with `Last-Event-ID` (the last version it was sent).
    static func follow(_ client: HTTPClient, port: Int, user: String, token: String, into log: StreamLog) async {
        var lastID: String?
        while !Task.isCancelled {
            do {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/me/stream")
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                if let lastID { request.headers.add(name: "Last-Event-ID", value: lastID) }
                let response = try await client.execute(request, timeout: .seconds(600))
                guard response.status == .ok else { throw FleetError("stream: \(response.status)") }
                log.connected(user)
                var buffer: [UInt8] = []
                for try await chunk in response.body {
                    buffer.append(contentsOf: chunk.readableBytesView)
                    while let end = Self.eventEnd(buffer) {
                        let text = String(decoding: buffer[..<end.start], as: UTF8.self)
                        buffer.removeFirst(end.after)
                        var (name, id, data) = ("", nil as String?, "")
                        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                            if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                            if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                            if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                        }
                        guard name == "counts", let id, let version = Int64(id),
                            let counts = try? JSONValue.parse(Array(data.utf8))
                        else { continue }
                        lastID = id
                        log.add(Sent(user: user, version: version, counts: counts))
                    }
                }
            } catch {
                // The instance went away (or the test ended): connect again, as EventSource does.
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Where the first event of `buffer` ends (a blank line): its text's end and the index after the blank line.
    static func eventEnd(_ buffer: [UInt8]) -> (start: Int, after: Int)? {
        guard buffer.count >= 2 else { return nil }
        for index in 1..<buffer.count where buffer[index] == 0x0A && buffer[index - 1] == 0x0A {
            return (index - 1, index + 1)
        }
        return nil
    }
}

import Foundation
import TestServices
import Testing

/// `badgepipe` refuses bad settings at start with a clear message naming the setting, never a silent default.
@Suite("Command-line settings")
struct SettingsTests {
    /// Runs `badgepipe arguments` with `environment` added; returns its exit status and standard error.
    private func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let (status, _, errors) = try runBadgepipe(arguments, environment: environment)
        return (status, errors)
    }

    private static let sink = ["--apns-url", "http://127.0.0.1:1", "--fcm-url", "http://127.0.0.1:1"]

    @Test(
        arguments: [
            (["--partitions", "0"], [:], "--partitions (BADGEPIPE_PARTITIONS) must be within 1...1024, not 0"),
            ([], ["BADGEPIPE_PARTITIONS": "eight"], "BADGEPIPE_PARTITIONS must be an integer, not \"eight\""),
            (["--batch-size", "0"], [:], "--batch-size (BADGEPIPE_BATCH_SIZE) must be within 1...10000, not 0"),
            ([], ["BADGEPIPE_SEND_CONCURRENCY": "0"], "--send-concurrency (BADGEPIPE_SEND_CONCURRENCY) must be within"),
            (["--delivery-round-size", "0"], [:], "--delivery-round-size (BADGEPIPE_DELIVERY_ROUND_SIZE) must be"),
            (
                ["--delivery-held-back-poll", "1"], [:],
                "--delivery-held-back-poll (BADGEPIPE_DELIVERY_HELD_BACK_POLL_MS) must be"
            ),
            (
                [], ["BADGEPIPE_DELIVERY_RECORD_DELAY_MS": "-1"],
                "--delivery-record-delay (BADGEPIPE_DELIVERY_RECORD_DELAY_MS) must be within 0...1000"
            ),
            ([], ["BADGEPIPE_LOG_LEVEL": "verbose"], "--log-level (BADGEPIPE_LOG_LEVEL) must be trace, debug"),
            (["--provider-connections", "0"], [:], "--provider-connections (BADGEPIPE_PROVIDER_CONNECTIONS) must be"),
            (
                ["--shutdown-timeout", "0"], [:],
                "--shutdown-timeout (BADGEPIPE_SHUTDOWN_TIMEOUT) must be within 1...3600"
            ),
            ([], ["BADGEPIPE_RETENTION_DAYS": "-1"], "--retention-days (BADGEPIPE_RETENTION_DAYS) must be within 0..."),
            (["--max-devices-per-user", "0"], [:], "--max-devices-per-user (BADGEPIPE_MAX_DEVICES_PER_USER) must be"),
            (["--provider-timeout", "5"], [:], "--provider-timeout (BADGEPIPE_PROVIDER_TIMEOUT_MS) must be within"),
            (
                [], ["BADGEPIPE_METRICS_PORT": "70000"],
                "--metrics-port (BADGEPIPE_METRICS_PORT) must be within 1...65535"
            ),
            (["--apns-url", "ftp://x"], [:], "--apns-url must be an http:// or https:// URL with a host"),
            (["--fcm-url", "http://"], [:], "--fcm-url must be an http:// or https:// URL with a host"),
            (
                ["--database-url", "postgres://u@db.example/app?sslmode=verify-full&sslrootcert=/nonexistent.pem"],
                [:], "sslrootcert /nonexistent.pem is not a readable file"
            ),
            (["--database-url", "postgres://u@db.example/app?sslmode=bogus"], [:], "unsupported sslmode bogus"),
            (
                ["--apns-key-file", "/nonexistent.p8", "--apns-key-id", "K"], [:],
                "--apns-key-file needs --apns-team-id"
            ),
            (
                ["--apns-key-file", "/nonexistent.p8", "--apns-key-id", "K", "--apns-team-id", "T"], [:],
                "cannot read the APNs key file /nonexistent.p8"
            ),
        ] as [([String], [String: String], String)])
    func theWorkerRefusesABadSettingNamingIt(
        arguments: [String], environment: [String: String], message: String
    )
        throws
    {
        let (status, errors) = try run(["worker"] + Self.sink + arguments, environment: environment)
        #expect(status != 0)
        #expect(errors.contains(message), "\(errors)")
    }

    /// docs/configuration.md's table of settings says what `badgepipe worker --help` and `badgepipe sink serve
    /// --help` say (which the settings tables, `WorkerSettings` and `SinkSettings`, make): every flag of the command
    /// has a row, and a row of one flag names its variable and, when it gives one as a literal, its default as the
    /// help does. The worker's rows start with the flag, the sink's with "sink"; the log level, which both take,
    /// has the worker's row.
    @Test(
        arguments: [
            ("| `--", ["worker", "--help"], []),
            ("| sink `--", ["sink", "serve", "--help"], ["--log-level"]),
        ] as [(String, [String], [String])])
    func theConfigurationPageSaysWhatTheHelpSays(rowPrefix: String, command: [String], sharedFlags: [String]) throws {
        let (status, help, errors) = try runBadgepipe(command)
        #expect(status == 0, "\(errors)")
        let flat = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let page = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let rows = page.split(separator: "\n").filter { $0.hasPrefix(rowPrefix) }.map {
            $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        /// The flags a cell names: its code spans that start with `--`, without their arguments.
        func flags(in cell: String) -> [String] {
            cell.split(separator: "`").filter { $0.hasPrefix("--") }.map { String($0.prefix { $0 != " " }) }
        }
        let documented = Set(rows.flatMap { flags(in: $0[0]) } + sharedFlags)
        let offered = help.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  --") else { return nil }
            return String(line.dropFirst(2).prefix { $0 != " " })
        }
        #expect(offered.count > 10, "\(help)")
        for flag in offered where !documented.contains(flag) {
            Issue.record("\(command[0]) \(flag) has no row in docs/configuration.md")
        }
        var checked = 0
        for row in rows where !row[0].contains(" / ") {
            let flag = try #require(flags(in: row[0]).first)
            let variable = try #require(row[1].split(separator: "`").first)
            #expect(offered.contains(flag), "docs/configuration.md has a row for \(flag), which \(command[0]) lacks")
            #expect(flat.contains(variable), "the help of \(command[0]) does not name \(variable)")
            guard row[2].hasPrefix("`") else { continue }
            let value = row[2].split(separator: "`")[0]
            #expect(
                flat.contains("(\(variable), default \(value)"),
                "docs/configuration.md says \(flag) (\(variable)) is \(value) by default; the help does not")
            checked += 1
        }
        #expect(checked >= 5)
    }

    @Test func theWorkerRefusesARealProviderWithoutCredentials() throws {
        let (status, errors) = try run(["worker", "--apns-url", "https://api.push.apple.com"])
        #expect(status != 0)
        #expect(
            errors.contains("--apns-url is https://api.push.apple.com but no APNs credentials are set"), "\(errors)")
        let (fcmStatus, fcmErrors) = try run(
            ["worker"], environment: ["BADGEPIPE_FCM_URL": "https://fcm.googleapis.com"])
        #expect(fcmStatus != 0)
        #expect(
            fcmErrors.contains("--fcm-url is https://fcm.googleapis.com but no FCM credentials are set"),
            "\(fcmErrors)")
    }

    @Test func theWorkerNeedsOneProviderAndOneIsEnough() throws {
        let (status, errors) = try run(["worker"])
        #expect(status != 0)
        #expect(errors.contains("no push provider is configured: give APNs credentials"), "\(errors)")
        // One provider alone passes: the next setting checked (a bad one on purpose) is the complaint.
        for provider in [["--apns-url", "http://127.0.0.1:1"], ["--fcm-url", "http://127.0.0.1:1"]] {
            let (_, alone) = try run(["worker"] + provider + ["--partitions", "0"])
            #expect(alone.contains("--partitions (BADGEPIPE_PARTITIONS) must be within"), "\(provider): \(alone)")
        }
    }

    /// Writes a new P-256 key (a stand-in for Apple's `.p8`) to `key`.
    private func writeAPNsKey(to key: URL) throws {
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key.path,
        ]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        try #require(openssl.terminationStatus == 0)
    }

    @Test func apnsCredentialsNeedTheAppsTopic() throws {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString).p8")
        defer { try? FileManager.default.removeItem(at: key) }
        try writeAPNsKey(to: key)
        let credentials = ["--apns-key-file", key.path, "--apns-key-id", "K", "--apns-team-id", "T"]
        let (status, errors) = try run(["worker"] + Self.sink + credentials)
        #expect(status != 0)
        #expect(errors.contains("APNs credentials need --apns-topic (BADGEPIPE_APNS_TOPIC)"), "\(errors)")
        // With the topic the same settings pass: the next setting checked (a bad one on purpose) is the complaint.
        let (_, withTopic) = try run(
            ["worker"] + Self.sink + credentials + ["--apns-topic", "com.example.app", "--partitions", "0"])
        #expect(withTopic.contains("--partitions (BADGEPIPE_PARTITIONS) must be within"), "\(withTopic)")
    }

    @Test func theWorkerRefusesToSendCredentialsOverPlainHTTPToAnotherHost() throws {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString).p8")
        defer { try? FileManager.default.removeItem(at: key) }
        try writeAPNsKey(to: key)
        let credentials = [
            "--apns-key-file", key.path, "--apns-key-id", "K", "--apns-team-id", "T", "--apns-topic", "com.example.app",
        ]
        let (status, errors) = try run(
            ["worker", "--apns-url", "http://sink.example:8787", "--fcm-url", "http://127.0.0.1:1"] + credentials)
        #expect(status != 0)
        #expect(
            errors.contains(
                "--apns-url is http://sink.example:8787: the worker will not send the APNs credentials over plain "
                    + "http:// to a host other than loopback"), "\(errors)")
        // The sandbox URL follows --apns-url unless set: refused on its own name when only it leaves loopback.
        let (_, sandbox) = try run(
            ["worker"] + Self.sink + credentials,
            environment: ["BADGEPIPE_APNS_SANDBOX_URL": "http://10.0.0.1:8787"])
        #expect(sandbox.contains("--apns-sandbox-url is http://10.0.0.1:8787: the worker will not send"), "\(sandbox)")
        // Plain http to loopback (a local sink) passes: the next setting checked (a bad one on purpose) complains.
        let (_, loopback) = try run(
            ["worker", "--apns-url", "http://localhost:1", "--fcm-url", "http://[::1]:1", "--partitions", "0"]
                + credentials)
        #expect(loopback.contains("--partitions (BADGEPIPE_PARTITIONS) must be within"), "\(loopback)")
    }

    /// A database whose schema a newer badgepipe upgraded: the worker says so and exits at once, without retrying.
    @Test func theWorkerRefusesADatabaseSchemaNewerThanItKnows() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("newer-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: file) }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = [
            "python3", "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.close()",
            file.path,
            "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL); "
                + "INSERT INTO schema_migrations VALUES (1000000, 0);",
        ]
        try python.run()
        python.waitUntilExit()
        try #require(python.terminationStatus == 0)
        let clock = ContinuousClock()
        let start = clock.now
        let (status, errors) = try run(["worker"] + Self.sink + ["--database-url", "sqlite:\(file.path)"])
        #expect(status != 0)
        #expect(
            errors.contains(
                "the database schema is at version 1000000 and serves badgepipe from schema version 1000000; "
                    + "this badgepipe knows up to "), "\(errors)")
        #expect(errors.contains(": upgrade badgepipe"), "\(errors)")
        #expect(clock.now - start < .seconds(20))
    }

    @Test func publishPrintsTheEventItsFlagsMake() throws {
        let (status, output, errors) = try runBadgepipe([
            "publish", "--print", "--type", "device_registered", "--recipient", "u-a", "--id", "d1",
            "--occurred-at", "2026-11-24T10:00:00Z", "--token", "tok-0001", "--provider", "apns", "--topic",
            "com.example.other", "--environment", "sandbox",
        ])
        #expect(status == 0, "\(errors)")
        #expect(
            output
                == #"{"id":"d1","type":"device_registered","recipient":"u-a","occurred_at":"2026-11-24T10:00:00Z","#
                + #""device":{"token":"tok-0001","provider":"apns","topic":"com.example.other","environment":"sandbox"}}"#
                + "\n")
        let (_, preferences, _) = try runBadgepipe([
            "publish", "--print", "--type", "preferences_updated", "--recipient", "u-a", "--id", "p1",
            "--occurred-at", "2026-11-24T10:00:00Z", "--badge-enabled", "false",
        ])
        #expect(preferences.contains(#""preferences":{"badge_enabled":false}"#), "\(preferences)")
        let (refused, _, said) = try runBadgepipe([
            "publish", "--print", "--type", "device_registered", "--recipient", "u-a", "--token", "tok-0001",
            "--provider", "apns", "--environment", "prod",
        ])
        #expect(refused != 0)
        #expect(said.contains("--environment is production or sandbox, not prod"), "\(said)")
    }

    @Test func publishNamesTheInvalidEventsOfAFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let events =
            #"[{"id":"ok1","type":"notifications_opened","recipient":"u-a","occurred_at":"2026-11-24T10:00:00Z"},"#
            + #"{"id":"bad1","type":"folow","recipient":"u-a","occurred_at":"2026-11-24T10:00:00Z"}]"#
        try Data(events.utf8).write(to: file)
        let (status, output, errors) = try runBadgepipe(["publish", "--print", "--file", file.path])
        #expect(status == 0, "still published: invalid events are how the dead queue is tested")
        #expect(output.split(separator: "\n").count == 2)
        #expect(errors.contains(#"event 2 ("bad1") is invalid: unknown type "folow""#), "\(errors)")
        #expect(!errors.contains("ok1"))
    }

    @Test func theSinkRefusesHalfATLSSetupAndABadPort() throws {
        let (status, errors) = try run(["sink", "--port", "0", "--tls-cert", "/tmp/x.crt"])
        #expect(status != 0)
        #expect(errors.contains("--tls-cert and --tls-key go together"), "\(errors)")
        let (portStatus, portErrors) = try run(["sink"], environment: ["BADGEPIPE_SINK_PORT": "70000"])
        #expect(portStatus != 0)
        #expect(portErrors.contains("--port (BADGEPIPE_SINK_PORT) must be within 0...65535"), "\(portErrors)")
    }
}

/// A worker still waiting for its broker stops at once, cleanly, on SIGTERM (a fleet told to stop before the broker
/// came up must not hang until killed).
@Suite("Shutdown while waiting")
struct ShutdownWhileWaitingTests {
    @Test func aWorkerWaitingForTheBrokerExitsOnSIGTERM() async throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("wait-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: database) }
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments = [
            "worker", "--amqp-url", "amqp://guest:guest@127.0.0.1:1/%2F", "--database-url", "sqlite:\(database.path)",
            "--apns-url", "http://127.0.0.1:1", "--fcm-url", "http://127.0.0.1:1",
        ]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("wait-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        // Waiting for the broker: it said so, and it is still there.
        try await eventually("the worker waits for the broker", timeout: .seconds(20)) {
            (try? String(contentsOf: log, encoding: .utf8))?.contains("waiting for the broker, retrying") ?? false
        }
        #expect(process.isRunning, "still waiting for the broker")
        process.terminate()
        let exited: Bool
        do {
            try await eventually("the worker stopped after SIGTERM", timeout: .seconds(10), every: .milliseconds(50)) {
                !process.isRunning || FleetHarness.hasExited(process.processIdentifier)
            }
            exited = true
        } catch {
            exited = false
        }
        if !exited { kill(process.processIdentifier, SIGKILL) }
        #expect(exited, "the worker did not stop within 10 s of SIGTERM")
        if exited, !process.isRunning { #expect(process.terminationStatus == 0) }
    }
}

/// A worker or `setup` told fewer partitions than the broker has refuses to run: events hashed to the extra
/// queues would wait there, consumed by nobody.
@Suite("Partition count against the broker")
struct PartitionCountTests {
    /// Runs `badgepipe arguments` against the test broker, waiting at most 30 s; returns its status and errors.
    private func run(_ arguments: [String]) async throws -> (Int32, String) {
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        environment["BADGEPIPE_AMQP_URL"] = FleetHarness.amqpURL
        process.environment = environment
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("partitions-\(UUID()).txt")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        process.standardError = try FileHandle(forWritingTo: errors)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while process.isRunning, !FleetHarness.hasExited(process.processIdentifier), clock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning, !FleetHarness.hasExited(process.processIdentifier) {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOf: errors, encoding: .utf8)) ?? "")
    }

    /// Runs a worker told `partitions` partitions in `namespace`, on a throwaway SQLite database and unreachable
    /// providers; returns its exit status and standard error.
    private func runWorker(partitions: Int, namespace: String) async throws -> (Int32, String) {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace).sqlite")
        defer { try? FileManager.default.removeItem(at: database) }
        return try await run([
            "worker", "--partitions", "\(partitions)", "--namespace", namespace, "--database-url",
            "sqlite:\(database.path)", "--apns-url", "http://127.0.0.1:1", "--fcm-url", "http://127.0.0.1:1",
        ])
    }

    @Test func aWorkerOrSetupWithFewerPartitionsThanTheBrokerRefusesToRun() async throws {
        let namespace = "parts-\(UInt16.random(in: 0...UInt16.max))"
        #expect(try await run(["setup", "--partitions", "3", "--namespace", namespace]).0 == 0)
        let (workerStatus, workerErrors) = try await runWorker(partitions: 2, namespace: namespace)
        #expect(workerStatus != 0)
        #expect(workerErrors.contains("the queue \(namespace).events.2 exists"), "\(workerErrors)")
        let (setupStatus, setupErrors) = try await run(["setup", "--partitions", "2", "--namespace", namespace])
        #expect(setupStatus != 0)
        #expect(setupErrors.contains("more_partitions_declared"), "\(setupErrors)")
        // The deployment's own count is fine.
        #expect(try await run(["setup", "--partitions", "3", "--namespace", namespace]).0 == 0)
        try await FleetHarness.cleanUp(namespace: namespace)
    }

    @Test func aWorkerOrSetupWithMorePartitionsThanTheBrokerRefusesToRunAndAddsNoQueue() async throws {
        let namespace = "parts-\(UInt16.random(in: 0...UInt16.max))"
        #expect(try await run(["setup", "--partitions", "2", "--namespace", namespace]).0 == 0)
        let (workerStatus, workerErrors) = try await runWorker(partitions: 3, namespace: namespace)
        #expect(workerStatus != 0)
        #expect(workerErrors.contains("fewer_partitions_declared"), "\(workerErrors)")
        #expect(workerErrors.contains("\(namespace).events.2 does not"), "\(workerErrors)")
        let (setupStatus, setupErrors) = try await run(["setup", "--partitions", "4", "--namespace", namespace])
        #expect(setupStatus != 0)
        #expect(setupErrors.contains("fewer_partitions_declared"), "\(setupErrors)")
        // Nothing was added: the deployment still has its 2 partitions, and its own count is fine.
        #expect(try await run(["setup", "--partitions", "2", "--namespace", namespace]).0 == 0)
        // A fresh namespace takes any count.
        let fresh = "\(namespace)-new"
        #expect(try await run(["setup", "--partitions", "4", "--namespace", fresh]).0 == 0)
        try await FleetHarness.cleanUp(namespace: namespace)
        try await FleetHarness.cleanUp(namespace: fresh)
    }
}

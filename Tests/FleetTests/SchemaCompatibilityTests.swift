import Foundation
import TestServices
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A `badgepipe worker` process and a schema a newer badgepipe moved on (written into `schema_migrations` from
/// outside, as that badgepipe would): a version that still serves it (an additive one) lets it run and start, one
/// that does not stops it while it runs, with the reason in its log and a failing exit status, and refuses its
/// next start.
@Suite("Schema compatibility of a worker process", .serialized, .timeLimit(.minutes(3)))
struct SchemaCompatibilityTests {
    /// Runs `statement` on the SQLite database at `path` with the `sqlite3` shell (waiting out the worker's locks)
    /// and returns what it printed.
    private func sqlite(_ path: String, _ statement: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", "-cmd", ".timeout 10000", path, statement]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FleetError("sqlite3 failed: \(statement)") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aWorkerRunsOnASchemaThatStillServesItAndStopsOnceItDoesNot() async throws {
        let namespace = "schema-\(UInt16.random(in: 0...UInt16.max))"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(namespace)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("badgepipe.sqlite").path
        let log = directory.appendingPathComponent("worker.log")
        // Nothing listens there: pushes wait for their retries, which this test does not need.
        let provider = "http://127.0.0.1:\(try freeListenPort())"

        func logText() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        /// Starts a worker that checks the schema every second, its output appended to `log`.
        func start(metricsPort: Int) throws -> Process {
            let process = Process()
            process.executableURL = WorkerProcess.executable
            process.arguments = [
                "worker", "--amqp-url", FleetHarness.amqpURL, "--database-url", "sqlite:\(database)", "--apns-url",
                provider, "--fcm-url", provider, "--namespace", namespace, "--partitions", "2", "--metrics-port",
                "\(metricsPort)",
            ]
            process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
                .merging(["BADGEPIPE_SCHEMA_CHECK_INTERVAL": "1"]) { $1 }
            if !FileManager.default.fileExists(atPath: log.path) {
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            }
            let handle = try FileHandle(forWritingTo: log)
            handle.seekToEndOfFile()
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            return process
        }
        func waitUntilReady(_ process: Process, metricsPort: Int) async throws {
            // Ready, or exited: nothing to wait for any more.
            let ready = try? await eventuallyValue("the worker ready or exited") {
                if await httpStatus("http://127.0.0.1:\(metricsPort)/readyz") == 200 { return true }
                return FleetHarness.hasExited(process.processIdentifier) ? false : nil
            }
            guard ready == true else { throw FleetError("the worker did not become ready: \(logText())") }
        }
        /// Waits up to `timeout` for `process` to exit; its exit status, or nil while it still runs.
        func exitStatus(_ process: Process, within timeout: Duration) async throws -> Int32? {
            // Still running after `timeout` is an answer too.
            try? await eventually("the worker exited", timeout: timeout, every: .milliseconds(50)) {
                FleetHarness.hasExited(process.processIdentifier)
            }
            guard FleetHarness.hasExited(process.processIdentifier) else { return nil }
            process.waitUntilExit()
            return process.terminationStatus
        }
        func stop(_ process: Process) async throws {
            guard !FleetHarness.hasExited(process.processIdentifier) else { return }
            process.terminate()
            if try await exitStatus(process, within: .seconds(20)) == nil {
                kill(process.processIdentifier, SIGKILL)
                _ = try await exitStatus(process, within: .seconds(5))
            }
        }

        // 1. A worker on a database of its own version.
        var port = try freeListenPort()
        let first = try start(metricsPort: port)
        try await waitUntilReady(first, metricsPort: port)
        let latest = try #require(Int64(try sqlite(database, "SELECT max(version) FROM schema_migrations")))
        let requirement = try #require(Int64(try sqlite(database, "SELECT max(serves_from) FROM schema_migrations")))
        #expect(requirement <= latest)

        // 2. A newer badgepipe's additive version (it keeps the requirement): the worker runs on.
        _ = try sqlite(
            database,
            "INSERT INTO schema_migrations (version, applied_at, serves_from) VALUES (\(latest + 1), 0, \(requirement))"
        )
        #expect(try await exitStatus(first, within: .seconds(4)) == nil, "still running: \(logText())")
        #expect(await httpStatus("http://127.0.0.1:\(port)/readyz") == 200)

        // 3. A version that does not serve it: the running worker stops within a check or two, saying why.
        _ = try sqlite(
            database,
            "INSERT INTO schema_migrations (version, applied_at, serves_from) VALUES (\(latest + 2), 0, \(latest + 2))")
        let reason =
            "the database schema is at version \(latest + 2) and serves badgepipe from schema version \(latest + 2); "
            + "this badgepipe knows up to \(latest): upgrade badgepipe"
        let stopped = try await exitStatus(first, within: .seconds(30))
        if stopped == nil { try await stop(first) }
        #expect(stopped != nil && stopped != 0, "exit status \(String(describing: stopped))")
        #expect(logText().contains("the database schema moved past this badgepipe"), "\(logText())")
        #expect(logText().contains(reason), "\(logText())")

        // 4. Its next start is refused, with the same reason.
        let before = logText().count
        port = try freeListenPort()
        let second = try start(metricsPort: port)
        let refused = try await exitStatus(second, within: .seconds(30))
        if refused == nil { try await stop(second) }
        #expect(refused != nil && refused != 0, "exit status \(String(describing: refused))")
        #expect(String(logText().dropFirst(before)).contains(reason), "\(logText())")

        // 5. Without that version, a worker starts on the newer schema that still serves it, and works: a device
        // registration is stored.
        _ = try sqlite(database, "DELETE FROM schema_migrations WHERE version = \(latest + 2)")
        port = try freeListenPort()
        let third = try start(metricsPort: port)
        defer { if !FleetHarness.hasExited(third.processIdentifier) { kill(third.processIdentifier, SIGKILL) } }
        try await waitUntilReady(third, metricsPort: port)
        let published = try runBadgepipe([
            "publish", "--amqp-url", FleetHarness.amqpURL, "--namespace", namespace, "--type", "device_registered",
            "--recipient", "u-schema", "--token", String(repeating: "ab", count: 32), "--provider", "apns",
        ])
        #expect(published.status == 0, "\(published.errors)")
        var devices = ""
        try? await eventually("the device registered", timeout: .seconds(10)) {
            devices = try sqlite(database, "SELECT count(*) FROM devices WHERE user_id = 'u-schema'")
            return devices == "1"
        }
        #expect(devices == "1")
        try await stop(third)
        #expect(third.terminationStatus == 0)
        try await FleetHarness.cleanUp(namespace: namespace)
    }
}

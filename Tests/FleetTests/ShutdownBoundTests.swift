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
#if canImport(Glibc)
    import Glibc
#endif

/// A provider that accepts connections and never answers: the kernel completes the handshakes on a listening socket
/// nobody accepts from, so every request waits for the worker's request timeout.
final class SilentProvider {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FleetError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 1024) == 0 else {
            close(fd)
            throw FleetError("bind/listen failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}

/// SIGTERM finishes the work in progress within `--shutdown-timeout`, even while the provider hangs, and past the
/// bound cancels it, losing nothing.
@Suite("Shutdown bound", .serialized, .timeLimit(.minutes(5)))
struct ShutdownBoundTests {
    private func worker(
        database: String, namespace: String, provider: String, metricsPort: Int, extra: [String] = []
    ) async throws -> Process {
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments =
            [
                "worker", "--amqp-url", FleetHarness.amqpURL, "--database-url", "sqlite:\(database)", "--apns-url",
                provider, "--fcm-url", provider, "--namespace", namespace, "--partitions", "2", "--metrics-port",
                "\(metricsPort)",
            ] + extra
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        do {
            try await eventually("the worker ready") {
                await httpStatus("http://127.0.0.1:\(metricsPort)/readyz") == 200
            }
            return process
        } catch {
            process.terminate()
            throw error
        }
    }

    @Test func sigtermWhileTheProviderHangsStopsWithinTheBoundAndLosesNothing() async throws {
        let suffix = UInt16.random(in: 0...UInt16.max)
        let namespace = "bound-\(suffix)"
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: database) }
        let silent = try SilentProvider()
        let script = FleetScript(seed: 31, users: 10, events: 400, userPrefix: "bound")
        let bound = 2

        // 1. The provider hangs: events are all written (ingestion never waits for it), pushes wait on it.
        let first = try await worker(
            database: database, namespace: namespace, provider: "http://127.0.0.1:\(silent.port)",
            metricsPort: try freeListenPort(),
            extra: ["--shutdown-timeout", "\(bound)", "--provider-timeout", "30000"])
        _ = try await FleetPublisher(url: FleetHarness.amqpURL, exchange: "\(namespace).events", rate: 4000)
            .publish(script.steps)
        try? await eventually("every event taken from the queues", timeout: .seconds(60)) {
            try await FleetHarness.messagesInQueues(namespace: namespace) == 0
        }
        #expect(try await FleetHarness.messagesInQueues(namespace: namespace) == 0)
        try await Task.sleep(for: .seconds(1))

        // 2. SIGTERM: the delivery round in progress waits on the provider (30 s per request here); the bound
        // cancels it after 2 s.
        let clock = ContinuousClock()
        let signalled = clock.now
        first.terminate()
        while first.isRunning, !FleetHarness.hasExited(first.processIdentifier), clock.now - signalled < .seconds(30) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let stoppedAfter = clock.now - signalled
        let exited = !first.isRunning || FleetHarness.hasExited(first.processIdentifier)
        if !exited { kill(first.processIdentifier, SIGKILL) }
        #expect(exited && stoppedAfter < .seconds(10), "stopped after \(stoppedAfter)")
        first.waitUntilExit()
        #expect(first.terminationStatus == 0)

        // 3. Nothing was lost: a worker on the same database, with a provider that answers, sends every alert once
        // with the right final badges.
        try await TestSink.withSink(seed: 31, logLevel: .error) { sink in
            let second = try await worker(
                database: database, namespace: namespace, provider: sink.baseURL,
                metricsPort: try freeListenPort())
            defer {
                second.terminate()
                second.waitUntilExit()
            }
            try await FleetHarness.waitUntilQuiet(timeout: .seconds(120), what: "the second worker") {
                try await FleetHarness.messagesInQueues(namespace: namespace)
            } received: {
                sink.state.count
            }
            let report = FleetReport.check(steps: script.steps, deliveries: sink.state.receivedPushes())
            #expect(report.lostEffects.isEmpty, "lost: \(report.lostEffects.prefix(10))")
            #expect(report.badgeMismatches.isEmpty, "badges: \(report.badgeMismatches.prefix(10))")
            #expect(report.duplicateAlerts == 0)
            #expect(report.effectsChecked > 100)
        }
        try await FleetHarness.cleanUp(namespace: namespace)
    }
}

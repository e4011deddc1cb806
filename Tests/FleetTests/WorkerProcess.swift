import Foundation
import TestServices

#if canImport(Glibc)
    import Glibc
#endif

/// One `badgepipe worker` process of a fleet test (or, with another ``command``, another long-running
/// `badgepipe` process: `api`).
final class WorkerProcess: @unchecked Sendable {
    let name: String
    /// The `badgepipe` subcommand and its arguments (`worker`).
    private let command: [String]
    private let environment: [String: String]
    /// A command the worker is started through (e.g. ``FakeClock/wrapper(_:building:)``), which forks it and waits;
    /// empty: the worker is started directly. Signals go to the worker itself, never to the wrapper.
    private let wrapper: [String]
    private let logDirectory: URL
    private var process: Process?
    private var incarnation = 0
    private let lock = NSLock()
    private var supervising = true
    /// The test is restarting the worker itself (``restartGracefully(timeout:)``): the supervisor leaves it alone.
    private var restarting = false
    /// Worker exits seen by the supervisor (crash-only restarts), not counting kills by the test.
    private(set) var restarts = 0

    /// Restarts the worker if it exited on its own.
    func superviseOnce() throws {
        lock.lock()
        let exited = supervising && !restarting && process != nil && process?.isRunning == false
        if exited { restarts += 1 }
        lock.unlock()
        if exited { try start() }
    }

    init(
        name: String, environment: [String: String], logDirectory: URL, wrapper: [String] = [],
        command: [String] = ["worker"]
    ) {
        self.name = name
        self.command = command
        self.environment = environment
        self.logDirectory = logDirectory
        self.wrapper = wrapper
    }

    /// The `badgepipe` executable next to the test bundle (or `BADGEPIPE_BIN`).
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["BADGEPIPE_BIN"] { return URL(fileURLWithPath: path) }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidate = bundle.appendingPathComponent("badgepipe")
        if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/badgepipe")
    }

    var logFile: URL { logDirectory.appendingPathComponent("\(name).log") }

    /// Starts a new incarnation (a fresh worker id, so a restarted worker never shares one with its dead self),
    /// unless the current one is still running. This is the supervisor: a worker that exits is started again.
    func start() throws {
        lock.lock()
        defer { lock.unlock() }
        if supervising == false, process != nil { return }
        if process?.isRunning == true { return }
        incarnation += 1
        let process = Process()
        if wrapper.isEmpty {
            process.executableURL = Self.executable
            process.arguments = command
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = wrapper + [Self.executable.path] + command
        }
        var environment = ProcessInfo.processInfo.environment.merging(self.environment) { $1 }
        environment["BADGEPIPE_WORKER_ID"] = "\(name)-\(incarnation)"
        process.environment = environment
        if !FileManager.default.fileExists(atPath: logFile.path) {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: logFile)
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        self.process = process
    }

    /// The worker's own process id (with a wrapper, the wrapper's child), while it runs.
    var pid: Int32? {
        lock.lock()
        let process = self.process
        lock.unlock()
        guard let process, process.isRunning else { return nil }
        return workerPID(process)
    }

    /// The worker's process id in `process`: the process itself, or the child its wrapper started (the wrapper's
    /// own id for the moment before it forks).
    private func workerPID(_ process: Process) -> Int32 {
        let pid = process.processIdentifier
        guard !wrapper.isEmpty,
            let children = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8),
            let child = children.split(separator: " ").first.flatMap({ Int32($0) })
        else { return pid }
        return child
    }

    /// Sends a signal to the current incarnation.
    func signal(_ signal: Int32) {
        if let pid { kill(pid, signal) }
    }

    /// SIGKILL, wait for the process to be gone, and start a new incarnation: the test's kill, which the supervisor
    /// leaves alone meanwhile (were it to see the exit first, it would count it as the worker's own and restart it
    /// itself).
    func killHardAndRestart() throws {
        let process = setRestarting(true)
        defer { _ = setRestarting(false) }
        if let process, process.isRunning {
            kill(workerPID(process), SIGKILL)
            // Poll rather than waitUntilExit (see FleetHarness.shell); a SIGKILLed process is gone in milliseconds.
            for _ in 0..<200 where process.isRunning && !FleetHarness.hasExited(process.processIdentifier) {
                usleep(10_000)
            }
            // A zombie Foundation has not reaped yet still reads as running: `start` must not take it for alive.
            forget(process)
        }
        try start()
    }

    /// SIGTERM (graceful) and wait, up to `timeout` before a SIGKILL.
    func stop(timeout: TimeInterval = 20) {
        lock.lock()
        supervising = false
        let process = self.process
        lock.unlock()
        guard let process, process.isRunning else { return }
        let worker = workerPID(process)
        kill(worker, SIGCONT)
        kill(worker, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning {
            kill(worker, SIGKILL)
            kill(process.processIdentifier, SIGKILL)
            for _ in 0..<200 where process.isRunning { usleep(10_000) }
        }
    }

    /// SIGTERM (graceful: the worker finishes its batch and round and records what it sent), waits up to `timeout`
    /// for the exit (then SIGKILL), starts a new incarnation and waits until it is ready. The supervisor neither
    /// counts nor races it.
    func restartGracefully(timeout: Duration = .seconds(20), waitForReady: Bool = true) async throws {
        let process = setRestarting(true)
        defer { _ = setRestarting(false) }
        if let process, process.isRunning {
            let pid = process.processIdentifier
            let worker = workerPID(process)
            kill(worker, SIGTERM)
            // Polled (see `FleetHarness.shell`): Foundation sometimes misses a child's exit. Still running after
            // `timeout`: killed below.
            try? await eventually("the worker stopped", timeout: timeout, every: .milliseconds(50)) {
                !process.isRunning || FleetHarness.hasExited(pid)
            }
            if process.isRunning, !FleetHarness.hasExited(pid) {
                kill(worker, SIGKILL)
                kill(pid, SIGKILL)
                for _ in 0..<200 where process.isRunning && !FleetHarness.hasExited(pid) { usleep(10_000) }
            }
            // A zombie Foundation has not reaped yet still reads as running: `start` must not take it for alive.
            forget(process)
        }
        try start()
        if waitForReady { try await waitUntilReady() }
    }

    /// Sets whether the test is restarting the worker; returns the current incarnation.
    private func setRestarting(_ value: Bool) -> Process? {
        lock.lock()
        defer { lock.unlock() }
        restarting = value
        return process
    }

    /// Forgets `stopped` when it is still the current incarnation.
    private func forget(_ stopped: Process) {
        lock.lock()
        defer { lock.unlock() }
        if process === stopped { process = nil }
    }

    /// How far ahead of this process's wall clock the current incarnation's clock was when it became ready, in
    /// seconds: the time on its "worker ready" log line less now (a few tenths of a second low, the time the line
    /// took to be found); nil before it is ready.
    func loggedClockOffset() -> Double? {
        let marker = "worker.id=\(name)-\(incarnation)"
        guard let text = try? String(contentsOf: logFile, encoding: .utf8),
            let line = text.split(separator: "\n").last(where: { $0.contains("worker ready") && $0.contains(marker) }),
            let stamp = line.split(separator: " ").first
        else { return nil }
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        return format.date(from: String(stamp)).map { $0.timeIntervalSinceNow }
    }

    /// Waits until the current incarnation logged "worker ready".
    func waitUntilReady(timeout: Duration = .seconds(60)) async throws {
        // A fleet worker names its incarnation; a single node (SQLite) calls itself `single`.
        let markers = ["worker.id=\(name)-\(incarnation)", "worker.id=single"]
        try await eventually("worker \(name) ready (log: \(logFile.path))", timeout: timeout) {
            let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").contains { line in
                line.contains("worker ready") && markers.contains { line.contains($0) }
            }
        }
    }
}

/// A fleet test setup failure.
struct FleetError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension WorkerProcess {
    /// The current incarnation's peak resident memory so far, in MB (the kernel's high-water mark, `VmHWM`).
    var peakResidentMegabytes: Int? {
        guard let pid, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            return nil
        }
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kilobytes / 1024
    }
}

/// Runs `badgepipe arguments` to its end, with this process's environment less its `BADGEPIPE_` variables and with
/// `environment` added; returns its exit status, standard output and standard error.
func runBadgepipe(
    _ arguments: [String], environment: [String: String] = [:]
) throws -> (status: Int32, output: String, errors: String) {
    let process = Process()
    process.executableURL = WorkerProcess.executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        .merging(environment) { $1 }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    // Read one after the other: fine while each output stays within a pipe's buffer (a few lines for the commands
    // the tests run this way).
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: outputData, as: UTF8.self),
        String(decoding: errorData, as: UTF8.self)
    )
}

/// Runs `badgepipe arguments` like ``runBadgepipe(_:environment:)`` without blocking a thread of the cooperative
/// pool while it runs (its output goes to files, read when it has ended): for commands that run for seconds beside
/// a fleet.
func runBadgepipeInBackground(
    _ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(180)
) async throws -> (status: Int32, output: String, errors: String) {
    let directory = FileManager.default.temporaryDirectory
    let outputFile = directory.appendingPathComponent("badgepipe-\(UUID().uuidString).out")
    let errorsFile = directory.appendingPathComponent("badgepipe-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errorsFile.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: outputFile)
        try? FileManager.default.removeItem(at: errorsFile)
    }
    let process = Process()
    process.executableURL = WorkerProcess.executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        .merging(environment) { $1 }
    process.standardOutput = try FileHandle(forWritingTo: outputFile)
    process.standardError = try FileHandle(forWritingTo: errorsFile)
    try process.run()
    do {
        try await eventually("badgepipe \(arguments) ended", timeout: timeout) {
            !process.isRunning || FleetHarness.hasExited(process.processIdentifier)
        }
    } catch {
        process.terminate()
        throw error
    }
    process.waitUntilExit()
    return (
        process.terminationStatus, (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "",
        (try? String(contentsOf: errorsFile, encoding: .utf8)) ?? ""
    )
}

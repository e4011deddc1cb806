import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One `badgepipe worker` process of a fleet test.
final class WorkerProcess: @unchecked Sendable {
    let name: String
    private let environment: [String: String]
    private let logDirectory: URL
    private var process: Process?
    private var incarnation = 0
    private let lock = NSLock()
    private var supervising = true
    /// Worker exits seen by the supervisor (crash-only restarts), not counting kills by the test.
    private(set) var restarts = 0

    /// Restarts the worker if it exited on its own.
    func superviseOnce() throws {
        lock.lock()
        let exited = supervising && process != nil && process?.isRunning == false
        if exited { restarts += 1 }
        lock.unlock()
        if exited { try start() }
    }

    init(name: String, environment: [String: String], logDirectory: URL) {
        self.name = name
        self.environment = environment
        self.logDirectory = logDirectory
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
        process.executableURL = Self.executable
        process.arguments = ["worker"]
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

    var pid: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return process?.isRunning == true ? process?.processIdentifier : nil
    }

    /// Sends a signal to the current incarnation.
    func signal(_ signal: Int32) {
        if let pid { kill(pid, signal) }
    }

    /// SIGKILL and wait for the process to be gone.
    func killHard() {
        lock.lock()
        let process = self.process
        lock.unlock()
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        // Poll rather than waitUntilExit (see FleetHarness.shell); a SIGKILLed process is gone in milliseconds.
        for _ in 0..<200 where process.isRunning { usleep(10_000) }
    }

    /// SIGTERM (graceful) and wait, up to `timeout` before a SIGKILL.
    func stop(timeout: TimeInterval = 20) {
        lock.lock()
        supervising = false
        let process = self.process
        lock.unlock()
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGCONT)
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            for _ in 0..<200 where process.isRunning { usleep(10_000) }
        }
    }

    /// Waits until the current incarnation logged "worker ready".
    func waitUntilReady(timeout: TimeInterval = 60) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        // A fleet worker names its incarnation; a single node (SQLite) calls itself `single`.
        let markers = ["worker.id=\(name)-\(incarnation)", "worker.id=single"]
        while Date() < deadline {
            if let text = try? String(contentsOf: logFile, encoding: .utf8),
                text.split(separator: "\n").contains(where: { line in
                    line.contains("worker ready") && markers.contains { line.contains($0) }
                })
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw FleetError("worker \(name) did not become ready; log: \(logFile.path)")
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

import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The only way into a connection's thread: commands are queued under a lock and the thread is woken
/// through a pipe that it polls together with the broker's socket.
final class Mailbox: Sendable {
    private struct State {
        var commands: [Command] = []
        var wakePending = false
        var finished: AMQPError?
    }

    private let state = Mutex(State())
    /// Read end, polled by the connection thread.
    let wakeReadFD: Int32
    private let wakeWriteFD: Int32

    init() throws(AMQPError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw AMQPError(.library, "pipe() failed: errno \(errno)") }
        for fd in fds {
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeReadFD = fds[0]
        wakeWriteFD = fds[1]
    }

    deinit {
        close(wakeReadFD)
        close(wakeWriteFD)
    }

    /// Queues a command; when the connection has ended the command fails at once with the reason.
    func submit(_ command: Command) {
        enum Decision {
            case wake
            case queued
            case rejected(AMQPError)
        }
        let decision = state.withLock { state -> Decision in
            if let finished = state.finished { return .rejected(finished) }
            state.commands.append(command)
            if state.wakePending { return .queued }
            state.wakePending = true
            return .wake
        }
        switch decision {
        case .wake:
            var byte: UInt8 = 1
            _ = write(wakeWriteFD, &byte, 1)
        case .queued:
            break
        case .rejected(let error):
            command.fail(error)
        }
    }

    /// Takes every queued command (thread side).
    func takeAll() -> [Command] {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeReadFD, &buffer, buffer.count) > 0 {}
        return state.withLock { state in
            state.wakePending = false
            let commands = state.commands
            state.commands.removeAll(keepingCapacity: true)
            return commands
        }
    }

    /// Marks the connection ended; later submissions fail with `error`. Returns what was still queued.
    func finish(_ error: AMQPError) -> [Command] {
        state.withLock { state in
            state.finished = error
            let commands = state.commands
            state.commands = []
            return commands
        }
    }

    /// The reason the connection ended, if it has.
    var finishedError: AMQPError? { state.withLock { $0.finished } }
}

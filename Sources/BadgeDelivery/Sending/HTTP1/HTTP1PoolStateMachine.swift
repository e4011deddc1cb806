import NIOCore

/// The connections of one ``HTTP1PushClient`` and the requests waiting for one, as a value: events in, actions out.
///
/// Each connection carries one request at a time (no pipelining), so a request either takes an idle connection at
/// once, or waits in line (first come, first served) while a new connection opens, up to `maxConnections` of them
/// open or opening, and never more opening than requests waiting. At most `maxWaiting` requests wait; one more is
/// refused with ``HTTP1PushError/Code/tooManyWaiting``. When a connection cannot be opened and no other connection is
/// open or opening, every waiting request fails with the reason: the host is down, and a push's retry is the
/// outbox's business, not the pool's. The idle connection used last is used next (its socket is warm; the others
/// may be closed by the server when idle long enough).
struct HTTP1PoolStateMachine {
    /// A connection's number, unique within the pool.
    typealias ConnectionID = Int
    /// A request's number, given by the client.
    typealias RequestID = Int

    /// What the client does after an event.
    enum Action: Equatable {
        /// Nothing now.
        case none
        /// Open connection `ConnectionID`; report ``connected(_:)`` or ``connectFailed(_:reason:)``.
        case connect(ConnectionID)
        /// Send the request on the connection; report ``finished(_:reusable:)`` when its answer is in (or it failed).
        case run(RequestID, on: ConnectionID)
        /// Fail these requests with this error (none of them was written).
        case fail([RequestID], HTTP1PushError)
        /// Close these connections.
        case close([ConnectionID])
        /// Shutting down: fail the waiting requests and close the connections.
        case shutDown(failing: [RequestID], closing: [ConnectionID])
    }

    /// The most connections open or opening at once.
    let maxConnections: Int
    /// The most requests waiting for a connection at once.
    let maxWaiting: Int

    private var idle: [ConnectionID] = []
    private var busy: Set<ConnectionID> = []
    private var opening: Set<ConnectionID> = []
    private var waiting = CircularBuffer<RequestID>()
    private var nextConnectionID: ConnectionID = 0
    private var isShutDown = false

    init(maxConnections: Int, maxWaiting: Int) {
        self.maxConnections = max(1, maxConnections)
        self.maxWaiting = max(1, maxWaiting)
    }

    /// The connections open or opening.
    var connectionCount: Int { idle.count + busy.count + opening.count }
    /// The requests waiting for a connection.
    var waitingCount: Int { waiting.count }

    /// A request to send.
    mutating func request(_ id: RequestID) -> Action {
        if isShutDown { return .fail([id], HTTP1PushError(code: .shutDown, message: "the HTTP client is shut down")) }
        if let connection = idle.popLast() {
            busy.insert(connection)
            return .run(id, on: connection)
        }
        guard waiting.count < maxWaiting else {
            return .fail(
                [id],
                HTTP1PushError(
                    code: .tooManyWaiting, message: "\(maxWaiting) requests already wait for a connection"))
        }
        waiting.append(id)
        return openIfNeeded()
    }

    /// A connection opened.
    mutating func connected(_ connection: ConnectionID) -> Action {
        guard opening.remove(connection) != nil else { return .close([connection]) }
        if isShutDown { return .close([connection]) }
        return take(connection)
    }

    /// A connection could not be opened.
    mutating func connectFailed(_ connection: ConnectionID, reason: String) -> Action {
        guard opening.remove(connection) != nil, !isShutDown else { return .none }
        guard busy.isEmpty, opening.isEmpty, !waiting.isEmpty else { return .none }
        let failed = Array(waiting)
        waiting.removeAll()
        return .fail(failed, HTTP1PushError(code: .connectFailed, message: reason))
    }

    /// The request on `connection` is over: answered, failed or vetoed. A connection that is not `reusable` (the
    /// server closes it, or the exchange broke) is being closed; ``closed(_:)`` may still follow and is then a no-op.
    mutating func finished(_ connection: ConnectionID, reusable: Bool) -> Action {
        guard busy.remove(connection) != nil else { return .none }
        if isShutDown { return .close([connection]) }
        if reusable { return take(connection) }
        return openIfNeeded()
    }

    /// A connection closed (the server closed an idle one, or it broke).
    mutating func closed(_ connection: ConnectionID) -> Action {
        if let index = idle.firstIndex(of: connection) {
            idle.remove(at: index)
        } else if busy.remove(connection) == nil {
            return .none
        }
        return isShutDown ? .none : openIfNeeded()
    }

    /// The caller of a waiting request gave up on it (its task was cancelled). A request already running is the
    /// client's to abandon: it closes the request's connection, and ``finished(_:reusable:)`` follows.
    mutating func cancel(_ id: RequestID) -> Action {
        guard let index = waiting.firstIndex(of: id) else { return .none }
        waiting.remove(at: index)
        return .fail([id], HTTP1PushError(code: .cancelled, message: "the request was cancelled"))
    }

    /// The client shuts down: no request is taken any more.
    mutating func shutDown() -> Action {
        guard !isShutDown else { return .none }
        isShutDown = true
        let failing = Array(waiting)
        waiting.removeAll()
        let closing = idle + busy.sorted()
        idle.removeAll()
        busy.removeAll()
        return .shutDown(failing: failing, closing: closing)
    }

    /// Gives `connection` (open and free) the next waiting request, or keeps it idle.
    private mutating func take(_ connection: ConnectionID) -> Action {
        if let next = waiting.popFirst() {
            busy.insert(connection)
            return .run(next, on: connection)
        }
        idle.append(connection)
        return .none
    }

    /// Opens a connection when requests wait that the connections opening will not serve, and the bound allows.
    private mutating func openIfNeeded() -> Action {
        guard opening.count < waiting.count, connectionCount < maxConnections else { return .none }
        let connection = nextConnectionID
        nextConnectionID += 1
        opening.insert(connection)
        return .connect(connection)
    }
}

import BadgeSupport
import BadgeWire
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Sends pushes to one `http://` host over HTTP/1.1: a local sink or a stand-in for APNs or FCM.
///
/// async-http-client, which carries every `https://` push (HTTP/2 to APNs), writes a request's head and its body in
/// two writes (a windowed body is pulled by a task of its own once the head is out), and its request machinery costs
/// more than the push itself against a local sink. This client writes each request whole, head and body in one
/// write, with the send window read on the connection's event loop right before it; it keeps up to
/// `maxConnections` connections, each carrying one request at a time, and up to `maxWaiting` requests waiting for
/// one (``HTTP1PoolStateMachine`` decides; this class carries its actions out).
final class HTTP1PushClient: Sendable {
    /// Where requests go: `http://host:port` and the path every target starts with.
    struct Endpoint: Hashable, Sendable {
        var host: String
        var port: Int
        /// The base URL's path, without a trailing slash ("" for none).
        var pathPrefix: String

        /// The endpoint of an `http://` base URL; nil for any other scheme or a URL it cannot read.
        init?(baseURL: String) {
            guard baseURL.lowercased().hasPrefix("http://") else { return nil }
            var rest = baseURL.dropFirst("http://".count)
            let authority = rest.prefix(while: { $0 != "/" })
            rest = rest.dropFirst(authority.count)
            var path = String(rest)
            while path.hasSuffix("/") { path.removeLast() }
            let hostPart: Substring
            var port = 80
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { return nil }
                hostPart = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":"), let value = Int(after.dropFirst()) else { return nil }
                    port = value
                }
            } else if let colon = authority.lastIndex(of: ":") {
                hostPart = authority[..<colon]
                guard let value = Int(authority[authority.index(after: colon)...]) else { return nil }
                port = value
            } else {
                hostPart = authority
            }
            guard !hostPart.isEmpty, (1...65535).contains(port), !hostPart.contains("@") else { return nil }
            host = String(hostPart)
            self.port = port
            pathPrefix = path
        }

        /// The host as a socket address when it is an IP address literal (`127.0.0.1`, `::1`); nil for a name.
        var address: SocketAddress? { try? SocketAddress(ipAddress: host, port: port) }

        /// The `host` header's value.
        var hostHeader: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return port == 80 ? name : "\(name):\(port)"
        }
    }

    private struct State: ~Copyable {
        var machine: HTTP1PoolStateMachine
        var nextRequestID = 0
        var waiting: [HTTP1PoolStateMachine.RequestID: HTTP1PushJob] = [:]
        var channels: [HTTP1PoolStateMachine.ConnectionID: any Channel] = [:]
        /// The request each busy connection carries.
        var running: [HTTP1PoolStateMachine.ConnectionID: HTTP1PoolStateMachine.RequestID] = [:]
    }

    /// What an action comes to once its numbers are resolved (under the lock), carried out after it.
    private enum Effect {
        case none
        case connect(HTTP1PoolStateMachine.ConnectionID)
        case run(HTTP1PushJob, on: HTTP1PoolStateMachine.ConnectionID, (any Channel)?)
        case fail([HTTP1PushJob], HTTP1PushError, closing: [any Channel])
        case close([any Channel])
    }

    let endpoint: Endpoint
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    private let state: Mutex<State>

    /// A client for `endpoint`, on NIO's shared event loops.
    init(
        endpoint: Endpoint, maxConnections: Int, maxWaiting: Int = 4096, connectTimeout: TimeAmount = .seconds(5),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.endpoint = endpoint
        self.group = group
        self.connectTimeout = connectTimeout
        self.state = Mutex(
            State(machine: HTTP1PoolStateMachine(maxConnections: maxConnections, maxWaiting: maxWaiting)))
    }

    /// The request for `path` (appended to the endpoint's path) with `headers` and `body`; throws
    /// ``HTTP1PushError/Code/invalidRequest`` when the target or a header is not valid HTTP/1.1.
    func request(
        path: String, headers: [(String, String)], body: [UInt8], window: SendWindow?
    ) throws -> HTTP1PushRequest {
        let target = endpoint.pathPrefix + path
        guard target.utf8.first == UInt8(ascii: "/"), target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTP1PushError(code: .invalidRequest, message: "the request target \(target.debugDescription)")
        }
        var fields = HTTPHeaders()
        fields.reserveCapacity(headers.count + 2)
        fields.add(name: "host", value: endpoint.hostHeader)
        for (name, value) in headers {
            guard HTTP1Syntax.isToken(name) else {
                throw HTTP1PushError(code: .invalidRequest, message: "the header name \(name.debugDescription)")
            }
            guard HTTP1Syntax.isFieldValue(value) else {
                throw HTTP1PushError(
                    code: .invalidRequest, message: "the value of the header \(name): \(value.debugDescription)")
            }
            if Self.isFraming(name) { continue }
            fields.add(name: name, value: value)
        }
        fields.add(name: "content-length", value: String(body.count))
        return HTTP1PushRequest(target: target, headers: fields, body: body, window: window)
    }

    /// Whether `name` (lowercase, as a ``PushRequest``'s are) is one the client writes itself (`host`,
    /// `content-length`, `transfer-encoding`, `connection`): a push's own value for it is dropped.
    private static func isFraming(_ name: String) -> Bool {
        switch name {
        case "host", "content-length", "transfer-encoding", "connection": true
        default: false
        }
    }

    /// Sends `request` and returns the answer; throws ``HTTP1PushError``, or `CancellationError` when the task
    /// was cancelled: a request waiting for a connection leaves the line, and one in flight is abandoned with its
    /// connection (closed), as a shutdown's bound needs.
    func execute(_ request: HTTP1PushRequest, timeout: TimeAmount) async throws -> HTTP1PushResponse {
        let id = state.withLock { state in
            state.nextRequestID &+= 1
            return state.nextRequestID
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let job = HTTP1PushJob(request: request, timeout: timeout, continuation: continuation)
                    let effect = state.withLock { state in
                        state.waiting[id] = job
                        return Self.resolve(state.machine.request(id), in: &state)
                    }
                    carryOut(effect)
                }
            } onCancel: {
                carryOut(
                    state.withLock { state in
                        if let connection = state.running.first(where: { $0.value == id })?.key,
                            let channel = state.channels[connection]
                        {
                            // In flight: closing the connection fails it (the pool hears of it as usual).
                            return .close([channel])
                        }
                        return Self.resolve(state.machine.cancel(id), in: &state)
                    })
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
    }

    /// Closes every connection and fails the requests waiting for one.
    func shutdown() {
        carryOut(state.withLock { Self.resolve($0.machine.shutDown(), in: &$0) })
    }

    /// The open connections (for tests that look at their sockets).
    var openChannels: [any Channel] {
        state.withLock { Array($0.channels.values) }
    }

    /// The connections open or opening, and the requests waiting for one.
    var load: (connections: Int, waiting: Int) {
        state.withLock { ($0.machine.connectionCount, $0.machine.waitingCount) }
    }

    private static func resolve(_ action: HTTP1PoolStateMachine.Action, in state: inout State) -> Effect {
        switch action {
        case .none:
            return .none
        case .connect(let connection):
            return .connect(connection)
        case .run(let request, let connection):
            guard let job = state.waiting.removeValue(forKey: request) else {
                // Not waiting any more (it cannot have left the pool's line without the pool knowing, but if it
                // did): the connection is free again.
                return resolve(state.machine.finished(connection, reusable: true), in: &state)
            }
            state.running[connection] = request
            return .run(job, on: connection, state.channels[connection])
        case .fail(let requests, let error):
            return .fail(requests.compactMap { state.waiting.removeValue(forKey: $0) }, error, closing: [])
        case .close(let connections):
            return .close(connections.compactMap { state.channels.removeValue(forKey: $0) })
        case .shutDown(let failing, let closing):
            return .fail(
                failing.compactMap { state.waiting.removeValue(forKey: $0) },
                HTTP1PushError(code: .shutDown, message: "the HTTP client shut down"),
                closing: closing.compactMap { state.channels.removeValue(forKey: $0) })
        }
    }

    private func carryOut(_ effect: Effect) {
        switch effect {
        case .none:
            break
        case .connect(let connection):
            connect(connection)
        case .run(let job, let connection, let channel):
            guard let channel else {
                job.continuation.resume(
                    throwing: HTTP1PushError(code: .connectionClosed, message: "the connection closed"))
                finished(connection, reusable: false)
                return
            }
            // The handler takes the job (and answers it) unless the channel closed on the way: then nothing
            // reached it, and the write fails.
            let written = channel.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenFailure { [self] _ in
                job.continuation.resume(
                    throwing: HTTP1PushError(code: .connectionClosed, message: "the connection closed"))
                finished(connection, reusable: false)
            }
            channel.writeAndFlush(job, promise: written)
        case .fail(let jobs, let error, let channels):
            for job in jobs {
                job.continuation.resume(throwing: error.code == .cancelled ? CancellationError() : error)
            }
            for channel in channels { channel.close(promise: nil) }
        case .close(let channels):
            for channel in channels { channel.close(promise: nil) }
        }
    }

    private func connect(_ connection: HTTP1PoolStateMachine.ConnectionID) {
        // ClientBootstrap sets TCP_NODELAY itself. (`ChannelOptions.socketOption(.tcp_nodelay)` would not: it sets
        // option 1 at the socket level, SO_DEBUG, which a process without CAP_NET_ADMIN, as in a container, is
        // refused, so that no connection opens.)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
                    try channel.pipeline.syncOperations.addHandler(
                        HTTP1PushConnectionHandler { reusable in
                            self.finished(connection, reusable: reusable)
                        })
                }
            }
        let connecting =
            endpoint.address.map { bootstrap.connect(to: $0) }
            ?? bootstrap.connect(host: endpoint.host, port: endpoint.port)
        connecting.whenComplete { [self] result in
            switch result {
            case .success(let channel):
                let effect = state.withLock { state in
                    state.channels[connection] = channel
                    return Self.resolve(state.machine.connected(connection), in: &state)
                }
                channel.closeFuture.whenComplete { [self] _ in closed(connection) }
                carryOut(effect)
            case .failure(let error):
                let reason = "cannot connect to \(endpoint.hostHeader): \(error)"
                carryOut(state.withLock { Self.resolve($0.machine.connectFailed(connection, reason: reason), in: &$0) })
            }
        }
    }

    private func finished(_ connection: HTTP1PoolStateMachine.ConnectionID, reusable: Bool) {
        carryOut(
            state.withLock { state in
                state.running[connection] = nil
                if !reusable { state.channels[connection] = nil }
                return Self.resolve(state.machine.finished(connection, reusable: reusable), in: &state)
            })
    }

    private func closed(_ connection: HTTP1PoolStateMachine.ConnectionID) {
        carryOut(
            state.withLock { state in
                state.channels[connection] = nil
                state.running[connection] = nil
                return Self.resolve(state.machine.closed(connection), in: &state)
            })
    }
}

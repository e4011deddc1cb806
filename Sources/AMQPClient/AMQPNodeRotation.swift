import Logging
import Synchronization

/// Where a client's next connection starts among a cluster's nodes: at the node after the one its last connection
/// used, so that a client whose connection was lost (perhaps with its node) tries another node first. The one way
/// every BadgePipe client moves between nodes.
public final class AMQPNodeRotation: Sendable {
    /// The nodes and everything else a connection needs.
    public let configuration: AMQPConfiguration
    private let next: Mutex<Int>

    /// A rotation starting at node `first` (modulo the count); a fleet passes a random one to spread its
    /// connections.
    public init(_ configuration: AMQPConfiguration, startingAt first: Int = 0) {
        self.configuration = configuration
        self.next = Mutex(first % configuration.nodes.count)
    }

    /// The node the next connection tries first.
    public var nextNode: Int { next.withLock { $0 } }

    /// Connects, trying each node once from the next one (see ``AMQPConnection/connect(_:startingAt:logger:)``);
    /// the connection after this one starts at the node after the one this used.
    public func connect(logger: Logger) async throws -> AMQPConnection {
        let connection = try await AMQPConnection.connect(configuration, startingAt: nextNode, logger: logger)
        advance(past: connection)
        return connection
    }

    /// Connects, retrying with `policy` while no node is reachable (see
    /// ``AMQPConnection/connect(_:retry:startingAt:logger:)``).
    public func connect(retry policy: AMQPRetryPolicy, logger: Logger) async throws -> AMQPConnection {
        let connection = try await AMQPConnection.connect(
            configuration, retry: policy, startingAt: nextNode, logger: logger)
        advance(past: connection)
        return connection
    }

    private func advance(past connection: AMQPConnection) {
        let count = configuration.nodes.count
        next.withLock { $0 = (connection.nodeIndex + 1) % count }
    }
}

import BadgeSupport

/// The broker's topology disagrees with this process's settings, in a way that would lose events silently.
public struct TopologyError: Error, Sendable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the name logs show.
    public typealias Code = ErrorCode<TopologyError>

    /// The error's code.
    public var code: Code
    /// What is wrong and what to do, on one line.
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

extension ErrorCode<TopologyError> {
    /// A partition queue beyond `--partitions` exists: the deployment was set up with more partitions.
    public static var morePartitionsDeclared: Self { Self("more_partitions_declared") }
    /// The deployment exists with fewer partition queues than `--partitions`.
    public static var fewerPartitionsDeclared: Self { Self("fewer_partitions_declared") }
}

extension ErrorCode<TopologyError> {
    /// The broker's version cannot carry the topology (too old, or unstable partition routing without the override).
    public static var unsupportedBroker: Self { Self("unsupported_broker") }
}

/// The broker's topology disagrees with this process's settings, in a way that would lose events silently.
public struct TopologyError: Error, Sendable, CustomStringConvertible {
    /// A typed code.
    public enum Code: String, Sendable {
        /// A partition queue beyond `--partitions` exists: the deployment was set up with more partitions.
        case morePartitionsDeclared = "more_partitions_declared"
        /// The deployment exists with fewer partition queues than `--partitions`.
        case fewerPartitionsDeclared = "fewer_partitions_declared"
    }

    /// The error's code.
    public var code: Code
    /// What is wrong and what to do, on one line.
    public var message: String

    public var description: String { "\(code.rawValue): \(message)" }
}

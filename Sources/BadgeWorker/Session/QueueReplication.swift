/// How one of the pipeline's queues is replicated over a cluster, and whether that survives a node's loss.
///
/// On a cluster every queue BadgePipe owns (the partition queues, the dead queue, and the queues bound to the
/// feedback exchange) should be a quorum queue with a member on three nodes (or on every node of a smaller
/// cluster): a confirm then means a majority holds the message, and one node may be lost with nothing lost. A
/// quorum queue declared while some nodes were down, or shrunk since, has fewer; a classic queue lives on one
/// node only. `badgepipe setup` reports each queue and warns about those.
public struct QueueReplication: Sendable, Hashable {
    /// The queue's name.
    public var queue: String
    /// `quorum`, `classic` or `stream`, as the management API says.
    public var type: String
    /// The nodes holding a member (a classic queue's one node).
    public var members: [String]
    /// The node leading the queue, when known.
    public var leader: String?

    /// Creates a report line.
    public init(queue: String, type: String, members: [String], leader: String? = nil) {
        self.queue = queue
        self.type = type
        self.members = members
        self.leader = leader
    }

    /// Members a queue needs on a cluster of `clusterSize` nodes: three, or every node of a smaller cluster.
    public static func membersWanted(clusterSize: Int) -> Int { min(3, max(1, clusterSize)) }

    /// The warning for this queue on a cluster of `clusterSize` nodes, or nil when it survives a node's loss (or
    /// the broker is a single node, where nothing can).
    public func warning(clusterSize: Int) -> String? {
        guard clusterSize > 1 else { return nil }
        let wanted = Self.membersWanted(clusterSize: clusterSize)
        if type != "quorum" {
            return "\(queue): a \(type) queue, on \(members.first ?? "one node") only: it does not survive that node's "
                + "loss; delete it (after moving its messages) and declare it again as a quorum queue"
        }
        guard members.count < wanted else { return nil }
        return "\(queue): \(members.count) of \(wanted) members (\(members.joined(separator: ", "))); add members "
            + "with rabbitmq-queues grow <node> all, or declare it again on the whole cluster"
    }

    /// One line for people: `name: quorum, 3 members (a, b, c), leader a`.
    public var summary: String {
        let leading = leader.map { ", leader \($0)" } ?? ""
        return "\(queue): \(type), \(members.count) member\(members.count == 1 ? "" : "s") "
            + "(\(members.joined(separator: ", ")))\(leading)"
    }
}

/// Where a batch came from: its partition (recorded on its outbox rows) and, in a fleet, the lease it was consumed
/// under (checked in the batch's transaction).
public struct ApplyContext: Sendable, Equatable {
    public var partition: Int?
    public var lease: PartitionLease?
    /// The most active devices a user keeps: a registration beyond it deactivates the user's device registered
    /// longest ago (by its registration's `occurred_at`; ties: the smallest token), one per registration.
    public var maxDevicesPerUser: Int

    /// The default cap on devices per user.
    public static let defaultMaxDevicesPerUser = 100

    public init(
        partition: Int? = nil, lease: PartitionLease? = nil, maxDevicesPerUser: Int = defaultMaxDevicesPerUser
    ) {
        self.partition = partition
        self.lease = lease
        self.maxDevicesPerUser = maxDevicesPerUser
    }

    /// No partition, no lease: a single node.
    public static let none = ApplyContext()
}

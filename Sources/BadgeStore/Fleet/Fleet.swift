/// A worker's hold on one partition queue: while it holds the lease (and only then) it may consume the queue and
/// commit batches from it. `epoch` grows with every change of owner and fences out a worker that lost the lease
/// (for example one frozen past the lease's expiry) from committing anything more.
public struct PartitionLease: Sendable, Hashable {
    /// The partition number.
    public var partition: Int
    /// The owner's fencing token.
    public var epoch: Int64
    /// The owner.
    public var worker: String

    public init(partition: Int, epoch: Int64, worker: String) {
        self.partition = partition
        self.epoch = epoch
        self.worker = worker
    }
}

/// What one lease round decided.
public struct LeaseRound: Sendable, Equatable {
    /// The leases this worker holds now (renewed or newly acquired), by partition.
    public var leases: [PartitionLease]
    /// Workers seen alive in the last lease interval, this one included.
    public var liveWorkers: Int
    /// How many partitions each worker should hold: ceil(partitions / live workers).
    public var target: Int

    public init(leases: [PartitionLease], liveWorkers: Int, target: Int) {
        self.leases = leases
        self.liveWorkers = liveWorkers
        self.target = target
    }
}

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

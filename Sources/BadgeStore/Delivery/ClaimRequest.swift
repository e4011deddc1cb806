/// One partition's delivery claim, as a worker gathers several into one statement
/// (``PipelineStore/claimPushes(_:policy:)``): what ``PipelineStore/claimPushes(partition:limit:policy:lease:skipClaimedBefore:recording:)``
/// takes, without a record to write first.
public struct ClaimRequest: Sendable, Equatable {
    /// The partition whose due pushes to claim; nil for every partition at once.
    public var partition: Int?
    /// Most pushes to claim.
    public var limit: Int
    /// The lease the claim runs under (fleet mode), nil on a store one worker writes.
    public var lease: PartitionLease?
    /// Rows claimed under an earlier lease epoch than this are left alone (see `LeaseTerm.isInDoubt`).
    public var skipClaimedBefore: Int64?

    /// A claim of up to `limit` due pushes of `partition`.
    public init(partition: Int?, limit: Int, lease: PartitionLease? = nil, skipClaimedBefore: Int64? = nil) {
        self.partition = partition
        self.limit = limit
        self.lease = lease
        self.skipClaimedBefore = skipClaimedBefore
    }
}

import BadgeCore
import BadgeStore
import Logging

/// A worker's ingestion transactions, shared by its partitions' ingestion stages.
typealias IngestionGroup = TransactionGroup<ApplyBatch, [AppliedEvent]>

extension TransactionGroup where Request == ApplyBatch, Answer == [AppliedEvent] {
    /// Batches applied to `store`, several in one transaction (``BadgeStore/apply(_:policy:)``) up to `maxWeight`
    /// (``PartitionProcessor/weight(of:)`` summed), at most one transaction every `interval` unless batches are
    /// full; transient failures retried in place.
    static func ingestion(
        store: any BadgeStore, policy: BadgePolicy, maxWeight: Int, interval: Duration, health: WorkerHealth?,
        logger: Logger
    ) -> IngestionGroup {
        IngestionGroup("ingestion", maxWeight: maxWeight, interval: interval, logger: logger) { batches in
            try await Retry.transient("apply", health: health, logger: logger) {
                try await store.apply(batches, policy: policy)
            }
        }
    }
}

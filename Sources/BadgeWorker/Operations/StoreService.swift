import BadgeStore
import ServiceLifecycle

/// Runs a store's background work inside a `ServiceGroup` and closes it on graceful shutdown.
///
/// Put it before the worker in the group: services shut down in reverse order, so the worker finishes its batch
/// before the store closes.
public struct StoreService: Service {
    private let store: any PipelineStore

    public init(store: any PipelineStore) {
        self.store = store
    }

    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            try? await gracefulShutdown()
            try await store.close()
            try await group.waitForAll()
        }
    }
}

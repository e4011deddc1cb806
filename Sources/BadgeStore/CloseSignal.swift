/// Fires once, when a store is closed; ``wait()`` returns then (or when the waiting task is cancelled).
final class CloseSignal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self)
    }

    /// Waits until ``fire()`` or cancellation. Call from one task at a time.
    func wait() async {
        for await _ in stream {}
    }

    func fire() {
        continuation.finish()
    }
}

/// Test hooks of a store.
final class StoreHooks: Sendable {
    private let storage = LockedValue<(@Sendable (Int, any SQLExecutor) async throws -> Void)?>(nil)

    /// Runs before each event of a batch with the event's index, inside the batch's transaction.
    var beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)? {
        get { storage.value }
        set { storage.value = newValue }
    }
}

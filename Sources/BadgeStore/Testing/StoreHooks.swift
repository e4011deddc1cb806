/// Test hooks of a store, reached through `@testable import` (internal). The shared SQL rules call
/// ``beforeEvent`` when it is set; nothing else in the module sets it.
final class StoreHooks: Sendable {
    private let storage = LockedValue<(@Sendable (Int, any SQLExecutor) async throws -> Void)?>(nil)

    /// Runs before each event of a batch with the event's index, inside the batch's transaction.
    var beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)? {
        get { storage.value }
        set { storage.value = newValue }
    }
}

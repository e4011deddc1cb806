/// Runs `body` for at most `limit`: returns its value, or cancels it and throws ``TimeLimitError`` when the limit
/// passes first. An error `body` throws first is rethrown as it is.
///
/// The limit helps only a body that honours cancellation: one that does not is waited for (a task group does not
/// return before its children) and its late value is dropped.
public func withTimeLimit<T: Sendable>(
    _ limit: Duration,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimeLimitError(code: .exceeded, limit: limit)
        }
        return value
    }
}

/// A condition that did not come true in time.
public struct EventuallyError: Error, CustomStringConvertible {
    /// What was waited for, and the last answer.
    public var description: String
}

/// Waits for a condition, never for time: asks `answer` every `interval` until it returns a value, and returns
/// that value; throws ``EventuallyError`` naming `what` (and the last error `answer` threw, if any) when `timeout`
/// passes first. The one way the tests wait for something to happen.
@discardableResult
public func eventually<Value>(
    _ what: String,
    timeout: Duration = .seconds(30),
    every interval: Duration = .milliseconds(100),
    _ answer: () async throws -> Value?
) async throws -> Value {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    var lastError: (any Error)?
    while true {
        do {
            if let value = try await answer() { return value }
            lastError = nil
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            lastError = error
        }
        guard clock.now + interval < deadline else {
            throw EventuallyError(
                description: "not within \(timeout): \(what)" + (lastError.map { " (last error: \($0))" } ?? ""))
        }
        try await Task.sleep(for: interval)
    }
}

/// Waits until `condition` holds, as the value-returning `eventually` does.
public func eventually(
    _ what: String,
    timeout: Duration = .seconds(30),
    every interval: Duration = .milliseconds(100),
    _ condition: () async throws -> Bool
) async throws {
    try await eventually(what, timeout: timeout, every: interval) { try await condition() ? true : nil }
}

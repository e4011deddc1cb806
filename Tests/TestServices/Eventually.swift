/// A condition that did not come true in time.
public struct EventuallyError: Error, CustomStringConvertible {
    /// What was waited for, and the last answer.
    public var description: String
}

/// Waits for a value, never for time: asks `answer` every `interval` until it returns a value, and returns that
/// value; throws ``EventuallyError`` naming `what` (and the last error `answer` threw, if any) when `timeout` passes
/// first. With ``eventually(_:timeout:every:_:)``, the one way the tests wait for something to happen. A name of its
/// own: were it `eventually` too, a closure that returns a `Bool` could match it as `Bool?` and end the wait at once
/// with `false`.
@discardableResult
public func eventuallyValue<Value>(
    _ what: String,
    timeout: Duration = .seconds(30),
    every interval: Duration = .milliseconds(100),
    isolation: isolated (any Actor)? = #isolation,
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

/// Waits until `condition` holds, as ``eventuallyValue(_:timeout:every:_:)`` waits for a value.
public func eventually(
    _ what: String,
    timeout: Duration = .seconds(30),
    every interval: Duration = .milliseconds(100),
    isolation: isolated (any Actor)? = #isolation,
    _ condition: () async throws -> Bool
) async throws {
    try await eventuallyValue(what, timeout: timeout, every: interval, isolation: isolation) {
        try await condition() ? true : nil
    }
}

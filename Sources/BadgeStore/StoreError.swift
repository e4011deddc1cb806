/// A store failure.
///
/// `transient` errors (connection refused or lost, serialization failures, deadlocks, "database is locked")
/// may succeed when the same operation is retried; a batch that failed with one had no effect. Other errors
/// are bugs, bad configuration or constraint surprises.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// A short machine-readable code, e.g. `serialization_failure`, `connection`, `sqlite_busy`, `sql`.
    public var code: String
    /// A one-line human-readable reason.
    public var message: String
    /// Whether retrying the same operation may succeed.
    public var transient: Bool

    /// Creates an error.
    public init(code: String, message: String, transient: Bool) {
        self.code = code
        self.message = message
        self.transient = transient
    }

    /// `code: message`, with `(transient)` when it is.
    public var description: String {
        "\(code): \(message)\(transient ? " (transient)" : "")"
    }

    static func badURL(_ message: String) -> StoreError {
        StoreError(code: "bad_database_url", message: message, transient: false)
    }

    static func corrupt(_ message: String) -> StoreError {
        StoreError(code: "corrupt_data", message: message, transient: false)
    }

    static let closed = StoreError(code: "closed", message: "the store is closed", transient: false)
}

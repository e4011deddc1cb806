import BadgeSupport

/// Why `badgepipe dead` could not read or replay the dead queue.
public struct DeadQueueError: Error, Sendable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the name `badgepipe dead` prints.
    public typealias Code = ErrorCode<DeadQueueError>

    /// The error's code.
    public var code: Code
    /// What is wrong and what to do, on one line.
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

extension ErrorCode<DeadQueueError> {
    /// The dead queue or the events exchange does not exist (a wrong `--namespace`, or nothing set up yet).
    public static var notDeclared: Self { Self("not_declared") }
    /// The dead queue has a consumer already (another `badgepipe dead`): a pass would see only part of it.
    public static var busy: Self { Self("busy") }
    /// A replayed message was not confirmed by the broker; it stays in the dead queue.
    public static var replayFailed: Self { Self("replay_failed") }
}

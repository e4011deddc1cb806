/// Why `badgepipe dead` could not read or replay the dead queue.
public struct DeadLetterError: Error, Sendable, CustomStringConvertible {
    /// A typed code.
    public enum Code: String, Sendable {
        /// The dead queue or the events exchange does not exist (a wrong `--namespace`, or nothing set up yet).
        case notDeclared = "not_declared"
        /// The dead queue has a consumer already (another `badgepipe dead`): a pass would see only part of it.
        case busy
        /// A replayed message was not confirmed by the broker; it stays in the dead queue.
        case replayFailed = "replay_failed"
    }

    /// The error's code.
    public var code: Code
    /// What is wrong and what to do, on one line.
    public var message: String

    public var description: String { "\(code.rawValue): \(message)" }
}

/// How a push ended.
public enum DeliveryOutcome: Sendable, Equatable {
    /// The provider accepted the push.
    case accepted
    /// The provider says the token is unregistered or invalid: deactivate it, send nothing more to it.
    case deadToken(status: Int, reason: String)
    /// The provider refused this push for good (bad payload, bad topic): retrying would not help.
    case rejected(status: Int, reason: String)
}

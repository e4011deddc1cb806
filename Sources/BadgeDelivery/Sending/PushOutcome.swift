/// How one attempt to send a push ended.
public enum PushOutcome: Sendable, Equatable {
    /// The provider accepted the push.
    case accepted
    /// The provider says the token is unregistered or invalid: deactivate it, send nothing more to it.
    /// `timestampMilliseconds`: APNs's `timestamp` of a 410 (see
    /// ``ProviderResponse/deadToken(reason:timestampMilliseconds:)``).
    case deadToken(status: Int, reason: String, timestampMilliseconds: Int64? = nil)
    /// The push failed for good (the provider refused its payload or topic, or the HTTP client refused to send
    /// it): retrying would not help.
    case rejected(status: Int, reason: String)
    /// Throttled, a server error, a timeout or a network error: try again later, after `retryAfter` when the
    /// provider said so.
    case retry(reason: String, retryAfter: Duration?)
    /// Our credentials or configuration were refused (401, 403): the push is kept and tried again later, and the
    /// worker says so loudly; nothing about the push itself is wrong.
    case configurationError(status: Int, reason: String)
    /// The deployment does not deliver to the push's provider (see ``DeliveryConfiguration/providers``): nothing
    /// was sent. The push is refused (reason `provider_not_configured`); the device is kept, so that configuring
    /// the provider later serves it.
    case notConfigured(reason: String)
    /// Nothing reached the provider: the send window (``PushSender/send(_:window:)``) was closed before the
    /// attempt, or when the connection was ready for the body. Only with a window.
    case windowClosed
}

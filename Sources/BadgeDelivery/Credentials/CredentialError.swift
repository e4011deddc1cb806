import BadgeSupport

/// A provider credential could not be obtained: the token endpoint refused the service account's assertion
/// (`retryable` false: a configuration error, the push is kept and the worker says so loudly), or it could not be
/// reached or failed (`retryable`: the push is tried again later).
struct CredentialError: Error, Sendable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the name logs show.
    typealias Code = ErrorCode<CredentialError>

    /// The error's code.
    var code: Code
    /// A one-line reason; the worker's health and logs show it.
    var message: String
    /// Whether the push is tried again later (true) or kept as a configuration error (false).
    var retryable: Bool

    /// `code: message`.
    var description: String { "\(code): \(message)" }
}

extension ErrorCode<CredentialError> {
    /// A trust-roots file, or an APNs client certificate or key, cannot be read or loaded.
    static var unreadable: Self { Self("unreadable") }
    /// An APNs provider token cannot be signed with the app's key.
    static var signingFailed: Self { Self("signing_failed") }
    /// The FCM token endpoint could not be reached or its answer not read (retryable).
    static var tokenEndpointUnreachable: Self { Self("token_endpoint_unreachable") }
    /// The FCM token endpoint answered without a token (retryable when it answered 429 or 5xx).
    static var tokenRefused: Self { Self("token_refused") }
}

/// A provider credential could not be obtained: the token endpoint refused the service account's assertion
/// (`retryable` false: a configuration error, the push is kept and the worker says so loudly), or it could not be
/// reached or failed (`retryable`: the push is tried again later).
struct CredentialError: Error, Sendable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the name logs show.
    struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `token_refused`.
        let rawValue: String

        /// A code by name.
        init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        var description: String { rawValue }

        /// A trust-roots file, or an APNs client certificate or key, cannot be read or loaded.
        static let unreadable = Code("unreadable")
        /// An APNs provider token cannot be signed with the app's key.
        static let signingFailed = Code("signing_failed")
        /// The FCM token endpoint could not be reached or its answer not read (retryable).
        static let tokenEndpointUnreachable = Code("token_endpoint_unreachable")
        /// The FCM token endpoint answered without a token (retryable when it answered 429 or 5xx).
        static let tokenRefused = Code("token_refused")
    }

    /// The error's code.
    var code: Code
    /// A one-line reason; the worker's health and logs show it.
    var message: String
    /// Whether the push is tried again later (true) or kept as a configuration error (false).
    var retryable: Bool

    /// `code: message`.
    var description: String { "\(code): \(message)" }
}

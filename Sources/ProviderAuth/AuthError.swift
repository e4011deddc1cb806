/// A credential that cannot be loaded, built or verified.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable code; its ``rawValue`` is the name logs show.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `bad_key`.
        public let rawValue: String

        /// A code by name.
        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// A key or credentials file cannot be read.
        public static let unreadableFile = Code("unreadable_file")
        /// A key is not in the expected PEM form.
        public static let badKey = Code("bad_key")
        /// A service-account file lacks a field or is not JSON.
        public static let badCredentials = Code("bad_credentials")
        /// A token is not a compact JWS, or its header or claims are not the expected JSON.
        public static let malformedToken = Code("malformed_token")
        /// A token's signature does not verify.
        public static let badSignature = Code("bad_signature")
        /// A token names an unknown key, issuer or audience, or its algorithm is not the expected one.
        public static let wrongClaims = Code("wrong_claims")
        /// A token is too old, or not valid yet.
        public static let expired = Code("expired")
        /// A token endpoint refused an assertion or answered something unexpected.
        public static let tokenEndpoint = Code("token_endpoint")
    }

    /// The code.
    public var code: Code
    /// A one-line explanation (never a secret).
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

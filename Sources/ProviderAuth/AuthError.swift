import BadgeSupport

/// A credential that cannot be loaded, built or verified.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable code; its ``rawValue`` is the name logs show.
    public typealias Code = ErrorCode<AuthError>

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

extension ErrorCode<AuthError> {
    /// A key or credentials file cannot be read.
    public static var unreadableFile: Self { Self("unreadable_file") }
    /// A key is not in the expected PEM form.
    public static var badKey: Self { Self("bad_key") }
    /// A service-account file lacks a field or is not JSON.
    public static var badCredentials: Self { Self("bad_credentials") }
    /// A token is not a compact JWS, or its header or claims are not the expected JSON.
    public static var malformedToken: Self { Self("malformed_token") }
    /// A token's signature does not verify.
    public static var badSignature: Self { Self("bad_signature") }
    /// A token names an unknown key, issuer or audience, or its algorithm is not the expected one.
    public static var wrongClaims: Self { Self("wrong_claims") }
    /// A token is too old, or not valid yet.
    public static var expired: Self { Self("expired") }
    /// A token endpoint refused an assertion or answered something unexpected.
    public static var tokenEndpoint: Self { Self("token_endpoint") }
}

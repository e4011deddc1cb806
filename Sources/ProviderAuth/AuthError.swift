/// A credential that cannot be loaded, built or verified.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable code.
    public enum Code: String, Sendable {
        /// A key or credentials file cannot be read.
        case unreadableFile = "unreadable_file"
        /// A key is not in the expected PEM form.
        case badKey = "bad_key"
        /// A service-account file lacks a field or is not JSON.
        case badCredentials = "bad_credentials"
        /// A token is not a compact JWS, or its header or claims are not the expected JSON.
        case malformedToken = "malformed_token"
        /// A token's signature does not verify.
        case badSignature = "bad_signature"
        /// A token names an unknown key, issuer or audience, or its algorithm is not the expected one.
        case wrongClaims = "wrong_claims"
        /// A token is too old, or not valid yet.
        case expired
        /// A token endpoint refused an assertion or answered something unexpected.
        case tokenEndpoint = "token_endpoint"
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

    public var description: String { "\(code.rawValue): \(message)" }
}

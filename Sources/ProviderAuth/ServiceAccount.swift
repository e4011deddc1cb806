import Crypto
import CryptoExtras
import Foundation

/// A Google service account (the JSON key file the Firebase console downloads): signs the RS256 assertions that
/// the OAuth2 token endpoint exchanges for access tokens (RFC 7523, the JWT bearer grant).
public struct ServiceAccount: Sendable {
    /// The OAuth2 scope FCM HTTP v1 needs.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    /// The account's e-mail address (the assertion's `iss`).
    public let clientEmail: String
    /// Where assertions are exchanged (the assertion's `aud`).
    public let tokenURI: String
    /// The Firebase project, when the file names one.
    public let projectID: String?
    private let key: _RSA.Signing.PrivateKey

    private struct File: Decodable {
        var type: String?
        var project_id: String?
        var private_key: String?
        var client_email: String?
        var token_uri: String?
    }

    /// Reads a service-account JSON text.
    public init(json: Data) throws {
        guard let file = try? JSONDecoder().decode(File.self, from: json) else {
            throw AuthError(.badCredentials, "the FCM credentials file is not a JSON object")
        }
        if let type = file.type, type != "service_account" {
            throw AuthError(.badCredentials, "the FCM credentials file is of type \"\(type)\", not service_account")
        }
        guard let email = file.client_email, !email.isEmpty else {
            throw AuthError(.badCredentials, "the FCM credentials file has no client_email")
        }
        guard let pem = file.private_key, !pem.isEmpty else {
            throw AuthError(.badCredentials, "the FCM credentials file has no private_key")
        }
        guard let tokenURI = file.token_uri, tokenURI.lowercased().hasPrefix("http") else {
            throw AuthError(.badCredentials, "the FCM credentials file has no token_uri URL")
        }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw AuthError(.badKey, "the FCM credentials file's private_key is not an RSA key in PEM")
        }
        clientEmail = email
        self.tokenURI = tokenURI
        projectID = file.project_id.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Reads a service-account JSON file.
    public init(file: String) throws {
        try self.init(json: Data(try CredentialFile.text(file, what: "FCM credentials file").utf8))
    }

    /// The account's public key in PEM (`-----BEGIN PUBLIC KEY-----`): what verifies its assertions, as Google's
    /// token endpoint verifies them.
    public var publicKeyPEM: String { key.publicKey.pemRepresentation }

    /// The claims of an assertion.
    public struct Claims: Codable, Sendable {
        public var iss: String
        public var scope: String
        public var aud: String
        public var iat: Int64
        public var exp: Int64
    }

    /// An assertion issued at `issuedAt` (seconds since the epoch), valid for `lifetime` seconds (at most an hour).
    public func assertion(issuedAt: Int64, lifetime: Int64 = 3600) throws -> String {
        let claims = Claims(
            iss: clientEmail, scope: Self.messagingScope, aud: tokenURI, iat: issuedAt,
            exp: issuedAt + min(max(lifetime, 1), 3600))
        return try CompactJWT.compose(header: CompactJWT.Header(alg: "RS256", typ: "JWT"), claims: claims) { input in
            try key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation
        }
    }
}

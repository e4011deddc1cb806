import Crypto
import Foundation

/// An APNs token-auth key (the `.p8` file Apple issues: a P-256 private key in PKCS #8 PEM) with its key id and
/// team id: signs provider tokens, ES256 JWTs with header `alg`, `kid` and claims `iss` (the team), `iat`.
public struct APNsSigningKey: Sendable {
    /// The key id Apple shows for the key (the JWT's `kid`).
    public let keyID: String
    /// The developer team id (the JWT's `iss`).
    public let teamID: String
    private let key: P256.Signing.PrivateKey

    /// Loads the key from PEM text.
    public init(pem: String, keyID: String, teamID: String) throws {
        guard !keyID.isEmpty, !teamID.isEmpty else {
            throw AuthError(.badKey, "an APNs key needs its key id and team id")
        }
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw AuthError(.badKey, "the APNs key is not a P-256 private key in PEM (a .p8 file)")
        }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Loads the key from a `.p8` file.
    public init(file: String, keyID: String, teamID: String) throws {
        try self.init(pem: try CredentialFile.text(file, what: "APNs key file"), keyID: keyID, teamID: teamID)
    }

    /// The key's public half in PEM (`-----BEGIN PUBLIC KEY-----`): what verifies its provider tokens, as Apple
    /// verifies them.
    public var publicKeyPEM: String { key.publicKey.pemRepresentation }

    /// The claims of a provider token.
    struct Claims: Codable {
        var iss: String
        var iat: Int64
    }

    /// A provider token issued at `issuedAt` (seconds since the epoch).
    public func token(issuedAt: Int64) throws -> String {
        try CompactJWT.compose(
            header: CompactJWT.Header(alg: "ES256", kid: keyID), claims: Claims(iss: teamID, iat: issuedAt)
        ) { input in
            try key.signature(for: input).rawRepresentation
        }
    }
}

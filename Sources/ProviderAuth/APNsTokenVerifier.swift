import Crypto
import Foundation

/// Checks APNs provider tokens as Apple does: the `authorization: bearer …` header is an ES256 JWT whose `kid`
/// names a known key, whose signature verifies with that key's public half, whose `iss` is the key's team (when
/// one is configured) and whose `iat` is at most an hour old (and not in the future beyond a minute of skew).
public struct APNsTokenVerifier: Sendable {
    /// One accepted key: its public half and, optionally, the team it belongs to.
    public struct Key: Sendable {
        /// The public key.
        public var publicKey: P256.Signing.PublicKey
        /// The team id `iss` must equal; nil accepts any non-empty issuer.
        public var teamID: String?

        /// Creates a key from its PEM public key (`-----BEGIN PUBLIC KEY-----`).
        public init(publicKeyPEM: String, teamID: String? = nil) throws {
            do {
                publicKey = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
            } catch {
                throw AuthError(.badKey, "not a P-256 public key in PEM")
            }
            self.teamID = teamID
        }
    }

    /// How a request's token fared, with the reason APNs answers (status 403) when it is refused.
    public enum Verdict: Sendable, Equatable {
        case valid
        /// `MissingProviderToken`, `InvalidProviderToken` or `ExpiredProviderToken`.
        case refused(reason: String)
    }

    /// The accepted keys by key id.
    public var keys: [String: Key]
    /// The largest accepted token age.
    public var maximumAge: Int64 = 3600

    /// Creates a verifier.
    public init(keys: [String: Key]) {
        self.keys = keys
    }

    /// Checks the value of an `authorization` header at `now` (seconds since the epoch).
    public func verify(authorization: String?, now: Int64) -> Verdict {
        guard let authorization, !authorization.isEmpty else { return .refused(reason: "MissingProviderToken") }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .refused(reason: "MissingProviderToken")
        }
        struct Claims: Decodable {
            var iss: String?
            var iat: Int64?
        }
        guard let token = try? CompactJWT(parts[1]),
            let header = try? token.decode(CompactJWT.Header.self, from: token.header),
            let claims = try? token.decode(Claims.self, from: token.claims),
            header.alg == "ES256", let kid = header.kid, let key = keys[kid],
            let iss = claims.iss, !iss.isEmpty, key.teamID.map({ $0 == iss }) ?? true, let iat = claims.iat,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature),
            key.publicKey.isValidSignature(signature, for: token.signingInput)
        else { return .refused(reason: "InvalidProviderToken") }
        if iat > now + 60 { return .refused(reason: "InvalidProviderToken") }
        if now - iat > maximumAge { return .refused(reason: "ExpiredProviderToken") }
        return .valid
    }
}

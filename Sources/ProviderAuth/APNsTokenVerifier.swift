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

    /// What a provider token says of itself: its header's `kid` and its claims' `iss` and `iat`, as sent (read
    /// whether or not the token verifies; none of them is secret).
    public struct Reading: Sendable, Equatable {
        /// The key id (`kid`).
        public var keyID: String?
        /// The issuer (`iss`), the team id.
        public var issuer: String?
        /// When it was issued (`iat`, seconds since the epoch).
        public var issuedAt: Int64?

        /// Creates a reading.
        public init(keyID: String? = nil, issuer: String? = nil, issuedAt: Int64? = nil) {
            self.keyID = keyID
            self.issuer = issuer
            self.issuedAt = issuedAt
        }
    }

    /// Checks the value of an `authorization` header at `now` (seconds since the epoch).
    public func verify(authorization: String?, now: Int64) -> Verdict {
        check(authorization: authorization, now: now).verdict
    }

    /// Checks the value of an `authorization` header at `now` (seconds since the epoch), and returns with the
    /// verdict what the token says of itself (nil when the header holds no readable token).
    public func check(authorization: String?, now: Int64) -> (verdict: Verdict, reading: Reading?) {
        guard let authorization, !authorization.isEmpty else { return (.refused(reason: "MissingProviderToken"), nil) }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return (.refused(reason: "MissingProviderToken"), nil)
        }
        guard let token = Self.parse(parts[1]) else { return (.refused(reason: "InvalidProviderToken"), nil) }
        return (self.verdict(token, now: now), token.reading)
    }

    /// What a token (the text after `bearer `) says of itself, without verifying it; nil when it is not a compact
    /// JWT with a header and claims this verifier can read.
    public static func read(_ token: some StringProtocol) -> Reading? {
        parse(token)?.reading
    }

    /// A token split and decoded, not yet verified.
    private struct Parsed {
        var jwt: CompactJWT
        var alg: String
        var reading: Reading
    }

    private struct Claims: Decodable {
        var iss: String?
        var iat: Int64?
    }

    private static func parse(_ text: some StringProtocol) -> Parsed? {
        guard let token = try? CompactJWT(text),
            let header = try? token.decode(CompactJWT.Header.self, from: token.header),
            let claims = try? token.decode(Claims.self, from: token.claims)
        else { return nil }
        return Parsed(
            jwt: token, alg: header.alg, reading: Reading(keyID: header.kid, issuer: claims.iss, issuedAt: claims.iat))
    }

    private func verdict(_ token: Parsed, now: Int64) -> Verdict {
        guard token.alg == "ES256", let kid = token.reading.keyID, let key = keys[kid],
            let iss = token.reading.issuer, !iss.isEmpty, key.teamID.map({ $0 == iss }) ?? true,
            let iat = token.reading.issuedAt,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.jwt.signature),
            key.publicKey.isValidSignature(signature, for: token.jwt.signingInput)
        else { return .refused(reason: "InvalidProviderToken") }
        if iat > now + 60 { return .refused(reason: "InvalidProviderToken") }
        if now - iat > maximumAge { return .refused(reason: "ExpiredProviderToken") }
        return .valid
    }
}

import Crypto
import CryptoExtras
import Foundation

/// Checks OAuth2 JWT-bearer assertions as Google's token endpoint does for a service account: RS256 signed by
/// the account's key, `iss` set, `scope` naming firebase.messaging, `aud` the endpoint, `exp` in the future and
/// at most an hour after `iat`.
public struct AssertionVerifier: Sendable {
    /// The key that verifies an assertion of any issuer; nil when only ``accounts`` are accepted.
    private let anyIssuer: _RSA.Signing.PublicKey?
    /// The keys of known service accounts, by `client_email` (the assertion's `iss`).
    private let accounts: [String: _RSA.Signing.PublicKey]

    /// Creates a verifier for the account whose public key is `publicKeyPEM` (`-----BEGIN PUBLIC KEY-----`),
    /// whatever its `iss`.
    public init(publicKeyPEM: String) throws {
        try self.init(anyIssuerPEM: publicKeyPEM, accounts: [:])
    }

    /// Creates a verifier for several service accounts, as Google's endpoint knows each by its e-mail address: an
    /// assertion is verified with the key of the account its `iss` names (`accounts`, public keys in PEM by
    /// `client_email`), else with `anyIssuerPEM`'s, else refused as from an unknown account.
    public init(anyIssuerPEM: String?, accounts: [String: String]) throws {
        anyIssuer = try anyIssuerPEM.map(Self.key)
        self.accounts = try accounts.mapValues(Self.key)
    }

    private static func key(_ pem: String) throws -> _RSA.Signing.PublicKey {
        do {
            return try _RSA.Signing.PublicKey(pemRepresentation: pem)
        } catch {
            throw AuthError(.badKey, "not an RSA public key in PEM")
        }
    }

    /// The assertion's claims when it is valid at `now` (seconds since the epoch) for the endpoint `audience`
    /// (nil: any); throws an ``AuthError`` saying why not.
    public func verify(_ assertion: String, audience: String?, now: Int64) throws -> ServiceAccount.Claims {
        let token = try CompactJWT(assertion)
        let header = try token.decode(CompactJWT.Header.self, from: token.header)
        guard header.alg == "RS256" else { throw AuthError(.wrongClaims, "alg must be RS256, not \(header.alg)") }
        // Read unverified only to choose the key; nothing is trusted before the signature verifies with it.
        let claims = try token.decode(ServiceAccount.Claims.self, from: token.claims)
        guard let publicKey = accounts[claims.iss] ?? anyIssuer else {
            throw AuthError(.wrongClaims, "no service account \(claims.iss) is known")
        }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: token.signature)
        guard
            publicKey.isValidSignature(
                signature, for: SHA256.hash(data: token.signingInput), padding: .insecurePKCS1v1_5)
        else { throw AuthError(.badSignature, "the assertion's signature does not verify") }
        guard !claims.iss.isEmpty else { throw AuthError(.wrongClaims, "iss is empty") }
        guard claims.scope.split(separator: " ").contains(Substring(ServiceAccount.messagingScope)) else {
            throw AuthError(.wrongClaims, "scope does not include firebase.messaging")
        }
        if let audience, claims.aud != audience {
            throw AuthError(.wrongClaims, "aud is \(claims.aud), not \(audience)")
        }
        guard claims.exp > now else { throw AuthError(.expired, "the assertion has expired") }
        guard claims.exp - claims.iat <= 3600, claims.iat <= now + 60 else {
            throw AuthError(.wrongClaims, "exp must be at most an hour after iat, and iat not in the future")
        }
        return claims
    }
}

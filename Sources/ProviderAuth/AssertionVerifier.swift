import Crypto
import CryptoExtras
import Foundation

/// Checks OAuth2 JWT-bearer assertions as Google's token endpoint does for a service account: RS256 signed by
/// the account's key, `iss` set, `scope` naming firebase.messaging, `aud` the endpoint, `exp` in the future and
/// at most an hour after `iat`.
public struct AssertionVerifier: Sendable {
    private let publicKey: _RSA.Signing.PublicKey

    /// Creates a verifier for the account whose public key is `publicKeyPEM` (`-----BEGIN PUBLIC KEY-----`).
    public init(publicKeyPEM: String) throws {
        do {
            publicKey = try _RSA.Signing.PublicKey(pemRepresentation: publicKeyPEM)
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
        let signature = _RSA.Signing.RSASignature(rawRepresentation: token.signature)
        guard
            publicKey.isValidSignature(
                signature, for: SHA256.hash(data: token.signingInput), padding: .insecurePKCS1v1_5)
        else { throw AuthError(.badSignature, "the assertion's signature does not verify") }
        let claims = try token.decode(ServiceAccount.Claims.self, from: token.claims)
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

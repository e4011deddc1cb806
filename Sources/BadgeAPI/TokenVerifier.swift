import Foundation
import JWTKit

/// Verifies the bearer tokens apps send (contract 7.1) with jwt-kit: HS256 with a shared secret, ES256 and RS256
/// with public keys (`kid` selects among several); a token whose `alg` is none or not configured is refused by the
/// library. The claims: `sub` is the user, `exp` is required, `nbf` and `iat` are honoured, `aud` is checked when
/// the deployment sets an audience; clocks may differ by ``leeway``.
public struct TokenVerifier: Sendable {
    /// How far the app's backend's clock and ours may disagree.
    public static let leeway: TimeInterval = 60

    /// A key the deployment trusts.
    public enum Key: Sendable {
        /// HS256 with this secret.
        case hs256(secret: [UInt8], kid: String?)
        /// ES256 or RS256 (whichever the PEM holds) with this public key.
        case publicKey(pem: String, kid: String?)
    }

    private let keys: JWTKeyCollection
    private let audience: String?

    /// A verifier of tokens signed by `keys`, for `audience` when given.
    public init(keys: [Key], audience: String?) async throws {
        let collection = JWTKeyCollection()
        for key in keys {
            switch key {
            case .hs256(let secret, let kid):
                await collection.add(
                    hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: kid.map { JWKIdentifier(string: $0) })
            case .publicKey(let pem, let kid):
                let identifier = kid.map { JWKIdentifier(string: $0) }
                if let ecdsa = try? ES256PublicKey(pem: pem) {
                    await collection.add(ecdsa: ecdsa, kid: identifier)
                } else {
                    let rsa = try Insecure.RSA.PublicKey(pem: pem)
                    await collection.add(rsa: rsa, digestAlgorithm: .sha256, kid: identifier)
                }
            }
        }
        self.keys = collection
        self.audience = audience
    }

    /// The user `token` is for; throws ``APIError`` (`401`) when it is not valid now.
    public func user(of token: String, now: Date = Date()) async throws -> String {
        let claims: AppClaims
        do {
            claims = try await keys.verify(token, as: AppClaims.self)
        } catch {
            throw APIError.unauthorized("the token is not valid: \(Self.reason(error))")
        }
        guard claims.exp.value.timeIntervalSince(now) > -Self.leeway else {
            throw APIError.unauthorized("the token expired")
        }
        if let nbf = claims.nbf, nbf.value.timeIntervalSince(now) > Self.leeway {
            throw APIError.unauthorized("the token is not valid yet")
        }
        if let iat = claims.iat, iat.value.timeIntervalSince(now) > Self.leeway {
            throw APIError.unauthorized("the token was issued in the future")
        }
        if let audience {
            guard let aud = claims.aud, aud.value.contains(audience) else {
                throw APIError.unauthorized("the token is not for this audience")
            }
        }
        let user = claims.sub.value
        guard !user.isEmpty, user.utf8.count <= 256 else { throw APIError.unauthorized("the token names no user") }
        return user
    }

    /// A short reason, without any of the token's content.
    private static func reason(_ error: any Error) -> String {
        if let error = error as? JWTError { return "\(error.errorType)" }
        return "malformed"
    }

    /// The claims the API reads. `exp` is required (decoding fails without it); the time checks are ours, with
    /// the leeway.
    struct AppClaims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var nbf: NotBeforeClaim?
        var iat: IssuedAtClaim?
        var aud: AudienceClaim?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}

/// Signs development tokens (`badgepipe api token`): HS256 with the deployment's secret.
public enum DevelopmentToken {
    /// A token for `user`, valid for `lifetime`, for `audience` when given.
    public static func sign(
        user: String, secret: [UInt8], lifetime: TimeInterval, audience: String?, now: Date = Date()
    ) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        let claims = TokenVerifier.AppClaims(
            sub: SubjectClaim(value: user), exp: ExpirationClaim(value: now.addingTimeInterval(lifetime)),
            nbf: nil, iat: IssuedAtClaim(value: now), aud: audience.map { AudienceClaim(value: [$0]) })
        return try await keys.sign(claims)
    }
}

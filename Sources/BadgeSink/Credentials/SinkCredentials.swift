import Foundation
import ProviderAuth
import Synchronization

/// What the sink checks of a push's credentials, as APNs and FCM do: APNs provider tokens against the configured
/// keys, and FCM access tokens it issued itself at `POST /token` for assertions signed by the service account.
/// Nothing is checked for a provider without keys configured.
final class SinkCredentials: Sendable {
    private let apns: APNsTokenVerifier?
    private let assertions: AssertionVerifier?
    private let tokenLifetime: Int
    /// Issued access tokens and when each expires.
    private let issued = Mutex<[String: Date]>([:])

    init(configuration: SinkConfiguration) throws {
        if configuration.apnsKeyFiles.isEmpty {
            apns = nil
        } else {
            var keys: [String: APNsTokenVerifier.Key] = [:]
            for (keyID, file) in configuration.apnsKeyFiles {
                keys[keyID] = try APNsTokenVerifier.Key(
                    publicKeyPEM: try Self.read(file, what: "APNs public key for \(keyID)"),
                    teamID: configuration.apnsTeamID)
            }
            apns = APNsTokenVerifier(keys: keys)
        }
        assertions = try configuration.fcmPublicKeyFile.map {
            try AssertionVerifier(publicKeyPEM: try Self.read($0, what: "FCM public key"))
        }
        tokenLifetime = max(1, configuration.fcmTokenLifetime)
    }

    /// The APNs answer to a push carrying `authorization`: nil when it may go on, else (403, reason).
    func checkAPNs(authorization: String?, now: Date = Date()) -> (status: Int, reason: String)? {
        guard let apns else { return nil }
        switch apns.verify(authorization: authorization, now: Int64(now.timeIntervalSince1970)) {
        case .valid: return nil
        case .refused(let reason): return (403, reason)
        }
    }

    /// The FCM answer to a push carrying `authorization`: nil when it may go on, else (401, `UNAUTHENTICATED`).
    func checkFCM(authorization: String?, now: Date = Date()) -> (status: Int, reason: String)? {
        guard assertions != nil else { return nil }
        let parts = authorization?.split(separator: " ", maxSplits: 1) ?? []
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return (401, "UNAUTHENTICATED") }
        let token = String(parts[1])
        let valid = issued.withLock { issued in issued[token].map { now < $0 } ?? false }
        return valid ? nil : (401, "UNAUTHENTICATED")
    }

    /// An access token for the assertion in a `POST /token` form body, or the OAuth2 error to answer.
    func issueToken(form: String, now: Date = Date()) -> Result<(token: String, lifetime: Int), TokenError> {
        guard let assertions else {
            return .failure(TokenError(code: "invalid_client", description: "the sink has no --fcm-public-key"))
        }
        var fields: [String: String] = [:]
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let name = String(parts[0]).removingPercentEncoding ?? ""
            let value = parts.count > 1 ? (String(parts[1]).replacingOccurrences(of: "+", with: " ")) : ""
            fields[name] = value.removingPercentEncoding ?? value
        }
        guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return .failure(TokenError(code: "unsupported_grant_type", description: "grant_type must be jwt-bearer"))
        }
        guard let assertion = fields["assertion"], !assertion.isEmpty else {
            return .failure(TokenError(code: "invalid_request", description: "no assertion"))
        }
        let claims: ServiceAccount.Claims
        do {
            claims = try assertions.verify(assertion, audience: nil, now: Int64(now.timeIntervalSince1970))
        } catch {
            return .failure(TokenError(code: "invalid_grant", description: "\(error)"))
        }
        guard claims.aud.hasSuffix("/token") else {
            return .failure(TokenError(code: "invalid_grant", description: "aud must be this endpoint's URL"))
        }
        let token = "sink-" + UUID().uuidString.lowercased()
        let expiry = now.addingTimeInterval(TimeInterval(tokenLifetime))
        issued.withLock { issued in
            issued = issued.filter { $0.value > now }
            issued[token] = expiry
        }
        return .success((token, tokenLifetime))
    }

    /// An OAuth2 error answer (RFC 6749 §5.2).
    struct TokenError: Error {
        var code: String
        var description: String
    }

    /// A key file's text; a sink configuration error when it cannot be read.
    private static func read(_ file: String, what: String) throws -> String {
        do {
            return try CredentialFile.text(file, what: what)
        } catch {
            throw SinkError.configuration(error.message)
        }
    }
}

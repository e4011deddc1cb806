import BadgeSupport
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
    /// The apps the sink plays.
    private let apps: [SinkApp]
    /// Issued access tokens and what is known of each.
    private let issued = Mutex<[String: Grant]>([:])

    init(configuration: SinkConfiguration) throws {
        var keys: [String: APNsTokenVerifier.Key] = [:]
        for (keyID, file) in configuration.apnsKeyFiles {
            keys[keyID] = try Self.key(
                try Self.read(file, what: "APNs public key for \(keyID)"),
                teamID: configuration.apnsKeyTeams[keyID] ?? configuration.apnsTeamID, keyID: keyID)
        }
        var apps = configuration.apps
        var accounts: [String: String] = [:]
        for index in apps.indices {
            // An app's own keys: one key id, one key and team, however many apps share it.
            var seen: [String: SinkApp.APNsKey] = [:]
            for key in apps[index].apnsKeys {
                if let other = seen[key.keyID]
                    ?? apps[..<index].lazy.flatMap(\.apnsKeys).first(where: {
                        $0.keyID == key.keyID
                    }), other != key
                {
                    throw SinkError.configuration("the APNs key id \(key.keyID) is given twice with different keys")
                }
                seen[key.keyID] = key
                keys[key.keyID] = try Self.key(key.publicKeyPEM, teamID: key.teamID, keyID: key.keyID)
                apps[index].apnsKeyIDs.insert(key.keyID)
            }
            for (account, pem) in apps[index].fcmAccountKeys {
                if let other = accounts[account], other != pem {
                    throw SinkError.configuration("the service account \(account) is given twice with different keys")
                }
                accounts[account] = pem
                apps[index].fcmServiceAccounts.insert(account)
            }
        }
        apns = keys.isEmpty ? nil : APNsTokenVerifier(keys: keys)
        let anyIssuer = try configuration.fcmPublicKeyFile.map { try Self.read($0, what: "FCM public key") }
        if anyIssuer == nil, accounts.isEmpty {
            assertions = nil
        } else {
            do {
                assertions = try AssertionVerifier(anyIssuerPEM: anyIssuer, accounts: accounts)
            } catch {
                throw SinkError.configuration("an FCM public key: \(error)")
            }
        }
        tokenLifetime = max(1, configuration.fcmTokenLifetime)
        self.apps = apps
    }

    /// A verifier's key; a sink configuration error when the PEM is not a P-256 public key.
    private static func key(_ pem: String, teamID: String?, keyID: String) throws -> APNsTokenVerifier.Key {
        do {
            return try APNsTokenVerifier.Key(publicKeyPEM: pem, teamID: teamID)
        } catch {
            throw SinkError.configuration("the APNs public key for \(keyID): \(error)")
        }
    }

    /// The outcome of checking one push's credentials.
    struct Check: Sendable {
        /// The status and reason to answer with instead of looking further; nil when the push may go on.
        var refusal: (status: Int, reason: String)?
        /// What is recorded of the `authorization` header; nil when the push had none.
        var recorded: RecordedAuthorization?
    }

    /// Checks the `authorization` header of an APNs push: refused with 403 and Apple's reason when keys are
    /// configured and its provider token is not valid for them. What is recorded is the token's `kid`, `iss` and
    /// `iat` and whether it verified; without keys they are read unverified.
    func checkAPNs(authorization: String?, topic: String? = nil, now: Date = Date()) -> Check {
        var check = Check(refusal: nil, recorded: authorization.map(RecordedAuthorization.unverified))
        let reading: APNsTokenVerifier.Reading?
        if let apns {
            let verdict: APNsTokenVerifier.Verdict
            (verdict, reading) = apns.check(authorization: authorization, now: Int64(now.timeIntervalSince1970))
            switch verdict {
            case .valid: check.recorded?.verified = true
            case .refused(let reason): check.refusal = (403, reason)
            }
        } else {
            reading = authorization.flatMap(RecordedAuthorization.bearerCredential(of:)).flatMap {
                APNsTokenVerifier.read($0)
            }
        }
        if let reading {
            check.recorded?.keyID = reading.keyID
            check.recorded?.issuer = reading.issuer
            check.recorded?.issuedAt = RecordedAuthorization.date(seconds: reading.issuedAt)
        }
        // The app whose key signed the token; its key pushes only to its own topics. A key that several apps of
        // one team share pushes to any of theirs, and the push is recorded as the app owning the topic.
        if let keyID = reading?.keyID {
            let owners = apps.filter { $0.apnsKeyIDs.contains(keyID) }
            let owner = owners.first { $0.apnsTopics.contains(topic ?? "") }
            if let app = owner ?? owners.first {
                check.recorded?.app = app.name
                if check.refusal == nil, owner == nil, !app.apnsTopics.isEmpty {
                    check.refusal = (400, "TopicDisallowed")
                    check.recorded?.verified = false
                }
            }
        }
        return check
    }

    /// Checks the `authorization` header of an FCM push: refused with 401 `UNAUTHENTICATED` when service accounts'
    /// keys are configured and it does not carry an access token the sink issued that is still valid (the sink
    /// issues none to an account it does not know), and 403 `PERMISSION_DENIED` when the token's account is not
    /// one of the project's app's. What
    /// is recorded of a token the sink issued is the service account and key id of its assertion and when it was
    /// issued, and whether it is still valid; nothing is read of any other token.
    func checkFCM(authorization: String?, project: String? = nil, now: Date = Date()) -> Check {
        var recorded = authorization.map(RecordedAuthorization.unverified)
        let app = project.flatMap { project in apps.first { $0.fcmProjects.contains(project) } }
        recorded?.app = app?.name
        guard assertions != nil else { return Check(refusal: nil, recorded: recorded) }
        guard let token = authorization.flatMap(RecordedAuthorization.bearerCredential(of:)),
            let grant = issued.withLock({ $0[String(token)] })
        else { return Check(refusal: (401, "UNAUTHENTICATED"), recorded: recorded) }
        let valid = now < grant.expiry
        recorded?.verified = valid
        recorded?.keyID = grant.keyID
        recorded?.issuer = grant.issuer
        recorded?.issuedAt = grant.issuedAt
        guard valid else { return Check(refusal: (401, "UNAUTHENTICATED"), recorded: recorded) }
        // Google refuses a service account that is not the project's: another app's project, or a project of no
        // app the sink plays when the account is one of its apps'.
        let foreign =
            if let app {
                !app.fcmServiceAccounts.isEmpty && !app.fcmServiceAccounts.contains(grant.issuer)
            } else {
                apps.contains { $0.fcmServiceAccounts.contains(grant.issuer) }
            }
        if foreign {
            recorded?.verified = false
            return Check(refusal: (403, "PERMISSION_DENIED"), recorded: recorded)
        }
        return Check(refusal: nil, recorded: recorded)
    }

    /// What the sink knows of an access token it issued.
    private struct Grant: Sendable {
        var expiry: Date
        var issuedAt: Date
        /// The assertion's `iss`: the service account.
        var issuer: String
        /// The assertion's `kid`, when it had one.
        var keyID: String?
    }

    /// The fields of an `application/x-www-form-urlencoded` body: `name=value` pairs split on `&`, `+` read as a
    /// space and percent-escapes decoded. Any bytes make some fields: an empty pair, a pair without `=` (a name
    /// with an empty value), an empty name, or an escape that does not decode (left as written) never fail; the
    /// last of a repeated name wins.
    static func formFields(_ form: String) -> [String: String] {
        func decoded(_ part: Substring) -> String {
            let spaced = part.replacingOccurrences(of: "+", with: " ")
            return spaced.removingPercentEncoding ?? spaced
        }
        var fields: [String: String] = [:]
        for pair in form.split(separator: "&", omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: "=") else {
                fields[decoded(pair)] = ""
                continue
            }
            fields[decoded(pair[..<equals])] = decoded(pair[pair.index(after: equals)...])
        }
        return fields
    }

    /// An access token for the assertion in a `POST /token` form body, or the OAuth2 error to answer.
    func issueToken(form: String, now: Date = Date()) -> Result<(token: String, lifetime: Int), TokenError> {
        guard let assertions else {
            return .failure(
                TokenError(
                    code: .invalidClient,
                    message: "the sink has no --fcm-public-key and no app with a service account"))
        }
        let fields = Self.formFields(form)
        guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return .failure(TokenError(code: .unsupportedGrantType, message: "grant_type must be jwt-bearer"))
        }
        guard let assertion = fields["assertion"], !assertion.isEmpty else {
            return .failure(TokenError(code: .invalidRequest, message: "no assertion"))
        }
        let claims: ServiceAccount.Claims
        do {
            claims = try assertions.verify(assertion, audience: nil, now: Int64(now.timeIntervalSince1970))
        } catch {
            return .failure(TokenError(code: .invalidGrant, message: "\(error)"))
        }
        guard claims.aud.hasSuffix("/token") else {
            return .failure(TokenError(code: .invalidGrant, message: "aud must be this endpoint's URL"))
        }
        // The assertion verified, so its header reads.
        let jwt = try? CompactJWT(assertion)
        let header = jwt.flatMap { try? $0.decode(CompactJWT.Header.self, from: $0.header) }
        let token = "sink-" + UUID().uuidString.lowercased()
        let expiry = now.addingTimeInterval(TimeInterval(tokenLifetime))
        let grant = Grant(expiry: expiry, issuedAt: now, issuer: claims.iss, keyID: header?.kid)
        issued.withLock { issued in
            issued = issued.filter { $0.value.expiry > now }
            issued[token] = grant
        }
        return .success((token, tokenLifetime))
    }

    /// An OAuth2 error answer (RFC 6749 §5.2): ``code`` is its `error`, ``message`` its `error_description`.
    struct TokenError: Error, Sendable, CustomStringConvertible {
        /// An OAuth2 error code (RFC 6749 §5.2); its ``rawValue`` is the answer's `error`.
        typealias Code = ErrorCode<SinkCredentials.TokenError>

        var code: Code
        var message: String

        /// `code: message`.
        var description: String { "\(code): \(message)" }
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

extension ErrorCode<SinkCredentials.TokenError> {
    /// The sink cannot verify assertions at all (answered 401).
    static var invalidClient: Self { Self("invalid_client") }
    /// The grant type is not the JWT bearer grant.
    static var unsupportedGrantType: Self { Self("unsupported_grant_type") }
    /// The form has no assertion.
    static var invalidRequest: Self { Self("invalid_request") }
    /// The assertion does not verify or is not for this endpoint.
    static var invalidGrant: Self { Self("invalid_grant") }
}

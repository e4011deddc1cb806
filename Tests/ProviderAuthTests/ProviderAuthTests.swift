import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import ProviderAuth

@Suite("Provider credentials")
struct ProviderAuthTests {
    @Test func base64URLRoundTripsAndRefusesOtherAlphabets() throws {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == Data(bytes))
        }
        #expect(Base64URL.decode("ab+c") == nil)
        #expect(Base64URL.decode("ab/c") == nil)
        #expect(Base64URL.decode("a b") == nil)
        #expect(Base64URL.decode("_-8") == Data([0xFF, 0xEF, 0xFC].prefix(2)))
    }

    @Test func apnsTokensVerifyWithTheMatchingKeyOnly() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = try APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
        let now: Int64 = 1_800_000_000
        let token = try key.token(issuedAt: now)
        let jwt = try CompactJWT(token)
        let header = try jwt.decode(CompactJWT.Header.self, from: jwt.header)
        #expect(header == CompactJWT.Header(alg: "ES256", kid: "KEY1234567"))
        #expect(String(decoding: jwt.claims, as: UTF8.self) == #"{"iat":1800000000,"iss":"TEAM123456"}"#)

        let publicPEM = privateKey.publicKey.pemRepresentation
        let verifier = APNsTokenVerifier(keys: [
            "KEY1234567": try .init(publicKeyPEM: publicPEM, teamID: "TEAM123456")
        ])
        #expect(verifier.verify(authorization: "bearer \(token)", now: now + 10) == .valid)
        #expect(verifier.verify(authorization: "Bearer \(token)", now: now + 3600) == .valid)
        #expect(
            verifier.verify(authorization: "bearer \(token)", now: now + 3601)
                == .refused(reason: "ExpiredProviderToken"))
        #expect(verifier.verify(authorization: nil, now: now) == .refused(reason: "MissingProviderToken"))
        #expect(verifier.verify(authorization: "basic abc", now: now) == .refused(reason: "MissingProviderToken"))
        #expect(verifier.verify(authorization: "bearer x.y.z", now: now) == .refused(reason: "InvalidProviderToken"))
        // Issued an hour in the future.
        #expect(
            verifier.verify(authorization: "bearer \(token)", now: now - 3600)
                == .refused(reason: "InvalidProviderToken"))

        // Another key with the same id, another team, or an unknown key id.
        let other = try APNsSigningKey(
            pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
        #expect(
            verifier.verify(authorization: "bearer \(try other.token(issuedAt: now))", now: now)
                == .refused(reason: "InvalidProviderToken"))
        let otherTeam = try APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "OTHERTEAM0")
        #expect(
            verifier.verify(authorization: "bearer \(try otherTeam.token(issuedAt: now))", now: now)
                == .refused(reason: "InvalidProviderToken"))
        let otherID = try APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY0000000", teamID: "TEAM123456")
        #expect(
            verifier.verify(authorization: "bearer \(try otherID.token(issuedAt: now))", now: now)
                == .refused(reason: "InvalidProviderToken"))
        // A tampered claim.
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Data(#"{"iat":1800000000,"iss":"TEAM123457"}"#.utf8))
        #expect(
            verifier.verify(authorization: "bearer \(parts.joined(separator: "."))", now: now)
                == .refused(reason: "InvalidProviderToken"))
    }

    @Test func aCheckReportsWhatTheTokenSaidOfItselfValidOrNot() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = try APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
        let now: Int64 = 1_800_000_000
        let token = try key.token(issuedAt: now)
        let verifier = APNsTokenVerifier(keys: [
            "KEY1234567": try .init(publicKeyPEM: privateKey.publicKey.pemRepresentation, teamID: "TEAM123456")
        ])
        let said = APNsTokenVerifier.Reading(keyID: "KEY1234567", issuer: "TEAM123456", issuedAt: now)
        let valid = verifier.check(authorization: "bearer \(token)", now: now)
        #expect(valid.verdict == .valid && valid.reading == said)
        let expired = verifier.check(authorization: "bearer \(token)", now: now + 3601)
        #expect(expired.verdict == .refused(reason: "ExpiredProviderToken") && expired.reading == said)
        let stranger = try APNsSigningKey(
            pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY0000000", teamID: "TEAM999999")
        let unknown = verifier.check(authorization: "bearer \(try stranger.token(issuedAt: now))", now: now)
        #expect(unknown.verdict == .refused(reason: "InvalidProviderToken"))
        #expect(unknown.reading == APNsTokenVerifier.Reading(keyID: "KEY0000000", issuer: "TEAM999999", issuedAt: now))
        #expect(verifier.check(authorization: "bearer x.y.z", now: now).reading == nil)
        #expect(verifier.check(authorization: nil, now: now).reading == nil)
        #expect(APNsTokenVerifier.read(token) == said)
        #expect(APNsTokenVerifier.read("not-a-token") == nil)
    }

    @Test func aKeyThatIsNotP256IsRefusedWithAClearError() throws {
        #expect(throws: AuthError.self) {
            try APNsSigningKey(
                pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", keyID: "K", teamID: "T")
        }
        #expect(throws: AuthError.self) {
            try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "", teamID: "T")
        }
        #expect(throws: AuthError.self) { try APNsSigningKey(file: "/nonexistent.p8", keyID: "K", teamID: "T") }
    }

    @Test func anErrorReadsAsItsCodeThenItsMessage() {
        let error = #expect(throws: AuthError.self) { try CredentialFile.text("/nonexistent.pem", what: "key") }
        #expect(error?.code == .unreadableFile)
        #expect(error?.description == "unreadable_file: cannot read the key /nonexistent.pem")
    }

    @Test func serviceAccountAssertionsVerifyAgainstTheAccountsPublicKey() throws {
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let json = try JSONSerialization.data(withJSONObject: [
            "type": "service_account", "project_id": "demo-project", "private_key": privateKey.pemRepresentation,
            "client_email": "pusher@demo-project.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.example/token",
        ])
        let account = try ServiceAccount(json: json)
        #expect(account.projectID == "demo-project")
        let now: Int64 = 1_800_000_000
        let assertion = try account.assertion(issuedAt: now)
        let verifier = try AssertionVerifier(publicKeyPEM: privateKey.publicKey.pemRepresentation)
        let claims = try verifier.verify(assertion, audience: "https://oauth2.example/token", now: now + 5)
        #expect(claims.iss == "pusher@demo-project.iam.gserviceaccount.com")
        #expect(claims.scope == ServiceAccount.messagingScope)
        #expect(claims.exp == now + 3600)
        #expect(throws: AuthError(.expired, "the assertion has expired")) {
            try verifier.verify(assertion, audience: nil, now: now + 3600)
        }
        #expect(throws: AuthError.self) {
            try verifier.verify(assertion, audience: "https://elsewhere.example/token", now: now)
        }
        let stranger = try AssertionVerifier(
            publicKeyPEM: try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey.pemRepresentation)
        #expect(throws: AuthError(.badSignature, "the assertion's signature does not verify")) {
            try stranger.verify(assertion, audience: nil, now: now)
        }
    }

    @Test func severalAccountsVerifyEachWithItsOwnKeyAndAnUnknownAccountIsRefused() throws {
        func account(_ name: String) throws -> ServiceAccount {
            try ServiceAccount(
                json: try JSONSerialization.data(withJSONObject: [
                    "type": "service_account", "project_id": name,
                    "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation,
                    "client_email": "pusher@\(name).iam.gserviceaccount.com",
                    "token_uri": "https://oauth2.example/token",
                ]))
        }
        let (amen, psalms, stranger) = (try account("amen"), try account("psalms"), try account("hymns"))
        // The public keys are derived from the service-account files themselves.
        let verifier = try AssertionVerifier(
            anyIssuerPEM: nil,
            accounts: [amen.clientEmail: amen.publicKeyPEM, psalms.clientEmail: psalms.publicKeyPEM])
        let now: Int64 = 1_800_000_000
        #expect(try verifier.verify(try amen.assertion(issuedAt: now), audience: nil, now: now).iss == amen.clientEmail)
        #expect(
            try verifier.verify(try psalms.assertion(issuedAt: now), audience: nil, now: now).iss == psalms.clientEmail)
        #expect(throws: AuthError(.wrongClaims, "no service account \(stranger.clientEmail) is known")) {
            try verifier.verify(try stranger.assertion(issuedAt: now), audience: nil, now: now)
        }
        // An assertion naming one account but signed by another's key does not verify.
        let amenAssertion = try amen.assertion(issuedAt: now)
        let psalmsAssertion = try psalms.assertion(issuedAt: now)
        let forged = try CompactJWT(psalmsAssertion)
        let impostor =
            amenAssertion.split(separator: ".").prefix(2).joined(separator: ".") + "."
            + Base64URL.encode(forged.signature)
        #expect(throws: AuthError(.badSignature, "the assertion's signature does not verify")) {
            try verifier.verify(impostor, audience: nil, now: now)
        }
        // An APNs key's public half, derived from its .p8, verifies its tokens.
        let apns = try APNsSigningKey(
            pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY0000001", teamID: "TEAM000001")
        let tokens = APNsTokenVerifier(
            keys: ["KEY0000001": try APNsTokenVerifier.Key(publicKeyPEM: apns.publicKeyPEM, teamID: "TEAM000001")])
        #expect(tokens.verify(authorization: "bearer " + (try apns.token(issuedAt: now)), now: now) == .valid)
    }

    @Test func serviceAccountFilesMissingAFieldSayWhich() throws {
        func load(_ object: [String: String]) throws -> ServiceAccount {
            try ServiceAccount(json: try JSONSerialization.data(withJSONObject: object))
        }
        let complete = [
            "type": "service_account", "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation,
            "client_email": "a@b.c", "token_uri": "https://t.example/token",
        ]
        #expect(try load(complete).projectID == nil)
        for field in ["private_key", "client_email", "token_uri"] {
            var partial = complete
            partial[field] = nil
            #expect(
                throws: AuthError(
                    .badCredentials, "the FCM credentials file has no \(field)" + (field == "token_uri" ? " URL" : ""))
            ) {
                try load(partial)
            }
        }
        var wrongType = complete
        wrongType["type"] = "authorized_user"
        #expect(throws: AuthError.self) { try load(wrongType) }
        #expect(throws: AuthError.self) { try ServiceAccount(json: Data("not json".utf8)) }
    }
}
